#include "model/executor.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/lightonocr/vision_encoder.h"

namespace locr::model {

namespace {

// Host memory for host_embeds() (tests and host callers that hold a Tensor).
kernels::Ops& host_ops() {
  static const std::unique_ptr<kernels::Ops> ops = kernels::make_ops("ref");
  return *ops;
}

class ModelVisionJob : public VisionJob {
 public:
  ModelVisionJob(VisionState s, int layers) : s(std::move(s)), layers(layers) {}
  int64_t n_patches() const override { return s.n_patches(); }
  bool done() const override { return s.next_layer >= layers; }
  VisionState s;
  int layers;
};

}  // namespace

Tensor TensorEmbeds::to_host() const {
  if (ops_.host_memory() || t_.empty_tensor()) return t_;
  Tensor h = Tensor::empty(DType::kF32, t_.shape());
  ops_.to_host(h.raw(), t_.raw(), h.nbytes());
  return h;
}

namespace vision {

std::unique_ptr<VisionJob> begin(const LightOnOcr& m, const std::vector<ProcessedImage>& images, Taps* taps) {
  std::vector<ImageGrid> grids;
  const std::vector<float> patches = m.vision_patches(images, &grids);
  return std::make_unique<ModelVisionJob>(m.encoder().begin(patches.data(), grids, taps), m.encoder().num_layers());
}

void run(const LightOnOcr& m, VisionJob& job, int n_layers, Taps* taps) {
  m.encoder().run_layers(static_cast<ModelVisionJob&>(job).s, n_layers, taps);
}

std::shared_ptr<ImageEmbeds> finish(const LightOnOcr& m, VisionJob& job, Tensor* vision_hidden, Taps* taps) {
  auto& j = static_cast<ModelVisionJob&>(job);
  LOCR_CHECK(j.done(), "vision_finish before the last encoder layer");
  if (vision_hidden) *vision_hidden = TensorEmbeds(j.s.x, m.ops()).to_host();
  auto out = std::make_shared<TensorEmbeds>(m.projector().forward(j.s.x, j.s.grids, taps), m.ops());
  j.s = VisionState();  // free the encoder's buffers now rather than with the job
  return out;
}

}  // namespace vision

void write_image_rows(const StepSeq& s, float* x, int64_t hidden) {
  if (!s.images || !s.image_rows) return;
  const auto* te = dynamic_cast<const TensorEmbeds*>(s.images);
  LOCR_CHECK(te && te->ops().host_memory(), "image embeddings of another executor");
  const Tensor& emb = te->tensor();
  for (int64_t i = 0; i < s.n; ++i)
    if (s.image_rows[i] >= 0) {
      LOCR_CHECK(s.image_rows[i] < emb.dim(0), "image row out of range");
      std::memcpy(x + i * hidden, emb.data<float>() + s.image_rows[i] * hidden, hidden * sizeof(float));
    }
}

void want_logits_rows(const StepSeq& s, int k, int64_t row0, std::vector<int64_t>* rows, StepOutput* out) {
  if (!s.want_logits) return;
  LOCR_CHECK(s.n_logits >= 1 && s.n_logits <= s.n, "n_logits ", s.n_logits, " of a ", s.n, "-row step");
  for (int64_t i = s.n - s.n_logits; i < s.n; ++i) {
    rows->push_back(row0 + i);
    out->logits_seq.push_back(k);
  }
}

Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  const int64_t H = x.dim(1), S = static_cast<int64_t>(rows.size());
  Tensor h = Tensor::empty(DType::kF32, {S, H});
  for (int64_t i = 0; i < S; ++i)
    std::memcpy(h.data<float>() + i * H, x.data<float>() + rows[i] * H, H * sizeof(float));
  return h;
}

int64_t kv_blocks_for(int64_t bytes, int64_t bytes_per_block, int64_t max_blocks) {
  int64_t n = std::max<int64_t>(1, bytes / std::max<int64_t>(1, bytes_per_block));
  if (max_blocks > 0) n = std::min(n, max_blocks);
  return n;
}

std::shared_ptr<ImageEmbeds> CpuExecutor::host_embeds(Tensor t) {
  return std::make_shared<TensorEmbeds>(std::move(t), host_ops());
}

CpuExecutor::CpuExecutor(const LightOnOcr& model, const ExecutorOptions& opts)
    : model_(model),
      kv_(model.config().text,
          kv_blocks_for(opts.kv_cache_bytes,
                        KvPool::bytes_per_block(model.config().text, opts.block_size, model.decoder().kv_dtype()),
                        opts.max_kv_blocks),
          opts.block_size, model.decoder().kv_dtype()),
      ws_(model.ops()) {}

int64_t CpuExecutor::kv_bytes_per_block() const {
  return KvPool::bytes_per_block(model_.config().text, kv_.block_size(), kv_.dtype());
}

int CpuExecutor::vision_layers() const { return model_.encoder().num_layers(); }

bool CpuExecutor::concurrent_vision() const { return model_.ops().host_memory() && taps_ == nullptr; }

std::unique_ptr<VisionJob> CpuExecutor::vision_begin(const std::vector<ProcessedImage>& images) {
  return vision::begin(model_, images, taps_);
}

void CpuExecutor::vision_run(VisionJob& job, int n_layers) { vision::run(model_, job, n_layers, taps_); }

std::shared_ptr<ImageEmbeds> CpuExecutor::vision_finish(VisionJob& job, Tensor* vision_hidden) {
  return vision::finish(model_, job, vision_hidden, taps_);
}

void CpuExecutor::step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) {
  const int64_t H = model_.config().text.hidden_size, V = model_.config().text.vocab_size;
  int64_t R = 0;
  for (const auto& s : seqs) R += s.n;
  Tensor x = Tensor::empty(DType::kF32, {R, H});
  std::vector<SeqStep> steps;
  std::vector<int64_t> sample_rows;
  out->logits_seq.clear();
  out->tokens.assign(seqs.size(), -1);
  out->logprobs.assign(seqs.size(), 0.0f);
  int64_t row = 0;
  for (size_t k = 0; k < seqs.size(); ++k) {
    const StepSeq& s = seqs[k];
    float* xr = x.data<float>() + row * H;
    model_.decoder().embed(s.ids, s.n, xr);
    write_image_rows(s, xr, H);
    steps.push_back({s.pos0, s.n, s.block_table, s.prompt});
    want_logits_rows(s, static_cast<int>(k), row, &sample_rows, out);
    row += s.n;
  }
  std::function<void(int, const float*)> on_hidden;
  if (hidden) on_hidden = [&](int i, const float* h) { hidden(i, h, R); };
  const HostStepBatch batch(model_.config().text, steps, kv_.block_size());
  model_.decoder().forward(x.data<float>(), batch.batch(), kv_, ws_, on_hidden, taps_);
  out->logits = Tensor();
  if (sample_rows.empty()) return;
  const Tensor h = gather_rows(x, sample_rows);
  out->logits = Tensor::empty(DType::kF32, {h.dim(0), V});
  model_.decoder().logits(h.data<float>(), h.dim(0), out->logits.data<float>());
}

}  // namespace locr::model
