#include "model/lightonocr/cuda/cuda_executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_ops.h"
#include "model/lightonocr/activation_estimate.h"
#include "model/lightonocr/executor.h"
#include "model/lightonocr/step_batch.h"
#include "model/memory_sizing.h"
#include "model/rope.h"
#include "model/workspace.h"

namespace locr::model::cuda {

namespace {

namespace kc = locr::kernels::cuda;
using kc::DeviceBuffer;

// Padded batch sizes of the decode graphs.
constexpr int kGraphBuckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

int graph_bucket(int n) {
  for (int b : kGraphBuckets)
    if (b >= n) return b;
  return -1;
}

// The model's forward passes (TextDecoder, VisionEncoder, Projector) run on the model's kernel
// backend (kernels/cuda/cuda_ops.h); this executor adds only what a device needs around them.
class CudaExecutor : public Executor {
 public:
  CudaExecutor(const LightOnOcr& m, const ExecutorOptions& opts);
  ~CudaExecutor() override;

  const char* name() const override { return "cuda"; }
  int64_t kv_blocks() const override { return n_blocks_; }
  int block_size() const override { return bs_; }
  int64_t kv_bytes_per_block() const override { return bytes_per_block_; }
  bool supports_device_sampling() const override { return true; }
  void synchronize() override { ops_.synchronize(); }

  std::unique_ptr<VisionJob> vision_begin(const std::vector<ProcessedImage>& images) override {
    return vision::begin(m_, images, taps_);
  }
  void vision_run(VisionJob& job, int n_layers) override { vision::run(m_, job, n_layers, taps_); }
  std::shared_ptr<ImageEmbeds> vision_finish(VisionJob& job, Tensor* vision_hidden) override {
    return vision::finish(m_, job, vision_hidden, taps_);
  }
  int vision_layers() const override { return m_.config().vision.num_hidden_layers; }

  void step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) override;
  bool set_taps(Taps* taps) override {
    taps_ = taps;
    return true;
  }

 private:
  // Step inputs, in one pinned host buffer and one device buffer with the same fixed layout (so
  // captured graphs read the next step's inputs from the same addresses). Offsets in 4-byte
  // words; cos/sin hold F32 bits.
  struct Layout {
    int64_t ids, slots, cu_q, seq_lens, tables, sample_rows, img_src, img_dst, cos, sin, total;
  };
  void allocate_step_buffers(int64_t rows, int seqs, int max_blocks);
  void ensure_step_capacity(int64_t rows, int seqs, int max_blocks);
  // The StepBatch over the staged inputs of `R` rows of `n_seqs` sequences.
  StepBatch staged_batch(int64_t R, int n_seqs, int max_q, int max_seq_len) const;
  // Embeddings (token rows, then image rows), the decoder, logits of the `n_logits` sample rows.
  void forward(const StepBatch& b, int64_t n_image_rows, int n_logits, const HiddenHook* hidden);

  const LightOnOcr& m_;
  kernels::Ops& ops_;
  kc::Stream stream_;
  ExecutorOptions opts_;
  int64_t H_, V_, hd_;
  int bs_;
  int64_t n_blocks_ = 0, bytes_per_block_ = 0;
  std::unique_ptr<KvPool> kv_;  // n_blocks_ + 1 blocks: the last is the scratch block of padding rows
  int32_t scratch_block() const { return static_cast<int32_t>(n_blocks_); }
  Workspace ws_;
  // Step buffers.
  int64_t cap_rows_ = 0;
  int cap_seqs_ = 0, cap_blocks_ = 0;
  Layout lay_{};
  int32_t* host_in_ = nullptr;  // pinned, lay_.total words
  DeviceBuffer dev_in_;
  DeviceBuffer x_, img_, xs_, logits_, params_, tokens_, logprobs_;
  int graph_seq_len_ = 0;  // max_seq_len given to decode steps (fixed so graphs cover any length)
  std::map<int, std::unique_ptr<kc::Graph>> graphs_;
  uint64_t graphs_generation_ = 0;  // memory_generation() the graphs were captured against
  uint64_t memory_generation() const { return ws_.generation() + ops_.scratch_generation(); }
  bool graphs_enabled_ = true;
  Taps* taps_ = nullptr;
};

CudaExecutor::CudaExecutor(const LightOnOcr& m, const ExecutorOptions& opts)
    : m_(m), ops_(m.ops()), stream_(kc::ops_stream(m.ops())), opts_(opts), ws_(m.ops()) {
  const TextConfig& tc = m.config().text;
  H_ = tc.hidden_size, V_ = tc.vocab_size, hd_ = tc.head_dim;
  bs_ = opts.block_size;
  std::string why;
  if (!supports(m.config(), &why)) fail(ErrorKind::kUnsupported, why);
  if (tc.num_key_value_heads <= 0 || tc.num_attention_heads % tc.num_key_value_heads != 0)
    fail(ErrorKind::kInvalidArgument, "bad GQA head counts ", tc.num_attention_heads, "/", tc.num_key_value_heads);
  if (bs_ < 1) fail(ErrorKind::kInvalidArgument, "block size must be >= 1");
  const DType kv_dtype = m.decoder().kv_dtype();  // BF16 (auto), or F8_E4M3 (--kv-cache-dtype fp8)
  if (kv_dtype != DType::kBF16 && kv_dtype != DType::kF8E4M3)
    fail(ErrorKind::kUnsupported, "backend cuda: a KV cache of ", dtype_name(kv_dtype), " (bfloat16 or fp8)");

  const int max_blocks = static_cast<int>((std::max(1, opts.max_model_len) + bs_ - 1) / bs_);
  const int seqs = std::max(1, opts.max_num_seqs);
  const int seq_cap = std::max(seqs, graph_bucket(seqs) > 0 ? graph_bucket(seqs) : seqs);
  const int64_t rows = std::max<int64_t>({int64_t{opts.max_num_batched_tokens}, int64_t{seq_cap}, 1});
  graph_seq_len_ = max_blocks * bs_;
  graphs_enabled_ = opts.cuda_graphs;
  allocate_step_buffers(rows, seq_cap, max_blocks);

  // The KV pool: explicit bytes, or what --gpu-memory-utilization leaves after weights and step
  // buffers (minus headroom for vision activations and cuBLAS/graph allocations).
  bytes_per_block_ = KvPool::bytes_per_block(tc, bs_, kv_dtype);
  int64_t kv_bytes = opts.kv_cache_bytes;
  if (kv_bytes < 0) {
    size_t free_b = 0, total_b = 0;
    kc::mem_info(&free_b, &total_b);
    // In use: the weights and step buffers allocated above (and whatever else holds the device).
    // Activations: the forward's estimate (model/lightonocr/activation_estimate.h) plus room for
    // cuBLASLt, the backend's BF16 scratch and captured graphs.
    const int64_t used = static_cast<int64_t>(total_b) - static_cast<int64_t>(free_b);
    const int64_t activations = activation_estimate(m.config(), opts.max_num_batched_tokens, opts.max_num_seqs) +
                                (512LL << 20);
    kv_bytes = kv_bytes_for_utilization(opts.gpu_memory_utilization, static_cast<int64_t>(total_b), used, activations,
                                        "device memory");
    LOCR_INFO("cuda: ", kc::device_name(), ": ", total_b >> 20, " MiB, ", used >> 20, " MiB in use; utilization ",
              opts.gpu_memory_utilization, " leaves ", kv_bytes >> 20, " MiB for the KV cache after ",
              activations >> 20, " MiB for activations");
    if (kv_bytes < bytes_per_block_)
      fail(ErrorKind::kLimit, "--gpu-memory-utilization ", opts.gpu_memory_utilization,
           " leaves less than one KV block of device memory; raise it or give --kv-cache-memory");
  }
  n_blocks_ = kv_blocks_for(kv_bytes, bytes_per_block_, opts.max_kv_blocks);
  kv_ = std::make_unique<KvPool>(tc, n_blocks_ + 1, bs_, kv_dtype, &ops_);  // zero-filled
  ops_.synchronize();
  LOCR_INFO("cuda: KV pool ", n_blocks_, " blocks of ", bs_, " tokens (", (n_blocks_ * bytes_per_block_) >> 20,
            " MiB ", kv_dtype == DType::kF8E4M3 ? "FP8 E4M3 with scales" : "BF16", "); decode graphs ",
            graphs_enabled_ ? "on" : "off");
}

CudaExecutor::~CudaExecutor() {
  try {
    ops_.synchronize();
  } catch (...) {
  }
  graphs_.clear();
  if (host_in_) kc::free_pinned(host_in_);
}

void CudaExecutor::allocate_step_buffers(int64_t rows, int seqs, int max_blocks) {
  graphs_.clear();  // captured graphs point into the old buffers
  cap_rows_ = rows, cap_seqs_ = seqs, cap_blocks_ = max_blocks;
  Layout& l = lay_;
  int64_t o = 0;
  auto take = [&](int64_t n) {
    const int64_t at = o;
    o += (n + 31) / 32 * 32;  // 128-byte aligned sections
    return at;
  };
  l.ids = take(rows), l.slots = take(rows);
  l.cu_q = take(seqs + 1), l.seq_lens = take(seqs), l.tables = take(int64_t{seqs} * max_blocks);
  l.sample_rows = take(seqs), l.img_src = take(rows), l.img_dst = take(rows);
  l.cos = take(rows * hd_ / 2), l.sin = take(rows * hd_ / 2);
  l.total = o;
  if (host_in_) kc::free_pinned(host_in_);
  host_in_ = static_cast<int32_t*>(kc::alloc_pinned(static_cast<size_t>(l.total) * sizeof(int32_t)));
  dev_in_ = DeviceBuffer(static_cast<size_t>(l.total) * sizeof(int32_t));
  x_ = DeviceBuffer(rows * H_ * sizeof(float));
  img_ = DeviceBuffer(rows * H_ * sizeof(float));
  xs_ = DeviceBuffer(int64_t{seqs} * H_ * sizeof(float));
  logits_ = DeviceBuffer(int64_t{seqs} * V_ * sizeof(float));
  params_ = DeviceBuffer(int64_t{seqs} * sizeof(kc::SampleParams));
  tokens_ = DeviceBuffer(int64_t{seqs} * sizeof(int32_t));
  logprobs_ = DeviceBuffer(int64_t{seqs} * sizeof(float));
  graph_seq_len_ = max_blocks * bs_;
}

void CudaExecutor::ensure_step_capacity(int64_t rows, int seqs, int max_blocks) {
  if (rows <= cap_rows_ && seqs <= cap_seqs_ && max_blocks <= cap_blocks_) return;
  ops_.synchronize();
  allocate_step_buffers(std::max(rows, cap_rows_), std::max(seqs, cap_seqs_), std::max(max_blocks, cap_blocks_));
}

StepBatch CudaExecutor::staged_batch(int64_t R, int n_seqs, int max_q, int max_seq_len) const {
  const int32_t* dev = dev_in_.as<const int32_t>();
  StepBatch b;
  b.rows = R;
  b.cos = reinterpret_cast<const float*>(dev + lay_.cos);
  b.sin = reinterpret_cast<const float*>(dev + lay_.sin);
  b.slots = dev + lay_.slots;
  kernels::PagedBatch& a = b.attn;
  a.n_seqs = n_seqs;
  a.cu_q = dev + lay_.cu_q, a.host_cu_q = host_in_ + lay_.cu_q;
  a.seq_lens = dev + lay_.seq_lens, a.host_seq_lens = host_in_ + lay_.seq_lens;
  a.tables = dev + lay_.tables, a.host_tables = host_in_ + lay_.tables;
  a.max_blocks = cap_blocks_;
  a.block_size = bs_;
  a.max_q = max_q;
  a.max_seq_len = max_seq_len;
  return b;
}

void CudaExecutor::forward(const StepBatch& b, int64_t n_image_rows, int n_logits, const HiddenHook* hidden) {
  const int32_t* in = dev_in_.as<const int32_t>();
  float* x = x_.as<float>();
  m_.decoder().embed(in + lay_.ids, b.rows, x);
  if (n_image_rows > 0)  // gathered into img_ by the caller; now into their prompt rows
    kc::scatter_rows(img_.as<const float>(), in + lay_.img_dst, n_image_rows, H_, x, stream_);
  std::function<void(int, const float*)> on_hidden;
  if (hidden) on_hidden = [&](int i, const float* h) { (*hidden)(i, h, b.rows); };
  m_.decoder().forward(x, b, *kv_, ws_, on_hidden, taps_);
  if (n_logits > 0) {
    kc::gather_rows(x, in + lay_.sample_rows, n_logits, H_, xs_.as<float>(), stream_);
    m_.decoder().logits(xs_.as<const float>(), n_logits, logits_.as<float>());
  }
}

void CudaExecutor::step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) {
  const int S = static_cast<int>(seqs.size());
  out->logits = Tensor();
  out->logits_seq.clear();
  out->tokens.assign(S, -1);
  out->logprobs.assign(S, 0.0f);
  if (S == 0) return;
  int64_t R = 0;
  int max_q = 0, max_seq_len = 0, max_blocks = 1, n_logits = 0;
  bool decode_only = true;
  for (const auto& s : seqs) {
    LOCR_CHECK(s.n >= 1, "a step sequence needs at least one row");
    R += s.n;
    max_q = std::max<int>(max_q, static_cast<int>(s.n));
    max_seq_len = std::max<int>(max_seq_len, static_cast<int>(s.pos0 + s.n));
    const int64_t need = (s.pos0 + s.n + bs_ - 1) / bs_;
    LOCR_CHECK(s.table_len >= need, "block table of ", s.table_len, " blocks for ", s.pos0 + s.n, " positions");
    max_blocks = std::max<int>(max_blocks, static_cast<int>(need));
    LOCR_CHECK(!s.want_logits || s.n_logits == 1, "the CUDA executor gives one logits row per sequence "
               "(supports_multi_row_logits() is false)");
    n_logits += s.want_logits;
    bool has_image = false;
    if (s.images && s.image_rows)
      for (int64_t i = 0; i < s.n && !has_image; ++i) has_image = s.image_rows[i] >= 0;
    if (s.n != 1 || !s.want_logits || has_image) decode_only = false;
  }
  const int bucket = graph_bucket(S);
  const bool use_graph = decode_only && graphs_enabled_ && !hidden && !taps_ && bucket > 0 && bucket <= cap_seqs_ &&
                         bucket <= cap_rows_ && max_seq_len <= graph_seq_len_;
  ensure_step_capacity(R, S, std::max(max_blocks, cap_blocks_));
  const int n_pad = use_graph ? bucket - S : 0;
  const int n_run = S + n_pad;
  const int64_t R_run = R + n_pad;

  // Host inputs, in the fixed layout.
  int32_t* hi = host_in_;
  float* hcos = reinterpret_cast<float*>(hi + lay_.cos);
  float* hsin = reinterpret_cast<float*>(hi + lay_.sin);
  const int64_t half = hd_ / 2;
  const double theta = m_.config().text.rope_theta;
  int64_t row = 0, n_img = 0;
  const int32_t scratch = scratch_block();
  hi[lay_.cu_q] = 0;
  std::vector<const StepSeq*> img_seqs;
  std::vector<int64_t> img_first;  // first gathered row of each image sequence
  for (int k = 0; k < n_run; ++k) {
    int32_t* table = hi + lay_.tables + static_cast<int64_t>(k) * cap_blocks_;
    if (k < S) {
      const StepSeq& s = seqs[k];
      const RopeTable t = text_rope(theta, static_cast<int>(hd_), s.pos0, s.n);
      std::copy(t.cos.begin(), t.cos.end(), hcos + row * half);
      std::copy(t.sin.begin(), t.sin.end(), hsin + row * half);
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t pos = s.pos0 + i;
        hi[lay_.ids + row + i] = s.ids[i];
        hi[lay_.slots + row + i] = s.block_table[pos / bs_] * bs_ + static_cast<int32_t>(pos % bs_);
      }
      const int64_t nb = std::min<int64_t>(s.table_len, cap_blocks_);
      for (int64_t b = 0; b < cap_blocks_; ++b) table[b] = b < nb ? s.block_table[b] : scratch;
      hi[lay_.seq_lens + k] = static_cast<int32_t>(s.pos0 + s.n);
      if (s.images && s.image_rows) {
        bool any = false;
        for (int64_t i = 0; i < s.n; ++i)
          if (s.image_rows[i] >= 0) {
            LOCR_CHECK(s.image_rows[i] < s.images->rows(), "image row ", s.image_rows[i], " of ", s.images->rows());
            if (!any) img_first.push_back(n_img), img_seqs.push_back(&s), any = true;
            hi[lay_.img_src + n_img] = static_cast<int32_t>(s.image_rows[i]);
            hi[lay_.img_dst + n_img] = static_cast<int32_t>(row + i);
            ++n_img;
          }
      }
      row += s.n;
    } else {  // padding of a graph bucket: one row at position 0 of the scratch block
      hi[lay_.ids + row] = 0;
      hi[lay_.slots + row] = scratch * bs_;
      std::fill(hcos + row * half, hcos + (row + 1) * half, 1.0f);
      std::fill(hsin + row * half, hsin + (row + 1) * half, 0.0f);
      for (int64_t b = 0; b < cap_blocks_; ++b) table[b] = scratch;
      hi[lay_.seq_lens + k] = 1;
      row += 1;
    }
    hi[lay_.cu_q + k + 1] = static_cast<int32_t>(row);
  }
  // Rows whose logits are wanted (decode graphs: every row, padding included).
  std::vector<int> logit_seq;
  {
    int64_t r = 0;
    int j = 0;
    for (int k = 0; k < n_run; ++k) {
      const int64_t n = k < S ? seqs[k].n : 1;
      if (k >= S || seqs[k].want_logits) {
        hi[lay_.sample_rows + j++] = static_cast<int32_t>(r + n - 1);
        if (k < S) logit_seq.push_back(k);
      }
      r += n;
    }
    if (use_graph) LOCR_CHECK(j == n_run, "decode graph rows");
  }
  const int n_logit_rows = use_graph ? n_run : n_logits;
  kc::copy_to_device(dev_in_.get(), hi, static_cast<size_t>(lay_.total) * sizeof(int32_t), stream_);

  // Image rows: gather each sequence's rows from its embeddings into img_, in order.
  for (size_t i = 0; i < img_seqs.size(); ++i) {
    const int64_t first = img_first[i];
    const int64_t last = i + 1 < img_seqs.size() ? img_first[i + 1] : n_img;
    const auto* emb = dynamic_cast<const TensorEmbeds*>(img_seqs[i]->images);
    LOCR_CHECK(emb && &emb->ops() == &ops_, "image embeddings of another executor");
    kc::gather_rows(emb->tensor().data<float>(), dev_in_.as<const int32_t>() + lay_.img_src + first, last - first,
                    H_, img_.as<float>() + first * H_, stream_);
  }

  if (use_graph) {
    // Decode graphs are captured at the fixed split-K sizing (graph_seq_len_) so any length replays.
    const StepBatch b = staged_batch(R_run, n_run, 1, graph_seq_len_);
    // Graphs captured before a workspace or scratch buffer grew point at freed memory.
    if (memory_generation() != graphs_generation_) graphs_.clear();
    auto it = graphs_.find(bucket);
    if (it != graphs_.end() && it->second->ready()) {
      it->second->launch(stream_);
    } else {
      // First time at this size: run eagerly (which also sizes every buffer), then capture the
      // same launches for next time (capture records without executing: the KV pool is written once).
      forward(b, 0, n_run, nullptr);
      ops_.synchronize();
      graphs_generation_ = memory_generation();
      auto ng = std::make_unique<kc::Graph>();
      bool capturing = false;
      try {
        ng->begin_capture(stream_);
        capturing = true;
        forward(b, 0, n_run, nullptr);
        capturing = false;
        ng->end_capture(stream_);
        graphs_[bucket] = std::move(ng);
        LOCR_DEBUG("cuda: captured the decode graph of batch ", bucket);
      } catch (const Error& e) {
        if (capturing) {
          try {
            ng->end_capture(stream_);
          } catch (...) {
          }
        }
        LOCR_WARN("cuda: decode graph capture failed (", e.what(), "); running decode steps eagerly");
        graphs_enabled_ = false;
        graphs_.clear();
      }
    }
  } else {
    // Decode-only steps keep the graphs' split-K sizing so eager and replayed results agree.
    forward(staged_batch(R, S, max_q, decode_only ? graph_seq_len_ : max_seq_len), n_img, n_logits,
            hidden ? &hidden : nullptr);
  }

  // Sampling and results.
  if (!logit_seq.empty()) {
    std::vector<kc::SampleParams> params(n_logit_rows);
    bool any_device = false;
    for (size_t j = 0; j < logit_seq.size(); ++j) {
      const StepSeq& s = seqs[logit_seq[j]];
      if (!s.sample) continue;
      any_device = true;
      kc::SampleParams& p = params[j];
      p.temperature = s.sample->temperature;
      p.top_p = s.sample->top_p;
      p.min_p = s.sample->min_p;
      p.top_k = s.sample->top_k;
      p.seed = s.sample->seed;
      p.step = s.sample->step;
    }
    std::vector<int32_t> tok;
    std::vector<float> lp;
    if (any_device) {
      const int n = static_cast<int>(logit_seq.size());  // padded rows (after them) are not sampled
      kc::copy_to_device(params_.get(), params.data(), n * sizeof(kc::SampleParams), stream_);
      kc::sample(logits_.as<const float>(), n, V_, params_.as<const kc::SampleParams>(), tokens_.as<int32_t>(),
                 logprobs_.as<float>(), stream_);
      tok.resize(n), lp.resize(n);
      kc::copy_to_host(tok.data(), tokens_.get(), n * sizeof(int32_t), stream_);
      kc::copy_to_host(lp.data(), logprobs_.get(), n * sizeof(float), stream_);
    }
    int n_host = 0;
    for (int k : logit_seq) n_host += seqs[k].sample == nullptr;
    if (n_host > 0) out->logits = Tensor::empty(DType::kF32, {n_host, V_});
    int hrow = 0;
    for (size_t j = 0; j < logit_seq.size(); ++j) {
      if (seqs[logit_seq[j]].sample) continue;
      kc::copy_to_host(out->logits.data<float>() + static_cast<int64_t>(hrow) * V_,
                       logits_.as<const float>() + static_cast<int64_t>(j) * V_, V_ * sizeof(float), stream_);
      out->logits_seq.push_back(logit_seq[j]);
      ++hrow;
    }
    ops_.synchronize();  // params/tok/lp are pageable host memory: complete before they go
    for (size_t j = 0; j < logit_seq.size() && any_device; ++j)
      if (seqs[logit_seq[j]].sample) {
        out->tokens[logit_seq[j]] = tok[j];
        out->logprobs[logit_seq[j]] = lp[j];
      }
  } else {
    ops_.synchronize();
  }
}

}  // namespace

bool supports(const ModelConfig& cfg, std::string* why) {
  const int hd = cfg.text.head_dim, vhd = cfg.vision.head_dim;
  if ((hd == 64 || hd == 128) && (vhd == 64 || vhd == 128)) return true;
  if (why)
    *why = "the CUDA attention kernels take head_dim 64 or 128; this model has text head_dim " + std::to_string(hd) +
           " and vision head_dim " + std::to_string(vhd);
  return false;
}

std::unique_ptr<Executor> make_cuda_executor(const LightOnOcr& m, const ExecutorOptions& opts) {
  std::string why;
  if (!kc::available(&why)) fail(ErrorKind::kUnsupported, "--backend cuda: ", why);
  LOCR_CHECK(std::string(m.ops().name()) == "cuda", "the CUDA executor needs a model loaded with backend cuda");
  return std::make_unique<CudaExecutor>(m, opts);
}

}  // namespace locr::model::cuda
