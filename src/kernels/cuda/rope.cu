// Rotate-half RoPE of the CUDA backend, in place on BF16 rows of heads: rope_1d (the decoder:
// angle = position * inv_freq, both F32 as transformers computes them) and rope_table (the vision
// encoder's 2-D RoPE from F32 cos/sin tables [rows, head_dim/2]). One thread per rotated pair
// (x[d], x[d + half]); the rotation is done in F32 and rounded to BF16 once per output.
// inv_freq = 1 / pow(theta, 2d/head_dim) rounded to F32 as a correctly rounded powf would (pow in
// double, then to float), matching model/rope.cc's std::pow(float, float) to the last bit in
// practice. Not here: building the vision tables (model code, on the host).
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

__device__ __forceinline__ void rotate(uint16_t* xh, int64_t d, int64_t half, float c, float sn) {
  const float a = load_bf16(xh + d), b = load_bf16(xh + d + half);
  xh[d] = f32_to_bf16_bits(a * c - b * sn);
  xh[d + half] = f32_to_bf16_bits(b * c + a * sn);
}

__global__ void rope_1d_kernel(uint16_t* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride,
                               const int32_t* positions, float theta) {
  const int64_t half = head_dim / 2;
  const int64_t n = rows * n_heads * half;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = i % half, rh = i / half, h = rh % n_heads, r = rh / n_heads;
    const float e = static_cast<float>(2 * d) / static_cast<float>(head_dim);
    const float p = static_cast<float>(pow(static_cast<double>(theta), static_cast<double>(e)));
    const float inv_freq = 1.0f / p;
    const float angle = static_cast<float>(positions[r]) * inv_freq;
    float sn, c;
    sincosf(angle, &sn, &c);
    rotate(x + r * stride + h * head_dim, d, half, c, sn);
  }
}

__global__ void rope_table_kernel(uint16_t* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride,
                                  const float* cos_t, const float* sin_t) {
  const int64_t half = head_dim / 2;
  const int64_t n = rows * n_heads * half;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = i % half, rh = i / half, h = rh % n_heads, r = rh / n_heads;
    rotate(x + r * stride + h * head_dim, d, half, cos_t[r * half + d], sin_t[r * half + d]);
  }
}

}  // namespace

void rope_1d(bf16* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* positions,
             float theta, Stream s) {
  const int64_t n = rows * n_heads * (head_dim / 2);
  if (n <= 0) return;
  rope_1d_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, rows, n_heads, head_dim, stride, positions, theta);
  LOCR_CUDA_LAUNCHED("rope_1d");
}

void rope_table(bf16* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
                const float* sin, Stream s) {
  const int64_t n = rows * n_heads * (head_dim / 2);
  if (n <= 0) return;
  rope_table_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, rows, n_heads, head_dim, stride, cos, sin);
  LOCR_CUDA_LAUNCHED("rope_table");
}

}  // namespace locr::kernels::cuda
