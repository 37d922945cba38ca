#include "kernels/cuda/cuda_ops.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cuda/cuda_api.h"

namespace locr::kernels::cuda {

namespace {

// A weight on the device: BF16 [rows, cols], or Q8_0 / Q4_K / Q6_K rows in their GGUF blocks.
struct DeviceMatrix {
  DeviceBuffer buf;
  DType dtype = DType::kBF16;
  int64_t rows = 0, cols = 0;
};

bool quantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K; }

std::vector<uint16_t> to_bf16(const Matrix& m) {
  const int64_t n = m.rows * m.cols;
  std::vector<uint16_t> out(static_cast<size_t>(n));
  switch (m.dtype) {
    case DType::kBF16:
      std::memcpy(out.data(), m.data, static_cast<size_t>(n) * sizeof(uint16_t));
      break;
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) out[i] = locr::f32_to_bf16(static_cast<const float*>(m.data)[i]);
      break;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = locr::f32_to_bf16(locr::f16_to_f32(static_cast<const uint16_t*>(m.data)[i]));
      break;
    default:
      fail(ErrorKind::kUnsupported, "backend cuda: weights must be F32, F16, BF16, Q8_0, Q4_K or Q6_K, got ",
           dtype_name(m.dtype));
  }
  return out;
}

class CudaOps : public Ops {
 public:
  CudaOps() : stream_(create_stream()) {}
  ~CudaOps() override {
    try {
      cuda::synchronize(stream_);
    } catch (...) {
    }
    weights_.clear();
    uploaded_.clear();
    params_.clear();
    destroy_stream(stream_);
  }
  const char* name() const override { return "cuda"; }
  DType kv_dtype() const override { return DType::kBF16; }
  Stream stream() const { return stream_; }

  // Uploads now (the checkpoint's pages of a prepared weight are then handed back by the loader).
  void prepare(Matrix& w) override {
    if (!own(w)) w.packed = device(w);
  }

  // Float parts of one width become one BF16 device weight (one GEMM); the parts are not uploaded.
  // Quantized parts stay as they are, one GEMV / GEMM each into its columns.
  void prepare_stack(StackedMatrix& w) override {
    bool fuse = w.parts.size() > 1;
    for (const Matrix& p : w.parts)
      fuse = fuse && p.data != nullptr && p.cols == w.parts.front().cols && !quantized(p.dtype) && !own(p);
    if (!fuse) {
      Ops::prepare_stack(w);
      return;
    }
    std::vector<uint16_t> h;
    for (const Matrix& p : w.parts) {
      const std::vector<uint16_t> part = to_bf16(p);
      h.insert(h.end(), part.begin(), part.end());
    }
    auto d = std::make_shared<DeviceMatrix>();
    d->rows = w.rows(), d->cols = w.cols(), d->dtype = DType::kBF16;
    d->buf = DeviceBuffer(h.size() * sizeof(uint16_t));
    copy_to_device(d->buf.get(), h.data(), h.size() * sizeof(uint16_t), stream_);
    cuda::synchronize(stream_);  // `h` is pageable and goes out of scope
    {
      std::lock_guard<std::mutex> lock(mu_);
      uploaded_[d.get()] = d;
    }
    w.fused = Matrix();
    w.fused.dtype = DType::kBF16;
    w.fused.rows = d->rows;
    w.fused.cols = d->cols;
    w.fused.packed = d;  // no host copy: data stays null
  }

 private:
  // A contiguous BF16 copy of x in scratch `slot` (GEMM and attention inputs are BF16).
  bf16* to_bf16_scratch(int slot, const View& x) {
    bf16* b = scratch_bf16(slot, x.numel());
    f32_to_bf16_2d(x.f32(), x.stride, x.rows, x.cols, b, stream_);
    return b;
  }

  void run_matmul(const View& x, const Matrix& w, const View& y) override {
    const std::shared_ptr<DeviceMatrix> d = weight(w);
    const int64_t K = d->cols, N = d->rows;
    if (quantized(d->dtype)) {
      matmul_quantized(x, *d, y);
      return;
    }
    const bf16* xb = to_bf16_scratch(kX, x);
    gemm_.run(xb, x.rows, K, K, d->buf.as<const bf16>(), N, K, y.f32(), false, y.stride, false, stream_);
  }

  void run_rms_norm(const View& x, const Matrix& w, float eps, const View& y) override {
    const int64_t dim = w.rows * w.cols;
    rms_norm_f32(x.f32(), x.stride, bf16_weight(w, "rms_norm")->buf.as<const bf16>(), eps, x.rows, x.cols / dim, dim,
                 y.f32(), y.stride, stream_);
  }

  void run_rope(const View& x, const View& cos, const View& sin) override {
    const int64_t head_dim = 2 * cos.cols;
    rope_table_f32(x.f32(), x.rows, x.cols / head_dim, head_dim, x.stride, cos.f32(), sin.f32(), stream_);
  }

  void run_silu_mul(const View& gate, const View& up, const View& out) override {
    silu_mul_f32(gate.f32(), gate.stride, up.f32(), up.stride, out.f32(), out.stride, gate.rows, gate.cols, stream_);
  }
  void run_gelu(const View& x) override { gelu_f32(x.f32(), x.numel(), stream_); }
  void run_add(const View& y, const View& x) override { add_f32(y.f32(), x.f32(), y.numel(), stream_); }

  // Unpaged F32 q/k/v of one sequence: the vision encoder's per-image attention.
  void run_attention(const View& q, const View& k, const View& v, const View& out, const AttentionParams& p) override {
    LOCR_CHECK(!p.block_table && p.kv_dtype == DType::kF32,
               "backend cuda: attention over a paged cache goes through paged_attention");
    // q, k and v to one contiguous BF16 block (rows of `st` elements each).
    const int64_t st = q.cols;
    LOCR_CHECK(k.cols == st, "backend cuda: attention with ", q.cols, " query and ", k.cols, " key columns");
    bf16* qb = scratch_bf16(kQ, (p.n_q + 2 * p.n_kv) * st);
    bf16* kb = qb + p.n_q * st;
    bf16* vb = kb + p.n_kv * st;
    bf16* ob = scratch_bf16(kOut, p.n_q * st);
    f32_to_bf16_2d(q.f32(), q.stride, p.n_q, st, qb, stream_);
    f32_to_bf16_2d(k.f32(), k.stride, p.n_kv, st, kb, stream_);
    f32_to_bf16_2d(v.f32(), v.stride, p.n_kv, st, vb, stream_);
    const int32_t cu_q[2] = {0, static_cast<int32_t>(p.n_q)}, cu_k[2] = {0, static_cast<int32_t>(p.n_kv)};
    int32_t* cu = static_cast<int32_t*>(scratch(kCu, 4 * sizeof(int32_t)));
    copy_to_device(cu, cu_q, sizeof(cu_q), stream_);
    copy_to_device(cu + 2, cu_k, sizeof(cu_k), stream_);
    VarlenAttention va;
    va.q = qb, va.k = kb, va.v = vb, va.out = ob;
    va.cu_q = cu, va.cu_k = cu + 2;
    va.n_seqs = 1;
    va.max_q = static_cast<int>(p.n_q);
    va.n_heads = static_cast<int>(p.n_heads), va.n_kv_heads = static_cast<int>(p.n_kv_heads);
    va.head_dim = static_cast<int>(p.head_dim);
    va.q_stride = va.kv_stride = st, va.out_stride = st;
    va.scale = p.scale;
    va.causal = p.causal;
    LOCR_CHECK(!p.causal || p.q_offset == p.n_kv - p.n_q, "backend cuda: causal attention with a query offset");
    attention_varlen(va, stream_);
    bf16_to_f32_2d(ob, p.n_q, st, out);
    cuda::synchronize(stream_);  // cu_q / cu_k are pageable stack memory
  }

  void run_embed(const Matrix& table, const View& ids, const View& out) override {
    const std::shared_ptr<DeviceMatrix> d = weight(table);
    const int64_t n = ids.numel();
    float* dst = out.contiguous() ? out.f32() : f32_scratch(kTmp, out.numel());
    if (quantized(d->dtype)) {  // a GGUF's quantized token_embd: rows decoded exactly
      embed_quantized(d->dtype, d->buf.get(), d->cols, ids.as<const int32_t>(), n, dst, stream_);
    } else {
      cuda::embed(d->buf.as<const bf16>(), ids.as<const int32_t>(), n, d->cols, dst, stream_);
    }
    if (dst != out.f32()) copy_rows(dst, out.cols, out.rows, out.cols, out.f32(), out.stride);
  }

  // rows x cols of BF16 (contiguous) to the F32 view `out`.
  void bf16_to_f32_2d(const bf16* b, int64_t rows, int64_t cols, const View& out) {
    if (out.stride == cols) {
      bf16_to_f32(b, out.f32(), rows * cols, stream_);
      return;
    }
    float* tmp = f32_scratch(kTmp, rows * cols);
    bf16_to_f32(b, tmp, rows * cols, stream_);
    copy_rows(tmp, cols, rows, cols, out.f32(), out.stride);
  }
  void copy_rows(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst, int64_t dst_stride) {
    copy_device_2d(dst, static_cast<size_t>(dst_stride) * sizeof(float), src,
                   static_cast<size_t>(src_stride) * sizeof(float), static_cast<size_t>(cols) * sizeof(float),
                   static_cast<size_t>(rows), stream_);
  }
  float* f32_scratch(int slot, int64_t n) {
    return static_cast<float*>(scratch(slot, static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float)));
  }

 public:
  bool host_memory() const override { return false; }
  std::shared_ptr<void> alloc(size_t bytes) override {
    auto b = std::make_shared<DeviceBuffer>(bytes == 0 ? 64 : bytes);
    memset_device(b->get(), 0, b->bytes(), stream_);
    void* p = b->get();
    return std::shared_ptr<void>(b, p);
  }
  void to_host(void* host_dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    copy_to_host(host_dst, src, bytes, stream_);
    cuda::synchronize(stream_);
  }
  void from_host(void* dst, const void* host_src, size_t bytes) override {
    if (!bytes) return;
    copy_to_device(dst, host_src, bytes, stream_);
    cuda::synchronize(stream_);  // the source may be pageable memory the caller frees next
  }
  void synchronize() override { cuda::synchronize(stream_); }
  uint64_t scratch_generation() const override { return scratch_generation_; }

 private:
  void run_kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv) override {
    const int64_t n = k.rows, width = kv.width();
    const int32_t* sl = slots.as<const int32_t>();
    if (kv.dtype == DType::kF8E4M3) {  // from the F32 rows, as kv_store_host
      LOCR_CHECK(k.stride == v.stride, "backend cuda: FP8 kv_store with key / value row strides ", k.stride, " / ",
                 v.stride);
      kv_store_fp8(k.f32(), v.f32(), k.stride, sl, n, static_cast<int>(kv.n_kv_heads), static_cast<int>(kv.head_dim),
                   static_cast<uint8_t*>(kv.k), static_cast<uint8_t*>(kv.v), kv.k_scale, kv.v_scale, stream_);
      return;
    }
    LOCR_CHECK(kv.dtype == DType::kBF16, "backend cuda: the KV cache is BF16 or F8_E4M3, not ", dtype_name(kv.dtype));
    bf16* kb = scratch_bf16(kKv, 2 * n * width);
    bf16* vb = kb + n * width;
    f32_to_bf16_2d(k.f32(), k.stride, n, width, kb, stream_);
    f32_to_bf16_2d(v.f32(), v.stride, n, width, vb, stream_);
    cuda::kv_store(kb, vb, width, sl, n, width, static_cast<bf16*>(kv.k), static_cast<bf16*>(kv.v), stream_);
  }

  void run_paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale,
                           const View& out) override {
    LOCR_CHECK(kv.dtype == DType::kBF16 || kv.dtype == DType::kF8E4M3,
               "backend cuda: the KV cache is BF16 or F8_E4M3, not ", dtype_name(kv.dtype));
    const int64_t rows = q.rows, width = q.cols;
    const bf16* qb = to_bf16_scratch(kQ, q);
    bf16* ob = scratch_bf16(kOut, rows * width);
    PagedAttention pa;
    pa.q = qb, pa.out = ob;
    if (kv.dtype == DType::kF8E4M3) {
      pa.k_fp8 = static_cast<const uint8_t*>(kv.k), pa.v_fp8 = static_cast<const uint8_t*>(kv.v);
      pa.k_scale = kv.k_scale, pa.v_scale = kv.v_scale;
    } else {
      pa.k_cache = static_cast<const bf16*>(kv.k), pa.v_cache = static_cast<const bf16*>(kv.v);
    }
    pa.block_tables = b.tables;
    pa.max_blocks = static_cast<int>(b.max_blocks);
    pa.cu_q = b.cu_q, pa.seq_lens = b.seq_lens;
    pa.n_seqs = static_cast<int>(b.n_seqs);
    pa.max_q = static_cast<int>(b.max_q);
    pa.max_seq_len = static_cast<int>(b.max_seq_len);
    pa.block_size = static_cast<int>(b.block_size);
    pa.n_heads = static_cast<int>(width / kv.head_dim), pa.n_kv_heads = static_cast<int>(kv.n_kv_heads);
    pa.head_dim = static_cast<int>(kv.head_dim);
    pa.q_stride = width, pa.out_stride = width;
    pa.scale = scale;
    const size_t ws = paged_attention_workspace(pa);
    cuda::paged_attention(pa, ws ? scratch(kAttnWs, ws) : nullptr, stream_);
    bf16_to_f32_2d(ob, rows, width, out);
  }

  // ---- Qwen3.5 family: F32 activations, parameters as exact F32 device copies (f32_param) ----
  void run_layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y) override {
    layer_norm_f32(x.f32(), x.stride, f32_param(w), f32_param(b), eps, x.rows, x.cols, y.f32(), y.stride, stream_);
  }
  void run_add_bias(const View& y, const Matrix& b) override {
    add_bias_f32(y.f32(), y.stride, f32_param(b), y.rows, y.cols, stream_);
  }
  void run_gelu_tanh(const View& x) override { gelu_tanh_f32(x.f32(), x.numel(), stream_); }
  void run_sigmoid_mul(const View& gate, const View& x, const View& out) override {
    sigmoid_mul_f32(gate.f32(), gate.stride, x.f32(), x.stride, out.f32(), out.stride, gate.rows, gate.cols, stream_);
  }

  // The step arrays as the kernels read them: the device copies, at run time (graph replays).
  static RecurrentBatch recurrent(const StateBatch& b) {
    RecurrentBatch r;
    r.cu_q = b.cu_q, r.slots = b.slots, r.fresh = b.fresh;
    r.n_seqs = static_cast<int>(b.n_seqs);
    r.max_q = static_cast<int>(b.max_q);
    return r;
  }

  void run_conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b,
                       const View& out) override {
    LOCR_CHECK(w.cols <= kConvMaxKernel, "backend cuda: conv1d_silu with a kernel of ", w.cols, " (at most ",
               kConvMaxKernel, ")");
    conv1d_silu_f32(x.f32(), x.stride, f32_param(w), w.rows, static_cast<int>(w.cols), state.f32(), recurrent(b),
                    out.f32(), out.stride, stream_);
  }

  void run_gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                           const Matrix& a_log, const Matrix& dt_bias, const View& state, const StateBatch& b,
                           const DeltaNetParams& p, const View& out) override {
    LOCR_CHECK(p.k_dim <= kDeltaNetMaxKeyDim, "backend cuda: gated_delta_net with k_dim ", p.k_dim, " (at most ",
               kDeltaNetMaxKeyDim, ")");
    GatedDeltaNet g;
    g.q = q.f32(), g.k = k.f32(), g.v = v.f32(), g.a = a.f32(), g.b = beta_in.f32(), g.out = out.f32();
    g.q_stride = q.stride, g.k_stride = k.stride, g.v_stride = v.stride, g.a_stride = a.stride;
    g.b_stride = beta_in.stride, g.out_stride = out.stride;
    g.a_log = f32_param(a_log), g.dt_bias = f32_param(dt_bias);
    g.state = state.f32();
    g.rows = q.rows;
    g.n_k_heads = static_cast<int>(p.n_k_heads), g.n_v_heads = static_cast<int>(p.n_v_heads);
    g.tiled = p.tiled ? 1 : 0;
    g.k_dim = static_cast<int>(p.k_dim), g.v_dim = static_cast<int>(p.v_dim);
    g.l2_eps = p.l2_eps;
    cuda::gated_delta_net(g, recurrent(b), scratch(kGdn, gated_delta_net_workspace(g)), stream_);
  }

  void run_patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out) override {
    // Merged rows feed the merging GEMM, which reads BF16: rounding first changes nothing.
    const int64_t n_in = in.numel(), n_out = out.numel();
    bf16* ib = scratch_bf16(kX, n_in);
    bf16* ob = scratch_bf16(kOut, n_out);
    f32_to_bf16(in.f32(), ib, n_in, stream_);
    cuda::patch_merge(ib, grid_h, grid_w, in.cols, m, ob, stream_);
    bf16_to_f32(ob, out.f32(), n_out, stream_);
  }

 private:
  enum ScratchSlot { kX, kQ, kOut, kKv, kCu, kAttnWs, kW, kTmp, kXf, kGdn, kSlots };

  // Quantized weights: up to kQuantGemvMaxRows rows by the GEMV kernel (weights decoded in
  // registers, F32 activations, F32 sums); more by cuBLASLt on BF16 inputs, the weight dequantized
  // to BF16 a chunk of rows at a time (at most kDequantChunk weights of scratch) and x rounded to
  // BF16, as for a BF16 weight.
  static constexpr int64_t kDequantChunk = int64_t{8} << 20;
  void matmul_quantized(const View& x, const DeviceMatrix& d, const View& y) {
    const int64_t K = d.cols, N = d.rows, M = x.rows;
    if (M <= kQuantGemvMaxRows) {  // contiguous rows in and out (through scratch when strided)
      const float* xc = x.f32();
      if (!x.contiguous()) {
        float* t = f32_scratch(kXf, x.numel());
        copy_rows(x.f32(), x.stride, M, K, t, K);
        xc = t;
      }
      float* yc = y.contiguous() ? y.f32() : f32_scratch(kTmp, y.numel());
      quant_gemv(d.dtype, d.buf.get(), N, K, xc, M, yc, stream_);
      if (yc != y.f32()) copy_rows(yc, N, M, N, y.f32(), y.stride);
      return;
    }
    const bf16* xb = to_bf16_scratch(kX, x);
    const int64_t chunk = std::min(N, std::max<int64_t>(64, kDequantChunk / K));
    bf16* wb = scratch_bf16(kW, chunk * K);
    const int64_t row_bytes = dtype_row_bytes(d.dtype, K);
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nc = std::min(chunk, N - n0);
      dequantize_to_bf16(d.dtype, d.buf.as<const uint8_t>() + n0 * row_bytes, nc, K, wb, stream_);
      gemm_.run(xb, M, K, K, wb, nc, K, y.f32() + n0, false, y.stride, false, stream_);
    }
  }

  // Grow-only scratch per slot. Growing reallocates (after the queued work that may read the old
  // buffer): the decode graphs are captured after an eager run of the same shapes, so a replay
  // never sees a reallocation.
  void* scratch(int slot, size_t bytes) {
    DeviceBuffer& b = scratch_[slot];
    if (b.bytes() < bytes) {
      cuda::synchronize(stream_);
      b = DeviceBuffer(bytes);
      ++scratch_generation_;
    }
    return b.get();
  }
  bf16* scratch_bf16(int slot, int64_t n) {
    return static_cast<bf16*>(scratch(slot, static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(bf16)));
  }

  // The device copy a matmul reads: the one prepare attached (the host data may be gone since), or
  // the one uploaded at first use.
  std::shared_ptr<DeviceMatrix> weight(const Matrix& w) {
    if (own(w)) return std::static_pointer_cast<DeviceMatrix>(w.packed);
    return device(w);
  }
  // A weight read as BF16 by a kernel of its own (norm weights, the embedding table).
  std::shared_ptr<DeviceMatrix> bf16_weight(const Matrix& w, const char* op) {
    std::shared_ptr<DeviceMatrix> d = weight(w);
    if (quantized(d->dtype))
      fail(ErrorKind::kUnsupported, "backend cuda: ", op, " reads F32, F16 or BF16 weights, not ", dtype_name(d->dtype));
    return d;
  }
  // w.packed is a device copy made by this backend (not another backend's packing): one of ours
  // that is alive (w.packed may hold it) sits at that address.
  bool own(const Matrix& w) {
    if (!w.packed) return false;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploaded_.find(w.packed.get());
    return it != uploaded_.end() && !it->second.expired();
  }

  // The device copy of a weight, uploaded at its first use (or at prepare) and kept for the life
  // of the backend; keyed by the host data it was made from, while that data lives (a loader may
  // free a prepared weight's buffer, and a later one may get the same address).
  std::shared_ptr<DeviceMatrix> device(const Matrix& w) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = weights_.find(w.data);
    if (it != weights_.end() && it->second.host_gone()) {
      weights_.erase(it);  // its device copy lives on while a prepared Matrix holds it
    } else if (it != weights_.end()) {
      const DeviceMatrix& d = *it->second.dev;
      LOCR_CHECK(d.rows == w.rows && d.cols == w.cols && d.dtype == device_dtype(w.dtype),
                 "backend cuda: weight shape changed");
      return it->second.dev;
    }
    LOCR_CHECK(w.data, "backend cuda: a weight without host data that this backend did not prepare");
    auto d = std::make_shared<DeviceMatrix>();
    d->rows = w.rows, d->cols = w.cols, d->dtype = device_dtype(w.dtype);
    if (quantized(w.dtype)) {  // the GGUF blocks as they are
      const size_t bytes = static_cast<size_t>(w.rows * dtype_row_bytes(w.dtype, w.cols));
      d->buf = DeviceBuffer(bytes);
      copy_to_device(d->buf.get(), w.data, bytes, stream_);
    } else {
      const std::vector<uint16_t> h = to_bf16(w);
      d->buf = DeviceBuffer(h.size() * sizeof(uint16_t));
      copy_to_device(d->buf.get(), h.data(), h.size() * sizeof(uint16_t), stream_);
    }
    cuda::synchronize(stream_);  // the host copy is pageable and may go out of scope
    weights_[w.data] = Uploaded{d, w.holder, w.holder != nullptr};
    uploaded_[d.get()] = d;
    return d;
  }
  static DType device_dtype(DType t) { return quantized(t) ? t : DType::kBF16; }

  // A parameter vector or small weight (norm weights and biases of the Qwen3.5 family, conv taps,
  // A_log, dt_bias) as F32 on the device: from the host data exactly as Matrix::at reads it, or,
  // for a weight prepare() uploaded whose host copy is gone, widened from that BF16 device copy.
  // Made at first use and kept while its source lives (keyed like device()).
  const float* f32_param(const Matrix& w) {
    const int64_t n = w.rows * w.cols;
    std::shared_ptr<DeviceMatrix> prepared;
    if (w.data == nullptr) {
      LOCR_CHECK(own(w), "backend cuda: a parameter without host data that this backend did not prepare");
      prepared = std::static_pointer_cast<DeviceMatrix>(w.packed);
      LOCR_CHECK(prepared->dtype == DType::kBF16 && prepared->rows * prepared->cols == n,
                 "backend cuda: parameter of ", dtype_name(prepared->dtype), " on the device");
    }
    const void* key = prepared ? static_cast<const void*>(prepared.get()) : w.data;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = params_.find(key);
    if (it != params_.end() && !it->second.source_gone() && it->second.n == n) return it->second.buf->as<float>();
    auto buf = std::make_shared<DeviceBuffer>(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float));
    Param param{buf, {}, false, n};
    if (prepared) {
      bf16_to_f32(prepared->buf.as<const bf16>(), buf->as<float>(), n, stream_);
      param.source = prepared;
      param.had_source = true;
    } else {
      std::vector<float> h(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) h[i] = w.at(i / w.cols, i % w.cols);
      copy_to_device(buf->get(), h.data(), h.size() * sizeof(float), stream_);
      cuda::synchronize(stream_);  // `h` is pageable and goes out of scope
      param.source = w.holder;
      param.had_source = w.holder != nullptr;
    }
    params_[key] = param;
    return buf->as<float>();
  }
  struct Param {
    std::shared_ptr<DeviceBuffer> buf;
    std::weak_ptr<void> source;  // the host data's owner, or the prepared device copy
    bool had_source = false;
    int64_t n = 0;
    bool source_gone() const { return had_source && source.expired(); }
  };

  struct Uploaded {
    std::shared_ptr<DeviceMatrix> dev;
    std::weak_ptr<void> holder;  // the host data's owner, when it had one
    bool had_holder = false;
    bool host_gone() const { return had_holder && holder.expired(); }
  };

  Stream stream_;
  Gemm gemm_;
  DeviceBuffer scratch_[kSlots];
  uint64_t scratch_generation_ = 0;
  std::mutex mu_;
  std::unordered_map<const void*, Uploaded> weights_;
  // Every device copy made here, by address (own() never takes another object at a freed address for
  // one of ours: the entry of a freed copy has expired).
  std::unordered_map<const void*, std::weak_ptr<DeviceMatrix>> uploaded_;
  std::unordered_map<const void*, Param> params_;  // f32_param's copies, by source address
};

}  // namespace

std::unique_ptr<Ops> make_cuda_ops() {
  std::string why;
  if (!available(&why)) fail(ErrorKind::kUnsupported, "backend cuda: ", why);
  return std::make_unique<CudaOps>();
}

CUstream_st* ops_stream(Ops& ops) {
  auto* c = dynamic_cast<CudaOps*>(&ops);
  LOCR_CHECK(c, "ops_stream of backend ", ops.name());
  return c->stream();
}

}  // namespace locr::kernels::cuda
