#include "model/lightonocr/executor.h"

#include <functional>

#include "core/error.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/lightonocr/step_batch.h"
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
  std::vector<int64_t> sample_rows, greedy_rows;
  std::vector<size_t> greedy_seqs;
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
    if (greedy_on_executor(s)) {
      greedy_rows.push_back(row + s.n - 1);
      greedy_seqs.push_back(k);
    } else {
      want_logits_rows(s, static_cast<int>(k), row, &sample_rows, out);
    }
    row += s.n;
  }
  std::function<void(int, const float*)> on_hidden;
  if (hidden) on_hidden = [&](int i, const float* h) { hidden(i, h, R); };
  const HostStepBatch batch(model_.config().text, steps, kv_.block_size());
  model_.decoder().forward(x.data<float>(), batch.batch(), kv_, ws_, on_hidden, taps_);
  out->logits = Tensor();
  if (!greedy_rows.empty()) {
    const Tensor h = gather_rows(x, greedy_rows);
    std::vector<int32_t> tokens(greedy_rows.size());
    model_.decoder().greedy(h.data<float>(), h.dim(0), tokens.data());
    for (size_t i = 0; i < tokens.size(); ++i) out->tokens[greedy_seqs[i]] = tokens[i];
  }
  if (sample_rows.empty()) return;
  const Tensor h = gather_rows(x, sample_rows);
  out->logits = Tensor::empty(DType::kF32, {h.dim(0), V});
  model_.decoder().logits(h.data<float>(), h.dim(0), out->logits.data<float>());
}

}  // namespace locr::model
