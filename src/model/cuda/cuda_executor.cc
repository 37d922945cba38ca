#include "model/cuda/cuda_executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "kernels/cuda/cuda_api.h"
#include "model/cuda/cuda_weights.h"
#include "model/rope.h"

namespace locr::model::cuda {

namespace {

using kc::bf16;
using kc::DeviceBuffer;

// Padded batch sizes of the decode graphs.
constexpr int kGraphBuckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

int graph_bucket(int n) {
  for (int b : kGraphBuckets)
    if (b >= n) return b;
  return -1;
}

template <class T>
const T* cptr(const DeviceBuffer& b) {
  return b.as<const T>();
}

// Image embeddings on the device: F32 [rows, hidden].
class DeviceEmbeds : public ImageEmbeds {
 public:
  DeviceEmbeds(DeviceBuffer buf, int64_t rows, int64_t hidden, kc::Stream s)
      : buf_(std::move(buf)), rows_(rows), hidden_(hidden), stream_(s) {}
  int64_t rows() const override { return rows_; }
  Tensor to_host() const override {
    Tensor t = Tensor::empty(DType::kF32, {rows_, hidden_});
    if (rows_ > 0) {
      kc::copy_to_host(t.raw(), buf_.get(), t.nbytes(), stream_);
      kc::synchronize(stream_);
    }
    return t;
  }
  const float* data() const { return buf_.as<const float>(); }

 private:
  DeviceBuffer buf_;
  int64_t rows_, hidden_;
  kc::Stream stream_;
};

class CudaVisionJob : public VisionJob {
 public:
  int64_t n_patches() const override { return n; }
  bool done() const override { return next_layer >= layers; }
  std::vector<ImageGrid> grids;
  int64_t n = 0;
  int layers = 0, next_layer = 0, max_patches = 0;
  DeviceBuffer x;         // F32 [n, V] residual stream
  DeviceBuffer cos, sin;  // F32 [n, hd/2]
  DeviceBuffer cu;        // I32 [images + 1]
  DeviceBuffer h, qkv, attn, gu, act;  // scratch (BF16)
};

// Weights shared by every executor of a model (kept in LightOnOcr::device_cache).
struct SharedDevice {
  std::unique_ptr<DeviceWeights> w;
};

std::shared_ptr<SharedDevice> shared_device(const LightOnOcr& m, kc::Stream s) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = m.device_cache();
  if (slot) return std::static_pointer_cast<SharedDevice>(slot);
  auto d = std::make_shared<SharedDevice>();
  d->w = upload_weights(m.weights(), s);
  LOCR_INFO("cuda: uploaded ", d->w->bytes >> 20, " MiB of BF16 weights to ", kc::device_name());
  slot = d;
  return d;
}

class CudaExecutor : public Executor {
 public:
  CudaExecutor(const LightOnOcr& m, const ExecutorOptions& opts);
  ~CudaExecutor() override;

  const char* name() const override { return "cuda"; }
  int64_t kv_blocks() const override { return n_blocks_; }
  int block_size() const override { return bs_; }
  int64_t kv_bytes_per_block() const override { return bytes_per_block_; }
  bool supports_device_sampling() const override { return true; }
  void synchronize() override { kc::synchronize(stream_); }

  std::unique_ptr<VisionJob> vision_begin(const std::vector<ProcessedImage>& images) override;
  void vision_run(VisionJob& job, int n_layers) override;
  std::shared_ptr<ImageEmbeds> vision_finish(VisionJob& job, Tensor* vision_hidden) override;
  int vision_layers() const override { return m_.config().vision.num_hidden_layers; }

  void step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) override;

 private:
  // Step inputs, in one pinned host buffer and one device buffer with the same fixed layout
  // (so captured graphs read the next step's inputs from the same addresses).
  struct Layout {
    int64_t ids, pos, slots, cu_q, seq_lens, tables, sample_rows, img_src, img_dst, total;
  };
  void allocate_step_buffers(int64_t rows, int seqs, int max_blocks);
  void ensure_step_capacity(int64_t rows, int seqs, int max_blocks);
  // The decoder over `R` rows of `n_seqs` sequences whose inputs are on the device; logits for
  // the `n_logits` rows listed in sample_rows.
  void forward(int64_t R, int n_seqs, int max_q, int max_seq_len, int64_t n_image_rows, int n_logits,
               const HiddenHook* hidden);
  void copy_hidden(int i, int64_t R, const HiddenHook& hidden);
  void gemm(const bf16* x, int64_t M, int64_t K, const DeviceBuffer& w, int64_t N, void* y, bool y_bf16, bool acc) {
    gemm_.run(x, M, K, K, cptr<bf16>(w), N, K, y, y_bf16, N, acc, stream_);
  }

  const LightOnOcr& m_;
  ExecutorOptions opts_;
  kc::Stream stream_ = nullptr;
  std::shared_ptr<SharedDevice> dev_;
  const DeviceWeights* w_ = nullptr;
  kc::Gemm gemm_;
  // Dimensions.
  int64_t H_, V_, I_, hd_, nq_, nkv_, qw_, kvw_, QKV_;
  int L_;
  float eps_, theta_;
  // KV pool: per layer [n_blocks + 1 scratch, block_size, kvw] BF16 keys and values.
  int bs_;
  int64_t n_blocks_ = 0, bytes_per_block_ = 0;
  DeviceBuffer k_cache_, v_cache_;
  bf16* k_layer(int l) { return k_cache_.as<bf16>() + static_cast<int64_t>(l) * (n_blocks_ + 1) * bs_ * kvw_; }
  bf16* v_layer(int l) { return v_cache_.as<bf16>() + static_cast<int64_t>(l) * (n_blocks_ + 1) * bs_ * kvw_; }
  int32_t scratch_block() const { return static_cast<int32_t>(n_blocks_); }
  // Step buffers.
  int64_t cap_rows_ = 0;
  int cap_seqs_ = 0, cap_blocks_ = 0;
  Layout lay_{};
  int32_t* host_in_ = nullptr;  // pinned, lay_.total ints
  DeviceBuffer dev_in_;
  DeviceBuffer x_, h_, qkv_, attn_, gu_, act_, tmp_;  // tmp_: F32 [rows, H] (image rows, hidden dumps)
  DeviceBuffer xs_, hs_, logits_, params_, tokens_, logprobs_;
  DeviceBuffer attn_ws_;
  size_t attn_ws_bytes_ = 0;
  int graph_seq_len_ = 0;  // max_seq_len given to decode steps (fixed so graphs cover any length)
  std::map<int, std::unique_ptr<kc::Graph>> graphs_;
  bool graphs_enabled_ = true;
  std::vector<float> host_f32_;
};

CudaExecutor::CudaExecutor(const LightOnOcr& m, const ExecutorOptions& opts) : m_(m), opts_(opts) {
  const TextConfig& tc = m.config().text;
  H_ = tc.hidden_size, V_ = tc.vocab_size, I_ = tc.intermediate_size, hd_ = tc.head_dim;
  nq_ = tc.num_attention_heads, nkv_ = tc.num_key_value_heads, L_ = tc.num_hidden_layers;
  qw_ = nq_ * hd_, kvw_ = nkv_ * hd_, QKV_ = qw_ + 2 * kvw_;
  eps_ = tc.rms_norm_eps, theta_ = static_cast<float>(tc.rope_theta);
  bs_ = opts.block_size;
  std::string why;
  if (!supports(m.config(), &why)) fail(ErrorKind::kUnsupported, why);
  if (nkv_ <= 0 || nq_ % nkv_ != 0) fail(ErrorKind::kInvalidArgument, "bad GQA head counts ", nq_, "/", nkv_);
  if (bs_ < 1) fail(ErrorKind::kInvalidArgument, "block size must be >= 1");

  stream_ = kc::create_stream();
  dev_ = shared_device(m, stream_);
  w_ = dev_->w.get();

  const int max_blocks = static_cast<int>((std::max(1, opts.max_model_len) + bs_ - 1) / bs_);
  const int seqs = std::max(1, opts.max_num_seqs);
  const int seq_cap = std::max(seqs, graph_bucket(seqs) > 0 ? graph_bucket(seqs) : seqs);
  const int64_t rows = std::max<int64_t>({int64_t{opts.max_num_batched_tokens}, int64_t{seq_cap}, 1});
  graph_seq_len_ = max_blocks * bs_;
  graphs_enabled_ = opts.cuda_graphs;
  allocate_step_buffers(rows, seq_cap, max_blocks);

  // The KV pool: explicit bytes, or what --gpu-memory-utilization leaves after weights and step
  // buffers (minus headroom for vision activations and cuBLAS/graph allocations).
  bytes_per_block_ = 2LL * L_ * bs_ * kvw_ * static_cast<int64_t>(sizeof(bf16));
  int64_t kv_bytes = opts.kv_cache_bytes;
  if (kv_bytes < 0) {
    size_t free_b = 0, total_b = 0;
    kc::mem_info(&free_b, &total_b);
    const VisionConfig& vc = m.config().vision;
    const int64_t side = vc.image_size / std::max(1, vc.patch_size);
    const int64_t patches = side * side;
    // One full page through the encoder: residual F32, h/attn BF16, qkv, gate_up, act, conv input.
    const int64_t vision = patches * (4LL * vc.hidden_size + 2LL * (5LL * vc.hidden_size + 3LL * vc.intermediate_size) +
                                      4LL * 3 * vc.patch_size * vc.patch_size);
    const int64_t headroom = vision + (512LL << 20);
    const double util = opts.gpu_memory_utilization;
    if (!(util > 0 && util <= 1))
      fail(ErrorKind::kInvalidArgument, "--gpu-memory-utilization must be in (0, 1], got ", util);
    const int64_t used = static_cast<int64_t>(total_b) - static_cast<int64_t>(free_b);
    kv_bytes = static_cast<int64_t>(util * static_cast<double>(total_b)) - used - headroom;
    LOCR_INFO("cuda: ", kc::device_name(), ": ", total_b >> 20, " MiB, ", used >> 20, " MiB in use (weights ",
              w_->bytes >> 20, " MiB); utilization ", util, " leaves ", std::max<int64_t>(0, kv_bytes) >> 20,
              " MiB for the KV cache after ", headroom >> 20, " MiB headroom");
    if (kv_bytes < bytes_per_block_)
      fail(ErrorKind::kLimit, "--gpu-memory-utilization ", util, " leaves no device memory for the KV cache (",
           total_b >> 20, " MiB total, ", used >> 20, " MiB in use); raise it or give --kv-cache-memory");
  }
  n_blocks_ = kv_blocks_for(kv_bytes, bytes_per_block_, opts.max_kv_blocks);
  const int64_t pool_rows = (n_blocks_ + 1) * bs_;  // + the scratch block
  k_cache_ = DeviceBuffer(static_cast<size_t>(L_) * pool_rows * kvw_ * sizeof(bf16));
  v_cache_ = DeviceBuffer(static_cast<size_t>(L_) * pool_rows * kvw_ * sizeof(bf16));
  kc::memset_device(k_cache_.get(), 0, k_cache_.bytes(), stream_);
  kc::memset_device(v_cache_.get(), 0, v_cache_.bytes(), stream_);
  kc::synchronize(stream_);
  LOCR_INFO("cuda: KV pool ", n_blocks_, " blocks of ", bs_, " tokens (", (n_blocks_ * bytes_per_block_) >> 20,
            " MiB BF16); decode graphs ", graphs_enabled_ ? "on" : "off");
}

CudaExecutor::~CudaExecutor() {
  try {
    if (stream_) kc::synchronize(stream_);
  } catch (...) {
  }
  graphs_.clear();
  if (host_in_) kc::free_pinned(host_in_);
  if (stream_) kc::destroy_stream(stream_);
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
  l.ids = take(rows), l.pos = take(rows), l.slots = take(rows);
  l.cu_q = take(seqs + 1), l.seq_lens = take(seqs), l.tables = take(int64_t{seqs} * max_blocks);
  l.sample_rows = take(seqs), l.img_src = take(rows), l.img_dst = take(rows);
  l.total = o;
  if (host_in_) kc::free_pinned(host_in_);
  host_in_ = static_cast<int32_t*>(kc::alloc_pinned(static_cast<size_t>(l.total) * sizeof(int32_t)));
  dev_in_ = DeviceBuffer(static_cast<size_t>(l.total) * sizeof(int32_t));
  const int64_t I2 = 2 * I_;
  x_ = DeviceBuffer(rows * H_ * sizeof(float));
  h_ = DeviceBuffer(rows * H_ * sizeof(bf16));
  qkv_ = DeviceBuffer(rows * QKV_ * sizeof(bf16));
  attn_ = DeviceBuffer(rows * qw_ * sizeof(bf16));
  gu_ = DeviceBuffer(rows * I2 * sizeof(bf16));
  act_ = DeviceBuffer(rows * I_ * sizeof(bf16));
  tmp_ = DeviceBuffer(rows * H_ * sizeof(float));
  xs_ = DeviceBuffer(int64_t{seqs} * H_ * sizeof(float));
  hs_ = DeviceBuffer(int64_t{seqs} * H_ * sizeof(bf16));
  logits_ = DeviceBuffer(int64_t{seqs} * V_ * sizeof(float));
  params_ = DeviceBuffer(int64_t{seqs} * sizeof(kc::SampleParams));
  tokens_ = DeviceBuffer(int64_t{seqs} * sizeof(int32_t));
  logprobs_ = DeviceBuffer(int64_t{seqs} * sizeof(float));
  // Split-K scratch of the largest decode the graphs may see (every sequence up to the longest).
  kc::PagedAttention p;
  p.n_seqs = seqs, p.max_q = 1, p.max_seq_len = max_blocks * bs_, p.block_size = bs_;
  p.n_heads = static_cast<int>(nq_), p.n_kv_heads = static_cast<int>(nkv_), p.head_dim = static_cast<int>(hd_);
  p.max_blocks = max_blocks;
  p.q_stride = QKV_, p.out_stride = qw_;
  attn_ws_bytes_ = kc::paged_attention_workspace(p);
  attn_ws_ = DeviceBuffer(attn_ws_bytes_);
  graph_seq_len_ = max_blocks * bs_;
}

void CudaExecutor::ensure_step_capacity(int64_t rows, int seqs, int max_blocks) {
  if (rows <= cap_rows_ && seqs <= cap_seqs_ && max_blocks <= cap_blocks_) return;
  kc::synchronize(stream_);
  allocate_step_buffers(std::max(rows, cap_rows_), std::max(seqs, cap_seqs_), std::max(max_blocks, cap_blocks_));
}

void CudaExecutor::copy_hidden(int i, int64_t R, const HiddenHook& hidden) {
  host_f32_.resize(static_cast<size_t>(R * H_));
  kc::copy_to_host(host_f32_.data(), x_.get(), R * H_ * sizeof(float), stream_);
  kc::synchronize(stream_);
  hidden(i, host_f32_.data(), R);
}

void CudaExecutor::forward(int64_t R, int n_seqs, int max_q, int max_seq_len, int64_t n_image_rows, int n_logits,
                           const HiddenHook* hidden) {
  const int32_t* in = dev_in_.as<const int32_t>();
  float* x = x_.as<float>();
  bf16* h = h_.as<bf16>();
  bf16* qkv = qkv_.as<bf16>();
  bf16* attn = attn_.as<bf16>();
  kc::embed(w_->embed_tokens.as<const bf16>(), in + lay_.ids, R, H_, x, stream_);
  if (n_image_rows > 0)  // gathered into tmp_ by the caller; now into their prompt rows
    kc::scatter_rows(tmp_.as<const float>(), in + lay_.img_dst, n_image_rows, H_, x, stream_);
  if (hidden) copy_hidden(0, R, *hidden);

  kc::PagedAttention pa;
  pa.q = qkv;
  pa.out = attn;
  pa.block_tables = in + lay_.tables;
  pa.max_blocks = cap_blocks_;
  pa.cu_q = in + lay_.cu_q;
  pa.seq_lens = in + lay_.seq_lens;
  pa.n_seqs = n_seqs;
  pa.max_q = max_q;
  pa.max_seq_len = max_seq_len;
  pa.block_size = bs_;
  pa.n_heads = static_cast<int>(nq_);
  pa.n_kv_heads = static_cast<int>(nkv_);
  pa.head_dim = static_cast<int>(hd_);
  pa.q_stride = QKV_;
  pa.out_stride = qw_;
  pa.scale = 1.0f / std::sqrt(static_cast<float>(hd_));
  const size_t ws = kc::paged_attention_workspace(pa);
  if (ws > attn_ws_bytes_) {  // a prefill shape needing more split-K scratch than decodes do
    kc::synchronize(stream_);
    graphs_.clear();  // they point at the old scratch
    attn_ws_ = DeviceBuffer(ws);
    attn_ws_bytes_ = ws;
  }

  for (int l = 0; l < L_; ++l) {
    const DevTextLayer& Lw = w_->text[l];
    kc::rms_norm(x, H_, Lw.input_layernorm.as<const bf16>(), eps_, R, H_, h, H_, stream_);
    gemm(h, R, H_, Lw.qkv, QKV_, qkv, true, false);
    kc::head_rms_norm(qkv, R, nq_, hd_, QKV_, Lw.q_norm.as<const bf16>(), eps_, stream_);
    kc::head_rms_norm(qkv + qw_, R, nkv_, hd_, QKV_, Lw.k_norm.as<const bf16>(), eps_, stream_);
    kc::rope_1d(qkv, R, nq_, hd_, QKV_, in + lay_.pos, theta_, stream_);
    kc::rope_1d(qkv + qw_, R, nkv_, hd_, QKV_, in + lay_.pos, theta_, stream_);
    kc::kv_store(qkv + qw_, qkv + qw_ + kvw_, QKV_, in + lay_.slots, R, kvw_, k_layer(l), v_layer(l), stream_);
    pa.k_cache = k_layer(l);
    pa.v_cache = v_layer(l);
    kc::paged_attention(pa, attn_ws_.get(), stream_);
    gemm(attn, R, qw_, Lw.o_proj, H_, x, false, true);  // x += o_proj(attn)
    kc::rms_norm(x, H_, Lw.post_attention_layernorm.as<const bf16>(), eps_, R, H_, h, H_, stream_);
    gemm(h, R, H_, Lw.gate_up, 2 * I_, gu_.get(), true, false);
    kc::silu_mul(gu_.as<const bf16>(), R, I_, act_.as<bf16>(), stream_);
    gemm(act_.as<const bf16>(), R, I_, Lw.down_proj, H_, x, false, true);  // x += down(...)
    if (hidden && l + 1 < L_) copy_hidden(l + 1, R, *hidden);
  }
  if (hidden) {  // transformers' last hidden state is the final-normed one
    kc::rms_norm(x, H_, w_->norm.as<const bf16>(), eps_, R, H_, h, H_, stream_);
    kc::bf16_to_f32(h, tmp_.as<float>(), R * H_, stream_);
    host_f32_.resize(static_cast<size_t>(R * H_));
    kc::copy_to_host(host_f32_.data(), tmp_.get(), R * H_ * sizeof(float), stream_);
    kc::synchronize(stream_);
    (*hidden)(L_, host_f32_.data(), R);
  }
  if (n_logits > 0) {
    kc::gather_rows(x, in + lay_.sample_rows, n_logits, H_, xs_.as<float>(), stream_);
    kc::rms_norm(xs_.as<const float>(), H_, w_->norm.as<const bf16>(), eps_, n_logits, H_, hs_.as<bf16>(), H_, stream_);
    gemm_.run(hs_.as<const bf16>(), n_logits, H_, H_, w_->lm_head, V_, H_, logits_.get(), false, V_, false, stream_);
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
    n_logits += s.want_logits;
    bool has_image = false;
    if (s.images && s.image_rows)
      for (int64_t i = 0; i < s.n && !has_image; ++i) has_image = s.image_rows[i] >= 0;
    if (s.n != 1 || !s.want_logits || has_image) decode_only = false;
  }
  const int bucket = graph_bucket(S);
  const bool use_graph = decode_only && graphs_enabled_ && !hidden && bucket > 0 && bucket <= cap_seqs_ &&
                         bucket <= cap_rows_ && max_seq_len <= graph_seq_len_;
  ensure_step_capacity(R, S, std::max(max_blocks, cap_blocks_));
  const int n_pad = use_graph ? bucket - S : 0;
  const int n_run = S + n_pad;
  const int64_t R_run = R + n_pad;

  // Host inputs, in the fixed layout.
  int32_t* hi = host_in_;
  int64_t row = 0, n_img = 0;
  const int32_t scratch = scratch_block();
  hi[lay_.cu_q] = 0;
  std::vector<const StepSeq*> img_seqs;
  std::vector<int64_t> img_first;  // first gathered row of each image sequence
  for (int k = 0; k < n_run; ++k) {
    int32_t* table = hi + lay_.tables + static_cast<int64_t>(k) * cap_blocks_;
    if (k < S) {
      const StepSeq& s = seqs[k];
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t pos = s.pos0 + i;
        hi[lay_.ids + row + i] = s.ids[i];
        hi[lay_.pos + row + i] = static_cast<int32_t>(pos);
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
      hi[lay_.pos + row] = 0;
      hi[lay_.slots + row] = scratch * bs_;
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

  // Image rows: gather each sequence's rows from its embeddings into tmp_, in order.
  for (size_t i = 0; i < img_seqs.size(); ++i) {
    const int64_t first = img_first[i];
    const int64_t last = i + 1 < img_seqs.size() ? img_first[i + 1] : n_img;
    const auto* emb = dynamic_cast<const DeviceEmbeds*>(img_seqs[i]->images);
    LOCR_CHECK(emb, "image embeddings of another executor");
    kc::gather_rows(emb->data(), dev_in_.as<const int32_t>() + lay_.img_src + first, last - first, H_,
                    tmp_.as<float>() + first * H_, stream_);
  }

  if (use_graph) {
    auto it = graphs_.find(bucket);
    if (it != graphs_.end() && it->second->ready()) {
      it->second->launch(stream_);
    } else {
      // First time at this size: run eagerly, then capture the same launches for next time
      // (capture records without executing, so the KV pool is written once).
      forward(R_run, n_run, 1, graph_seq_len_, 0, n_run, nullptr);
      kc::synchronize(stream_);
      auto ng = std::make_unique<kc::Graph>();
      bool capturing = false;
      try {
        ng->begin_capture(stream_);
        capturing = true;
        forward(R_run, n_run, 1, graph_seq_len_, 0, n_run, nullptr);
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
    forward(R, S, max_q, decode_only ? graph_seq_len_ : max_seq_len, n_img, n_logits, hidden ? &hidden : nullptr);
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
    kc::synchronize(stream_);  // params/tok/lp are pageable host memory: complete before they go
    for (size_t j = 0; j < logit_seq.size() && any_device; ++j)
      if (seqs[logit_seq[j]].sample) {
        out->tokens[logit_seq[j]] = tok[j];
        out->logprobs[logit_seq[j]] = lp[j];
      }
  } else {
    kc::synchronize(stream_);
  }
}

// ---- Vision ----

std::unique_ptr<VisionJob> CudaExecutor::vision_begin(const std::vector<ProcessedImage>& images) {
  const VisionConfig& vc = m_.config().vision;
  LOCR_CHECK(!w_->vision.empty(), "this model has no vision tower");
  auto j = std::make_unique<CudaVisionJob>();
  const int64_t Vh = vc.hidden_size, hd = vc.head_dim, A = static_cast<int64_t>(vc.num_attention_heads) * hd;
  const int64_t Iv = vc.intermediate_size, P = 3LL * vc.patch_size * vc.patch_size;
  const std::vector<float> patches = m_.vision_patches(images, &j->grids);
  for (const auto& g : j->grids) {
    j->n += g.n_patches();
    j->max_patches = std::max<int>(j->max_patches, static_cast<int>(g.n_patches()));
  }
  j->layers = vc.num_hidden_layers;
  const int64_t N = j->n;
  // RoPE tables per image (positions restart at (0, 0)) and the packed sequence offsets.
  std::vector<float> cos(N * hd / 2), sin(N * hd / 2);
  std::vector<int32_t> cu(1, 0);
  int64_t off = 0;
  for (const auto& g : j->grids) {
    const RopeTable t = vision_rope(vc.rope_theta, static_cast<int>(hd), g.grid_h, g.grid_w);
    std::copy(t.cos.begin(), t.cos.end(), cos.begin() + off * hd / 2);
    std::copy(t.sin.begin(), t.sin.end(), sin.begin() + off * hd / 2);
    off += g.n_patches();
    cu.push_back(static_cast<int32_t>(off));
  }
  j->x = DeviceBuffer(N * Vh * sizeof(float));
  j->cos = DeviceBuffer(cos.size() * sizeof(float));
  j->sin = DeviceBuffer(sin.size() * sizeof(float));
  j->cu = DeviceBuffer(cu.size() * sizeof(int32_t));
  j->h = DeviceBuffer(N * std::max(Vh, P) * sizeof(bf16));
  j->qkv = DeviceBuffer(N * 3 * A * sizeof(bf16));
  j->attn = DeviceBuffer(N * A * sizeof(bf16));
  j->gu = DeviceBuffer(N * 2 * Iv * sizeof(bf16));
  j->act = DeviceBuffer(N * Iv * sizeof(bf16));
  DeviceBuffer pf(patches.size() * sizeof(float));
  kc::copy_to_device(pf.get(), patches.data(), patches.size() * sizeof(float), stream_);
  kc::copy_to_device(j->cos.get(), cos.data(), cos.size() * sizeof(float), stream_);
  kc::copy_to_device(j->sin.get(), sin.data(), sin.size() * sizeof(float), stream_);
  kc::copy_to_device(j->cu.get(), cu.data(), cu.size() * sizeof(int32_t), stream_);
  // Patch conv as a GEMM over (c, ky, kx) patches, then ln_pre (the residual stream starts normed).
  kc::f32_to_bf16(pf.as<const float>(), j->h.as<bf16>(), N * P, stream_);
  gemm(j->h.as<const bf16>(), N, P, w_->patch_conv, Vh, j->x.get(), false, false);
  kc::rms_norm(j->x.as<const float>(), Vh, w_->ln_pre.as<const bf16>(), vc.norm_eps, N, Vh, j->h.as<bf16>(), Vh,
               stream_);
  kc::bf16_to_f32(j->h.as<const bf16>(), j->x.as<float>(), N * Vh, stream_);
  kc::synchronize(stream_);  // the pageable sources above must outlive their copies
  return j;
}

void CudaExecutor::vision_run(VisionJob& job, int n_layers) {
  auto& j = static_cast<CudaVisionJob&>(job);
  const VisionConfig& vc = m_.config().vision;
  const int64_t Vh = vc.hidden_size, hd = vc.head_dim, nh = vc.num_attention_heads, A = nh * hd;
  const int64_t Iv = vc.intermediate_size, N = j.n;
  const int end = std::min(j.layers, j.next_layer + std::max(0, n_layers));
  float* x = j.x.as<float>();
  bf16* h = j.h.as<bf16>();
  bf16* qkv = j.qkv.as<bf16>();
  kc::VarlenAttention va;
  va.q = qkv;
  va.k = qkv + A;
  va.v = qkv + 2 * A;
  va.out = j.attn.as<bf16>();
  va.cu_q = va.cu_k = j.cu.as<const int32_t>();
  va.n_seqs = static_cast<int>(j.grids.size());
  va.max_q = j.max_patches;
  va.n_heads = va.n_kv_heads = static_cast<int>(nh);
  va.head_dim = static_cast<int>(hd);
  va.q_stride = va.kv_stride = 3 * A;
  va.out_stride = A;
  va.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  va.causal = false;
  for (int l = j.next_layer; l < end; ++l) {
    const DevVisionLayer& Lw = w_->vision[l];
    kc::rms_norm(x, Vh, Lw.attention_norm.as<const bf16>(), vc.norm_eps, N, Vh, h, Vh, stream_);
    gemm(h, N, Vh, Lw.qkv, 3 * A, qkv, true, false);
    kc::rope_table(qkv, N, nh, hd, 3 * A, j.cos.as<const float>(), j.sin.as<const float>(), stream_);
    kc::rope_table(qkv + A, N, nh, hd, 3 * A, j.cos.as<const float>(), j.sin.as<const float>(), stream_);
    kc::attention_varlen(va, stream_);
    gemm(j.attn.as<const bf16>(), N, A, Lw.o_proj, Vh, x, false, true);
    kc::rms_norm(x, Vh, Lw.ffn_norm.as<const bf16>(), vc.norm_eps, N, Vh, h, Vh, stream_);
    gemm(h, N, Vh, Lw.gate_up, 2 * Iv, j.gu.get(), true, false);
    kc::silu_mul(j.gu.as<const bf16>(), N, Iv, j.act.as<bf16>(), stream_);
    gemm(j.act.as<const bf16>(), N, Iv, Lw.down_proj, Vh, x, false, true);
  }
  j.next_layer = std::max(j.next_layer, end);
}

std::shared_ptr<ImageEmbeds> CudaExecutor::vision_finish(VisionJob& job, Tensor* vision_hidden) {
  auto& j = static_cast<CudaVisionJob&>(job);
  LOCR_CHECK(j.done(), "vision_finish before the last encoder layer");
  const ModelConfig& mc = m_.config();
  const int64_t Vh = mc.vision.hidden_size, H = mc.text.hidden_size, N = j.n;
  const int mm = mc.spatial_merge_size;
  if (vision_hidden) {
    *vision_hidden = Tensor::empty(DType::kF32, {N, Vh});
    kc::copy_to_host(vision_hidden->raw(), j.x.get(), vision_hidden->nbytes(), stream_);
  }
  int64_t M = 0;
  for (const auto& g : j.grids) M += static_cast<int64_t>(g.grid_h / mm) * (g.grid_w / mm);
  DeviceBuffer out(std::max<int64_t>(1, M) * H * sizeof(float));
  if (M > 0) {
    // RMSNorm -> per-image channel-major merge -> merging GEMM -> linear_1 -> GELU -> linear_2.
    kc::rms_norm(j.x.as<const float>(), Vh, w_->proj_norm.as<const bf16>(), mc.projector_norm_eps, N, Vh,
                 j.h.as<bf16>(), Vh, stream_);
    const int64_t D = Vh * mm * mm;
    DeviceBuffer merged(M * D * sizeof(bf16));  // M*D <= N*Vh: fits j.gu, but keep it separate
    int64_t in_off = 0, out_off = 0;
    for (const auto& g : j.grids) {
      kc::patch_merge(j.h.as<const bf16>() + in_off * Vh, g.grid_h, g.grid_w, Vh, mm,
                      merged.as<bf16>() + out_off * D, stream_);
      in_off += g.n_patches();
      out_off += static_cast<int64_t>(g.grid_h / mm) * (g.grid_w / mm);
    }
    bf16* y = j.attn.as<bf16>();  // [M, Vh] (attn holds N*A >= M*Vh)
    bf16* z = j.act.as<bf16>();   // [M, H]
    LOCR_CHECK(j.attn.bytes() >= static_cast<size_t>(M * Vh) * sizeof(bf16) &&
                   j.act.bytes() >= static_cast<size_t>(M * H) * sizeof(bf16),
               "projector scratch");
    gemm(merged.as<const bf16>(), M, D, w_->merging, Vh, y, true, false);
    gemm(y, M, Vh, w_->linear_1, H, z, true, false);
    kc::gelu(z, M * H, stream_);
    gemm(z, M, H, w_->linear_2, H, out.get(), false, false);
  }
  kc::synchronize(stream_);
  // Free the encoder's buffers now rather than when the job is destroyed.
  j.x = DeviceBuffer(), j.h = DeviceBuffer(), j.qkv = DeviceBuffer(), j.attn = DeviceBuffer();
  j.gu = DeviceBuffer(), j.act = DeviceBuffer(), j.cos = DeviceBuffer(), j.sin = DeviceBuffer();
  return std::make_shared<DeviceEmbeds>(std::move(out), M, H, stream_);
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
  return std::make_unique<CudaExecutor>(m, opts);
}

}  // namespace locr::model::cuda
