#include "model/qwen35/cuda/cuda_executor.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_ops.h"
#include "model/memory_sizing.h"
#include "model/qwen35/decoder.h"
#include "model/qwen35/executor.h"
#include "model/workspace.h"

namespace locr::model::qwen35::cuda {

namespace {

namespace kc = locr::kernels::cuda;
using kc::DeviceBuffer;

struct Job : VisionJob {
  std::unique_ptr<VisionState> state;
  int depth = 0;
  int64_t n_patches() const override { return state->n; }
  bool done() const override { return state->next_layer >= depth; }
};

// A device buffer that grows to the largest request and is then reused.
void ensure(DeviceBuffer& b, size_t bytes) {
  if (b.bytes() < bytes) b = DeviceBuffer(std::max(bytes, b.bytes() + b.bytes() / 2));
}

class CudaExecutor : public Executor {
 public:
  CudaExecutor(const Model& m, const ExecutorOptions& opts);
  ~CudaExecutor() override {
    try {
      ops_.synchronize();
    } catch (...) {
    }
  }

  const char* name() const override { return "cuda"; }
  int64_t kv_blocks() const override { return kv_->n_blocks(); }
  int block_size() const override { return kv_->block_size(); }
  int64_t kv_bytes_per_block() const override {
    return KvPool::bytes_per_block(kv_shape(m_.config().text), kv_->block_size(), kv_->dtype());
  }
  int64_t state_slots() const override { return states_->n_slots(); }
  bool supports_multi_row_logits() const override { return true; }
  void synchronize() override { ops_.synchronize(); }

  std::unique_ptr<VisionJob> vision_begin(const std::vector<ProcessedImage>& images) override {
    auto job = std::make_unique<Job>();
    const std::vector<float> patches = m_.vision_patches(images);  // host; begin() uploads them
    job->state = m_.vision().begin(patches.data(), Model::grids(images));
    job->depth = m_.vision().depth();
    return job;
  }
  void vision_run(VisionJob& j, int n_layers) override { m_.vision().run(*dynamic_cast<Job&>(j).state, n_layers); }
  std::shared_ptr<ImageEmbeds> vision_finish(VisionJob& j, Tensor* vision_hidden) override {
    // The merger's output stays in device memory; step() gathers its rows there.
    return std::make_shared<TensorEmbeds>(m_.vision().finish(*dynamic_cast<Job&>(j).state, vision_hidden), ops_);
  }
  int vision_layers() const override { return m_.vision().depth(); }

  void step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) override;

 private:
  // Host int32 values into device buffer `b` (grown as needed); the copy completes before return.
  const int32_t* upload(DeviceBuffer& b, const std::vector<int32_t>& v) {
    ensure(b, std::max<size_t>(1, v.size()) * sizeof(int32_t));
    if (!v.empty()) kc::copy_to_device(b.get(), v.data(), v.size() * sizeof(int32_t), stream_);
    kc::synchronize(stream_);  // `v` is pageable host memory
    return b.as<const int32_t>();
  }

  const Model& m_;
  kernels::Ops& ops_;
  kc::Stream stream_;
  int64_t H_, V_;
  std::unique_ptr<StatePool> states_;
  std::unique_ptr<KvPool> kv_;
  Workspace ws_;
  DeviceBuffer x_, img_, xs_, logits_, img_src_, img_dst_, sample_rows_;
};

CudaExecutor::CudaExecutor(const Model& m, const ExecutorOptions& opts)
    : m_(m), ops_(m.ops()), stream_(kc::ops_stream(m.ops())), ws_(m.ops()) {
  const TextConfig& tc = m.config().text;
  H_ = tc.hidden_size, V_ = tc.vocab_size;
  if (opts.block_size < 1) fail(ErrorKind::kInvalidArgument, "block size must be >= 1");
  const DType kv_dtype = m.decoder().kv_dtype();  // BF16 (auto), or F8_E4M3 (--kv-cache-dtype fp8)
  if (kv_dtype != DType::kBF16 && kv_dtype != DType::kF8E4M3)
    fail(ErrorKind::kUnsupported, "backend cuda: a KV cache of ", dtype_name(kv_dtype), " (bfloat16 or fp8)");
  // One recurrent-state slot per sequence that can run at once: fixed, so allocated first and
  // counted as in use when the KV pool is sized.
  states_ = std::make_unique<StatePool>(tc, std::max(1, opts.max_num_seqs), ops_);
  ops_.synchronize();

  const int64_t per_block = KvPool::bytes_per_block(kv_shape(tc), opts.block_size, kv_dtype);
  int64_t kv_bytes = opts.kv_cache_bytes;
  if (kv_bytes < 0) {
    size_t free_b = 0, total_b = 0;
    kc::mem_info(&free_b, &total_b);
    const int64_t used = static_cast<int64_t>(total_b) - static_cast<int64_t>(free_b);
    // The model's activation estimate (a 2048 px page through the tower, the step's rows) plus room
    // for cuBLASLt and the backend's BF16 scratch.
    const int64_t activations = m.activation_bytes(opts.max_num_batched_tokens, opts.max_num_seqs) + (512LL << 20);
    kv_bytes = kv_bytes_for_utilization(opts.gpu_memory_utilization, static_cast<int64_t>(total_b), used, activations,
                                        "device memory");
    LOCR_INFO("cuda: ", kc::device_name(), ": ", total_b >> 20, " MiB, ", used >> 20, " MiB in use (weights and ",
              states_->n_slots(), " recurrent-state slots of ", StatePool::bytes_per_slot(tc) >> 10,
              " KiB); utilization ", opts.gpu_memory_utilization, " leaves ", kv_bytes >> 20,
              " MiB for the KV cache after ", activations >> 20, " MiB for activations");
    if (kv_bytes < per_block)
      fail(ErrorKind::kLimit, "--gpu-memory-utilization ", opts.gpu_memory_utilization,
           " leaves less than one KV block of device memory; raise it or give --kv-cache-memory");
  }
  const int64_t n_blocks = kv_blocks_for(kv_bytes, per_block, opts.max_kv_blocks);
  kv_ = std::make_unique<KvPool>(make_kv_pool(tc, n_blocks, opts.block_size, kv_dtype, &ops_));
  ops_.synchronize();
  LOCR_INFO("cuda: KV pool ", n_blocks, " blocks of ", opts.block_size, " tokens over ", tc.n_full_layers(),
            " full-attention layers (", (n_blocks * per_block) >> 20, " MiB ",
            kv_dtype == DType::kF8E4M3 ? "FP8 E4M3 with scales" : "BF16", ")");
}

void CudaExecutor::step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) {
  out->logits = Tensor();
  out->logits_seq.clear();
  out->tokens.assign(seqs.size(), -1);
  out->logprobs.assign(seqs.size(), 0.0f);
  if (seqs.empty()) return;
  const int bs = kv_->block_size();

  // Host side of the step: ids, the decoder's sequences with their three RoPE rows, image rows
  // (per sequence: source rows of its embeddings, destination rows of the step), logits rows.
  int64_t R = 0;
  for (const auto& s : seqs) R += s.n;
  std::vector<int32_t> ids;
  ids.reserve(R);
  std::vector<Seq> steps;
  std::vector<std::vector<int64_t>> positions(seqs.size());
  std::vector<int64_t> sample_rows;
  struct ImageRun {
    const TensorEmbeds* emb;
    std::vector<int32_t> src, dst;
  };
  std::vector<ImageRun> images;
  int64_t row = 0;
  for (size_t k = 0; k < seqs.size(); ++k) {
    const StepSeq& s = seqs[k];
    LOCR_CHECK(s.n >= 1, "a step sequence needs at least one row");
    LOCR_CHECK(s.state_slot >= 0 && s.state_slot < states_->n_slots(), "state slot ", s.state_slot, " of ",
               states_->n_slots());
    LOCR_CHECK(s.table_len >= (s.pos0 + s.n + bs - 1) / bs, "block table of ", s.table_len, " blocks for ",
               s.pos0 + s.n, " positions");
    ids.insert(ids.end(), s.ids, s.ids + s.n);
    if (s.images && s.image_rows) {
      const auto* te = dynamic_cast<const TensorEmbeds*>(s.images);
      LOCR_CHECK(te && &te->ops() == &ops_, "image embeddings of another executor");
      ImageRun run{te, {}, {}};
      for (int64_t i = 0; i < s.n; ++i)
        if (s.image_rows[i] >= 0) {
          LOCR_CHECK(s.image_rows[i] < te->rows(), "image row ", s.image_rows[i], " of ", te->rows());
          run.src.push_back(static_cast<int32_t>(s.image_rows[i]));
          run.dst.push_back(static_cast<int32_t>(row + i));
        }
      if (!run.src.empty()) images.push_back(std::move(run));
    }
    steps.push_back(decoder_seq(s, &positions[k]));
    want_logits_rows(s, static_cast<int>(k), row, &sample_rows, out);
    row += s.n;
  }

  // The residual stream on the device: token embeddings, then each sequence's image rows over them.
  ensure(x_, static_cast<size_t>(R * H_) * sizeof(float));
  float* x = x_.as<float>();
  m_.decoder().embed(ids.data(), R, x);
  for (const ImageRun& run : images) {
    const int64_t n = static_cast<int64_t>(run.src.size());
    ensure(img_, static_cast<size_t>(n * H_) * sizeof(float));
    kc::gather_rows(run.emb->tensor().data<float>(), upload(img_src_, run.src), n, H_, img_.as<float>(), stream_);
    kc::scatter_rows(img_.as<const float>(), upload(img_dst_, run.dst), n, H_, x, stream_);
  }

  std::function<void(int, const float*)> on_hidden;
  if (hidden) on_hidden = [&](int i, const float* h) { hidden(i, h, R); };  // the decoder copies to the host
  m_.decoder().forward(x, steps, *kv_, *states_, ws_, on_hidden);

  if (!sample_rows.empty()) {
    const int64_t n = static_cast<int64_t>(sample_rows.size());
    const std::vector<int32_t> rows32(sample_rows.begin(), sample_rows.end());
    ensure(xs_, static_cast<size_t>(n * H_) * sizeof(float));
    ensure(logits_, static_cast<size_t>(n * V_) * sizeof(float));
    kc::gather_rows(x, upload(sample_rows_, rows32), n, H_, xs_.as<float>(), stream_);
    m_.decoder().logits(xs_.as<const float>(), n, logits_.as<float>());
    out->logits = Tensor::empty(DType::kF32, {n, V_});
    kc::copy_to_host(out->logits.raw(), logits_.get(), out->logits.nbytes(), stream_);
  }
  ops_.synchronize();
}

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const Model& m, const ExecutorOptions& opts) {
  std::string why;
  if (!kc::available(&why)) fail(ErrorKind::kUnsupported, "--backend cuda: ", why);
  LOCR_CHECK(std::string(m.ops().name()) == "cuda", "the CUDA executor needs a model loaded with backend cuda");
  return std::make_unique<CudaExecutor>(m, opts);
}

}  // namespace locr::model::qwen35::cuda
