#include "model/executor.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "model/lighton_ocr.h"

namespace locr::model {

namespace {

class HostEmbeds : public ImageEmbeds {
 public:
  explicit HostEmbeds(Tensor t) : t_(std::move(t)) {}
  int64_t rows() const override { return t_.empty_tensor() ? 0 : t_.dim(0); }
  Tensor to_host() const override { return t_; }
  const Tensor& tensor() const { return t_; }

 private:
  Tensor t_;
};

class CpuVisionJob : public VisionJob {
 public:
  CpuVisionJob(VisionState s, int layers) : s(std::move(s)), layers(layers) {}
  int64_t n_patches() const override { return s.n_patches(); }
  bool done() const override { return s.next_layer >= layers; }
  VisionState s;
  int layers;
};

}  // namespace

int64_t kv_blocks_for(int64_t bytes, int64_t bytes_per_block, int64_t max_blocks) {
  int64_t n = std::max<int64_t>(1, bytes / std::max<int64_t>(1, bytes_per_block));
  if (max_blocks > 0) n = std::min(n, max_blocks);
  return n;
}

std::shared_ptr<ImageEmbeds> CpuExecutor::host_embeds(Tensor t) { return std::make_shared<HostEmbeds>(std::move(t)); }

CpuExecutor::CpuExecutor(const LightOnOcr& model, const ExecutorOptions& opts)
    : model_(model),
      kv_(model.config().text,
          kv_blocks_for(opts.kv_cache_bytes,
                        KvPool::bytes_per_block(model.config().text, opts.block_size, model.decoder().kv_dtype()),
                        opts.max_kv_blocks),
          opts.block_size, model.decoder().kv_dtype()) {}

int64_t CpuExecutor::kv_bytes_per_block() const {
  return KvPool::bytes_per_block(model_.config().text, kv_.block_size(), kv_.dtype());
}

int CpuExecutor::vision_layers() const { return model_.encoder().num_layers(); }

std::unique_ptr<VisionJob> CpuExecutor::vision_begin(const std::vector<ProcessedImage>& images) {
  std::vector<ImageGrid> grids;
  const std::vector<float> patches = model_.vision_patches(images, &grids);
  return std::make_unique<CpuVisionJob>(model_.encoder().begin(patches.data(), grids, taps_),
                                        model_.encoder().num_layers());
}

void CpuExecutor::vision_run(VisionJob& job, int n_layers) {
  model_.encoder().run_layers(static_cast<CpuVisionJob&>(job).s, n_layers, taps_);
}

std::shared_ptr<ImageEmbeds> CpuExecutor::vision_finish(VisionJob& job, Tensor* vision_hidden) {
  auto& j = static_cast<CpuVisionJob&>(job);
  LOCR_CHECK(j.done(), "vision_finish before the last encoder layer");
  if (vision_hidden) *vision_hidden = j.s.x;
  return host_embeds(model_.projector().forward(j.s.x, j.s.grids, taps_));
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
    if (s.images && s.image_rows) {
      const Tensor& emb = static_cast<const HostEmbeds*>(s.images)->tensor();
      for (int64_t i = 0; i < s.n; ++i)
        if (s.image_rows[i] >= 0) {
          LOCR_CHECK(s.image_rows[i] < emb.dim(0), "image row out of range");
          std::memcpy(xr + i * H, emb.data<float>() + s.image_rows[i] * H, H * sizeof(float));
        }
    }
    steps.push_back({s.pos0, s.n, s.block_table});
    if (s.want_logits) {
      sample_rows.push_back(row + s.n - 1);
      out->logits_seq.push_back(static_cast<int>(k));
    }
    row += s.n;
  }
  std::function<void(int, const float*)> on_hidden;
  if (hidden) on_hidden = [&](int i, const float* h) { hidden(i, h, R); };
  model_.decoder().forward(x.data<float>(), steps, kv_, on_hidden, taps_);
  out->logits = Tensor();
  if (sample_rows.empty()) return;
  const int64_t S = static_cast<int64_t>(sample_rows.size());
  Tensor h = Tensor::empty(DType::kF32, {S, H});
  for (int64_t i = 0; i < S; ++i)
    std::memcpy(h.data<float>() + i * H, x.data<float>() + sample_rows[i] * H, H * sizeof(float));
  out->logits = Tensor::empty(DType::kF32, {S, V});
  model_.decoder().logits(h.data<float>(), S, out->logits.data<float>());
}

}  // namespace locr::model
