// Element-wise kernels of the CUDA backend: F32 <-> BF16 conversions, SiLU-gated product of the
// stacked gate/up GEMM output, exact (erf) GELU, and the F32 += BF16 residual add. All arithmetic
// in F32, one rounding to BF16 at the store (transformers rounds after each BF16 op; ours is the
// more accurate of the two, see docs/numerics.md). Grid-stride loops with 64-bit indices.
// Not here: norms (norm.cu), RoPE (rope.cu).
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

__global__ void f32_to_bf16_kernel(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = f32_to_bf16_bits(x[i]);
}

__global__ void bf16_to_f32_kernel(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = bf16_bits_to_f32(x[i]);
}

__global__ void silu_mul_kernel(const uint16_t* gate_up, int64_t rows, int64_t inter, uint16_t* out) {
  const int64_t n = rows * inter;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / inter, c = i - r * inter;
    const float g = load_bf16(gate_up + r * 2 * inter + c);
    const float u = load_bf16(gate_up + r * 2 * inter + inter + c);
    store_bf16(out + i, (g / (1.0f + expf(-g))) * u);
  }
}

__global__ void gelu_kernel(uint16_t* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = load_bf16(x + i);
    // 0.5 x (1 + erf(x / sqrt2)) written as 0.5 x erfc(-x / sqrt2): no cancellation for x < 0.
    store_bf16(x + i, 0.5f * v * erfcf(-v * 0.70710678118654752f));
  }
}

__global__ void add_f32_bf16_kernel(float* y, const uint16_t* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += bf16_bits_to_f32(x[i]);
}

}  // namespace

void f32_to_bf16(const float* x, bf16* y, int64_t n, Stream s) {
  if (n <= 0) return;
  f32_to_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, y, n);
  LOCR_CUDA_LAUNCHED("f32_to_bf16");
}

void bf16_to_f32(const bf16* x, float* y, int64_t n, Stream s) {
  if (n <= 0) return;
  bf16_to_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, y, n);
  LOCR_CUDA_LAUNCHED("bf16_to_f32");
}

void silu_mul(const bf16* gate_up, int64_t rows, int64_t inter, bf16* out, Stream s) {
  if (rows <= 0 || inter <= 0) return;
  silu_mul_kernel<<<grid_for(rows * inter, kThreads), kThreads, 0, s>>>(gate_up, rows, inter, out);
  LOCR_CUDA_LAUNCHED("silu_mul");
}

void gelu(bf16* x, int64_t n, Stream s) {
  if (n <= 0) return;
  gelu_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, n);
  LOCR_CUDA_LAUNCHED("gelu");
}

void add_f32_bf16(float* y, const bf16* x, int64_t n, Stream s) {
  if (n <= 0) return;
  add_f32_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(y, x, n);
  LOCR_CUDA_LAUNCHED("add_f32_bf16");
}

}  // namespace locr::kernels::cuda
