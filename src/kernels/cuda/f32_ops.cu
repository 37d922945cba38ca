// The F32-activation kernels behind the CUDA backend's kernels::Ops (kernels/cuda/cuda_ops.h):
// the model's forward pass keeps activations in F32 on every backend; GEMM inputs and the KV cache
// are rounded to BF16 where they are consumed (cuda_ops.cc). RMSNorm (rows, or heads of rows as
// rows of head_dim), table RoPE, SiLU-gated product, exact GELU, residual add. All arithmetic in
// F32; x and y of rms_norm_f32 may alias (each thread writes only what it read). Grid-stride loops
// with 64-bit indices. The oracle is kernels/ref (tests/cuda/f32_ops_test.cc).
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

// One block per group: group g of row g / groups at column (g % groups) * dim.
__global__ void rms_norm_f32_kernel(const float* x, int64_t x_stride, const uint16_t* w, float eps, int64_t groups,
                                    int64_t dim, float* y, int64_t y_stride) {
  __shared__ float scratch[33];
  const int64_t r = blockIdx.x / groups, g = blockIdx.x % groups;
  const float* xr = x + r * x_stride + g * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(dim) + eps);
  float* yr = y + r * y_stride + g * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = (xr[i] * inv) * load_bf16(w + i);
}

__global__ void rope_table_f32_kernel(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride,
                                      const float* cos_t, const float* sin_t) {
  const int64_t half = head_dim / 2;
  const int64_t n = rows * n_heads * half;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = i % half, rh = i / half, h = rh % n_heads, r = rh / n_heads;
    float* xh = x + r * stride + h * head_dim;
    const float c = cos_t[r * half + d], sn = sin_t[r * half + d];
    const float a = xh[d], b = xh[d + half];
    xh[d] = a * c - b * sn;
    xh[d + half] = b * c + a * sn;
  }
}

__global__ void silu_mul_f32_kernel(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                                    float* out, int64_t out_stride, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    const float g = gate[r * gate_stride + c];
    out[r * out_stride + c] = (g / (1.0f + expf(-g))) * up[r * up_stride + c];
  }
}

__global__ void f32_to_bf16_2d_kernel(const float* x, int64_t ldx, int64_t rows, int64_t cols, uint16_t* y) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store_bf16(y + i, x[(i / cols) * ldx + i % cols]);
}

__global__ void gelu_f32_kernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    x[i] = 0.5f * v * erfcf(-v * 0.70710678118654752f);  // 0.5 x (1 + erf(x / sqrt2)), no cancellation
  }
}

__global__ void add_f32_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

}  // namespace

void rms_norm_f32(const float* x, int64_t x_stride, const bf16* w, float eps, int64_t rows, int64_t groups,
                  int64_t dim, float* y, int64_t y_stride, Stream s) {
  if (rows <= 0 || groups <= 0 || dim <= 0) return;
  rms_norm_f32_kernel<<<static_cast<unsigned>(rows * groups), kThreads, 0, s>>>(x, x_stride, w, eps, groups, dim, y,
                                                                                y_stride);
  LOCR_CUDA_LAUNCHED("rms_norm_f32");
}

void rope_table_f32(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
                    const float* sin, Stream s) {
  const int64_t n = rows * n_heads * (head_dim / 2);
  if (n <= 0) return;
  rope_table_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, rows, n_heads, head_dim, stride, cos, sin);
  LOCR_CUDA_LAUNCHED("rope_table_f32");
}

void silu_mul_f32(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                  int64_t out_stride, int64_t rows, int64_t cols, Stream s) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  silu_mul_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(gate, gate_stride, up, up_stride, out, out_stride,
                                                                 rows, cols);
  LOCR_CUDA_LAUNCHED("silu_mul_f32");
}

void f32_to_bf16_2d(const float* x, int64_t ldx, int64_t rows, int64_t cols, bf16* y, Stream s) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  f32_to_bf16_2d_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, ldx, rows, cols, y);
  LOCR_CUDA_LAUNCHED("f32_to_bf16_2d");
}

void gelu_f32(float* x, int64_t n, Stream s) {
  if (n <= 0) return;
  gelu_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, n);
  LOCR_CUDA_LAUNCHED("gelu_f32");
}

void add_f32(float* y, const float* x, int64_t n, Stream s) {
  if (n <= 0) return;
  add_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(y, x, n);
  LOCR_CUDA_LAUNCHED("add_f32");
}

}  // namespace locr::kernels::cuda
