// RMSNorm kernels of the CUDA backend: rms_norm (F32 rows -> BF16), add_rms_norm (F32 residual
// += BF16 delta, then norm), head_rms_norm (Qwen3 q_norm/k_norm, BF16 in place per head).
// Statistics in F32: y = bf16((x * rsqrt(mean(x^2) + eps)) * w), one rounding at the store.
// rms_norm/add_rms_norm: one block per row; head_rms_norm: one warp per (row, head).
// Not here: LayerNorm (the model has none).
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kRowThreads = 256;

// delta == nullptr: plain norm of x (x is not written). Otherwise x[r] += delta[r] first.
__global__ void add_rms_norm_kernel(float* x, int64_t x_stride, const uint16_t* delta, int64_t delta_stride,
                                    const uint16_t* w, float eps, int64_t dim, uint16_t* y, int64_t y_stride) {
  __shared__ float scratch[33];
  const int64_t r = blockIdx.x;
  float* xr = x + r * x_stride;
  float ss = 0.0f;
  if (delta) {
    const uint16_t* dr = delta + r * delta_stride;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      const float v = xr[i] + bf16_bits_to_f32(dr[i]);
      xr[i] = v;  // read back below by this same thread only
      ss += v * v;
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      const float v = xr[i];
      ss += v * v;
    }
  }
  ss = block_sum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(dim) + eps);
  uint16_t* yr = y + r * y_stride;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = f32_to_bf16_bits((xr[i] * inv) * load_bf16(w + i));
}

__global__ void head_rms_norm_kernel(uint16_t* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride,
                                     const uint16_t* w, float eps) {
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= rows * n_heads) return;  // whole warps leave together (blockDim is a multiple of 32)
  const int64_t r = warp / n_heads, h = warp - r * n_heads;
  uint16_t* xh = x + r * stride + h * head_dim;
  float ss = 0.0f;
  for (int64_t d = lane; d < head_dim; d += 32) {
    const float v = load_bf16(xh + d);
    ss += v * v;
  }
  ss = warp_sum(ss);
  const float inv = rsqrtf(ss / static_cast<float>(head_dim) + eps);
  for (int64_t d = lane; d < head_dim; d += 32) xh[d] = f32_to_bf16_bits((load_bf16(xh + d) * inv) * load_bf16(w + d));
}

}  // namespace

void rms_norm(const float* x, int64_t x_stride, const bf16* w, float eps, int64_t rows, int64_t dim, bf16* y,
              int64_t y_stride, Stream s) {
  if (rows <= 0 || dim <= 0) return;
  // The kernel only reads x when delta is null.
  add_rms_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, s>>>(const_cast<float*>(x), x_stride, nullptr, 0,
                                                                         w, eps, dim, y, y_stride);
  LOCR_CUDA_LAUNCHED("rms_norm");
}

void add_rms_norm(float* x, const bf16* delta, int64_t delta_stride, const bf16* w, float eps, int64_t rows,
                  int64_t dim, bf16* y, Stream s) {
  if (rows <= 0 || dim <= 0) return;
  add_rms_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, s>>>(x, dim, delta, delta_stride, w, eps, dim, y,
                                                                         dim);
  LOCR_CUDA_LAUNCHED("add_rms_norm");
}

void head_rms_norm(bf16* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const bf16* w, float eps,
                   Stream s) {
  if (rows <= 0 || n_heads <= 0 || head_dim <= 0) return;
  constexpr int kThreads = 256;  // 8 warps, one (row, head) each
  const int64_t warps = rows * n_heads;
  head_rms_norm_kernel<<<static_cast<unsigned>(detail::ceil_div(warps, kThreads / 32)), kThreads, 0, s>>>(
      x, rows, n_heads, head_dim, stride, w, eps);
  LOCR_CUDA_LAUNCHED("head_rms_norm");
}

}  // namespace locr::kernels::cuda
