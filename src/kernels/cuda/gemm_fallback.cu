// A plain tiled GEMM for the shapes cuBLASLt declines (its heuristic can return no algorithm for
// some misaligned pointers or odd strides): Y[M, N] = X[M, K] · W[N, K]^T (+ Y), BF16 inputs,
// F32 accumulation, F32 or BF16 output, any strides. 16 x 16 output tiles, one output per thread,
// K in steps of 16 through shared memory. Correct for every shape, not fast; gemm.cc uses it only
// when cuBLASLt has no algorithm. Also: the kernel-image probe used by available().
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda::detail {

namespace {

constexpr int kT = 16;

__global__ void gemm_fallback_kernel(const uint16_t* x, int64_t M, int64_t K, int64_t ldx, const uint16_t* w,
                                     int64_t N, int64_t ldw, void* y, bool y_bf16, int64_t ldy, bool accumulate) {
  __shared__ float xs[kT][kT + 1];
  __shared__ float ws[kT][kT + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * kT + ty;  // output row
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kT + tx;  // output column
  const int64_t wn = static_cast<int64_t>(blockIdx.x) * kT + ty;  // the W row this thread loads
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < K; k0 += kT) {
    xs[ty][tx] = (m < M && k0 + tx < K) ? bf16_bits_to_f32(x[m * ldx + k0 + tx]) : 0.0f;
    ws[ty][tx] = (wn < N && k0 + tx < K) ? bf16_bits_to_f32(w[wn * ldw + k0 + tx]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kT; ++kk) acc += xs[ty][kk] * ws[tx][kk];
    __syncthreads();
  }
  if (m >= M || n >= N) return;
  if (y_bf16) {
    uint16_t* yp = static_cast<uint16_t*>(y) + m * ldy + n;
    *yp = f32_to_bf16_bits(accumulate ? acc + bf16_bits_to_f32(*yp) : acc);
  } else {
    float* yp = static_cast<float*>(y) + m * ldy + n;
    *yp = accumulate ? acc + *yp : acc;
  }
}

__global__ void probe_kernel() {}

}  // namespace

void gemm_fallback(const uint16_t* x, int64_t M, int64_t K, int64_t ldx, const uint16_t* w, int64_t N, int64_t ldw,
                   void* y, bool y_bf16, int64_t ldy, bool accumulate, Stream s) {
  const dim3 grid(static_cast<unsigned>(ceil_div(N, kT)), static_cast<unsigned>(ceil_div(M, kT)));
  gemm_fallback_kernel<<<grid, dim3(kT, kT), 0, s>>>(x, M, K, ldx, w, N, ldw, y, y_bf16, ldy, accumulate);
  LOCR_CUDA_LAUNCHED("gemm_fallback");
}

// cudaSuccess when this library holds code the current device can run.
cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr{};
  const cudaError_t err = cudaFuncGetAttributes(&attr, probe_kernel);
  if (err != cudaSuccess) cudaGetLastError();
  return err;
}

}  // namespace locr::kernels::cuda::detail
