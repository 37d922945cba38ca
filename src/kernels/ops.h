// Backend-neutral kernel interface. The model code calls only these; backends implement them:
//   ref/  scalar oracle (never optimised; the source of truth for tests)
//   cpu/  fast CPU kernels, per-ISA, chosen once at start-up
//   cuda/ NVIDIA GPUs
//
// Conventions: activations are F32, row-major, contiguous unless a stride is given. Weights stay
// in their checkpoint dtype (F32, BF16 or F16) as `Matrix` views; a backend may attach a packed
// copy once at load (`prepare`). Kernels never throw; broken invariants abort via LOCR_CHECK.
// Memory: every activation, KV and step-input pointer handed to an op lives in the backend's own
// memory (`alloc`): host memory for ref/cpu, device memory for CUDA. The model allocates through
// `alloc` and copies through `to_host` / `from_host`, so the same forward runs on every backend.
// Ops with a default here (kv_store, paged_attention, add_rms_norm, patch_merge) are composed of
// the primitive ops or run on the host; a device backend overrides them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/tensor.h"

namespace locr::kernels {

// A weight matrix [rows, cols] (PyTorch Linear layout [out, in]) or a vector (rows == 1).
struct Matrix {
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;
  std::shared_ptr<void> holder;  // keeps `data` alive (mmap or buffer)
  std::shared_ptr<void> packed;  // backend-specific prepared copy, or null

  static Matrix from_tensor(const Tensor& t);  // 1-D tensors become [1, n]
  // Element (r, c) as f32 (slow; for references and tests).
  float at(int64_t r, int64_t c) const;
};

struct AttentionParams {
  int64_t n_q = 0;           // query rows
  int64_t n_kv = 0;          // key/value rows
  int64_t n_heads = 0;       // query heads
  int64_t n_kv_heads = 0;    // key/value heads (GQA: head h uses kv head h / (n_heads / n_kv_heads))
  int64_t head_dim = 0;
  int64_t q_stride = 0;      // floats between consecutive query rows (>= n_heads * head_dim)
  int64_t kv_stride = 0;     // floats between consecutive key (and value) rows
  int64_t out_stride = 0;    // floats between consecutive output rows
  float scale = 1.0f;
  bool causal = false;       // query i sits at position q_offset + i; sees keys j <= q_offset + i
  int64_t q_offset = 0;
  // Paged KV: when block_table is set, key/value row j lives at row
  // block_table[j / block_size] * block_size + j % block_size of the k/v pools.
  const int32_t* block_table = nullptr;
  int64_t block_size = 0;
  // Element type of k and v: F32, BF16 for a BF16 KV cache (Ops::kv_dtype), or F8_E4M3 for an
  // FP8 one (--kv-cache-dtype fp8). q and out are F32.
  DType kv_dtype = DType::kF32;
  // F8_E4M3 only: one f32 scale per pool row and kv head (model::KvPool): key element
  // (row, kv head kh, d) is fp8_e4m3_to_f32(k[row * kv_stride + kh * head_dim + d]) *
  // k_scale[row * n_kv_heads + kh]; values likewise with v_scale.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;

  int64_t kv_row(int64_t j) const {
    return block_table ? static_cast<int64_t>(block_table[j / block_size]) * block_size + j % block_size : j;
  }
};

// One layer of the paged KV cache (model::KvPool::layer): rows of `width` = n_kv_heads * head_dim
// elements of `dtype` (F32, BF16, or F8_E4M3 with one f32 scale per row and kv head).
struct KvLayer {
  DType dtype = DType::kF32;
  void* k = nullptr;
  void* v = nullptr;
  float* k_scale = nullptr;  // F8_E4M3 only: [rows, n_kv_heads]
  float* v_scale = nullptr;
  int64_t n_kv_heads = 0, head_dim = 0;
  int64_t width() const { return n_kv_heads * head_dim; }
};

// The sequences of one decoder step for batched paged attention. Sequence i owns query rows
// cu_q[i] .. cu_q[i+1]-1, at positions seq_lens[i] - (cu_q[i+1] - cu_q[i]) .. seq_lens[i] - 1
// (their keys already stored), and its cache rows are listed by tables[i * max_blocks ...].
// The arrays live in backend memory; host_* are host copies of the same arrays (for backends that
// loop on the host, and for launch sizing; a device backend reads only the backend arrays at run
// time, so a captured graph replays with new contents at the same addresses).
struct PagedBatch {
  int64_t n_seqs = 0;
  const int32_t* cu_q = nullptr;      // [n_seqs + 1]
  const int32_t* seq_lens = nullptr;  // [n_seqs] keys per sequence after this step
  const int32_t* tables = nullptr;    // [n_seqs, max_blocks]
  const int32_t* host_cu_q = nullptr;
  const int32_t* host_seq_lens = nullptr;
  const int32_t* host_tables = nullptr;
  int64_t max_blocks = 0;
  int64_t block_size = 0;
  int64_t max_q = 0;        // longest query run (1: pure decode)
  int64_t max_seq_len = 0;  // longest seq_lens entry (device split-K sizing)
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual const char* name() const = 0;

  // Optional: attach a packed copy of a weight for faster matmul. Default does nothing.
  virtual void prepare(Matrix& w) {}

  // Element type this backend wants the decoder's KV cache in (attention reads it as given by
  // AttentionParams::kv_dtype). F32 unless the backend computes in BF16 anyway.
  virtual DType kv_dtype() const { return DType::kF32; }

  // y[M, N] = x[M, K] · W[N, K]^T.  x row stride K, y row stride N.
  virtual void matmul(const float* x, int64_t M, const Matrix& w, float* y) = 0;

  // y[r] = (x[r] / sqrt(mean(x[r]^2) + eps)) * w, for `rows` rows of length `dim` (w: [1, dim]).
  // x and y may alias.
  virtual void rms_norm(const float* x, const Matrix& w, float eps, int64_t rows, int64_t dim, float* y) = 0;

  // Rotate-half RoPE in place on `rows` rows of `n_heads` heads of `head_dim` (row stride `stride`):
  // for d < head_dim/2: (x[d], x[d+half]) rotated by angle a[r][d], given as cos/sin tables
  // [rows, head_dim/2].
  virtual void rope(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride,
                    const float* cos, const float* sin) = 0;

  // out[i] = silu(gate[i]) * up[i]  (n elements; out may alias gate).
  virtual void silu_mul(const float* gate, const float* up, float* out, int64_t n) = 0;
  // In place exact (erf) GELU.
  virtual void gelu(float* x, int64_t n) = 0;
  // y[i] += x[i]
  virtual void add(float* y, const float* x, int64_t n) = 0;

  // out = softmax(q k^T * scale [+ causal mask]) v per head; softmax in f32. k and v hold
  // p.kv_dtype elements (F32, BF16, or F8_E4M3 with p.k_scale / p.v_scale; the CPU backends).
  virtual void attention(const float* q, const void* k, const void* v, float* out, const AttentionParams& p) = 0;

  // out[i, :] = table[ids[i], :] converted to f32.
  virtual void embed(const Matrix& table, const int32_t* ids, int64_t n, float* out) = 0;

  // ---- Memory of this backend (host for ref/cpu) ----
  virtual bool host_memory() const { return true; }
  // `bytes` of backend memory, 64-byte aligned; contents undefined (host: committed on first touch).
  virtual std::shared_ptr<void> alloc(size_t bytes);
  virtual void to_host(void* host_dst, const void* src, size_t bytes);
  virtual void from_host(void* dst, const void* host_src, size_t bytes);
  // Waits for queued work (device backends run asynchronously).
  virtual void synchronize() {}
  // Counts reallocations of the backend's internal scratch: work captured for replay (a CUDA
  // graph) before the count last changed points at freed memory.
  virtual uint64_t scratch_generation() const { return 0; }

  // ---- Fused and batched ops (defaults: the primitive ops above, or host loops) ----
  // x[r] += delta[r]; y[r] = rms_norm(x[r]) * w (rows of dim; x, delta contiguous).
  virtual void add_rms_norm(float* x, const float* delta, const Matrix& w, float eps, int64_t rows, int64_t dim,
                            float* y);
  // Stores rows r < n of k and v (F32, row stride `stride`) into pool rows slots[r] of `kv`,
  // rounding to nearest even (BF16), or to E4M3 with each head's scale amax / 448 (F8_E4M3).
  virtual void kv_store(const float* k, const float* v, int64_t stride, const int32_t* slots, int64_t n,
                        const KvLayer& kv);
  // Causal attention of every sequence of `b` against its paged keys/values in `kv`:
  // q [rows, q_stride] -> out [rows, out_stride] (rows = b.host_cu_q[b.n_seqs]).
  virtual void paged_attention(const float* q, int64_t q_stride, const KvLayer& kv, const PagedBatch& b,
                               int64_t n_heads, float scale, float* out, int64_t out_stride);
  // The projector's channel-major m x m merge of one image (model::patch_merge).
  virtual void patch_merge(const float* in, int grid_h, int grid_w, int64_t d, int m, float* out);
};

// Host implementations behind the defaults (also the oracles the device versions are tested against).
void kv_store_host(const float* k, const float* v, int64_t stride, const int32_t* slots, int64_t n,
                   const KvLayer& kv);
void patch_merge_host(const float* in, int grid_h, int grid_w, int64_t d, int m, float* out);

// "ref" (scalar oracle), "cpu" / "cpu-bf16" / "cpu-f32" (fast, best ISA of this machine), or
// "cuda" (builds with -DLOCR_CUDA=ON, kernels/cuda/cuda_ops.h).
std::unique_ptr<Ops> make_ops(const std::string& backend);

}  // namespace locr::kernels
