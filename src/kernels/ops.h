// Backend-neutral kernel interface. The model code calls only these; backends implement them:
//   ref/  scalar oracle (never optimised; the source of truth for tests)
//   cpu/  fast CPU kernels, per-ISA, chosen once at start-up
//   cuda/ NVIDIA GPUs
//
// Conventions: activations are F32, row-major, contiguous unless a stride is given. Weights stay
// in their checkpoint dtype (F32, BF16 or F16) as `Matrix` views; a backend may attach a packed
// copy once at load (`prepare`). Kernels never throw; broken invariants abort via LOCR_CHECK.
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
};

// "ref" (scalar oracle) or "cpu" (fast, best ISA of this machine).
std::unique_ptr<Ops> make_ops(const std::string& backend);

}  // namespace locr::kernels
