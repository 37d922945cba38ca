// Quantized weights on the CUDA backend (cuda_api.h quant_gemv, dequantize_to_bf16): GGUF Q8_0, Q4_K
// and Q6_K rows kept in their blocks on the device.
//   - quant_gemv (decode, M <= kQuantGemvMaxRows): one warp per weight row; lane l decodes units
//     l, l + 32, ... of 32 weights into registers (quant_blocks.h) and runs F32 FMA chains against
//     the F32 activations; the lanes are added by a shuffle tree. Nothing is rounded but the F32
//     sums: the weights decode exactly, the activations are used as given.
//   - dequantize_to_bf16 (prefill and vision, many rows): one thread per unit writes its 32 weights
//     as BF16 (nearest even), for a cuBLASLt GEMM on BF16 inputs (the caller's, cuda_ops.cc);
//   - embed_quantized: a quantized embedding table's rows, one thread per unit, exact F32.
// The kernel bodies are quant_blocks.h's host-device functions, which the host tests emulate.
// Not here: the choice between the two (cuda_ops.cc), the CPU's integer kernels (kernels/cpu).
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/quant_blocks.h"

namespace locr::kernels::cuda {

namespace detail {
namespace {

constexpr int kGemvWarps = 4;  // weight rows per block of 128 threads

template <DType T>
__global__ void __launch_bounds__(kGemvWarps * 32)
    quant_gemv_kernel(const uint8_t* w, int64_t N, int64_t K, int64_t w_row_bytes, const float* x, int M, float* y) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;
  if (n >= N) return;  // the whole warp leaves (n depends on the warp only): the shuffles below see 32 lanes
  float acc[kQuantGemvMaxRows];
  quant::gemv_lane<T, kQuantGemvMaxRows>(w + n * w_row_bytes, K / quant::kUnit, x, K, M, lane, acc);
#pragma unroll
  for (int m = 0; m < kQuantGemvMaxRows; ++m) {
    if (m >= M) break;  // uniform over the warp
    const float s = warp_sum(acc[m]);
    if (lane == 0) y[static_cast<int64_t>(m) * N + n] = s;
  }
}

template <DType T>
__global__ void dequantize_bf16_kernel(const uint8_t* w, int64_t units, int64_t units_per_row, int64_t w_row_bytes,
                                       uint16_t* out) {
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < units;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x)
    quant::dequantize_unit_bf16<T>(w, units_per_row, w_row_bytes, g, out);
}

template <DType T>
__global__ void embed_quantized_kernel(const uint8_t* table, int64_t units, int64_t units_per_row,
                                       int64_t table_row_bytes, const int32_t* ids, float* out) {
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < units;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x)
    quant::embed_unit<T>(table, units_per_row, table_row_bytes, ids, g, out);
}

void check_quant(DType t, int64_t K, const char* what) {
  if (t != DType::kQ8_0 && t != DType::kQ4_K && t != DType::kQ6_K)
    fail(ErrorKind::kInternal, what, ": ", dtype_name(t), " is not a quantized weight type (Q8_0, Q4_K, Q6_K)");
  if (K <= 0 || K % quant::block_weights(t) != 0)
    fail(ErrorKind::kInternal, what, ": rows of ", K, " weights are not whole ", dtype_name(t), " blocks");
}

template <DType T>
void launch_gemv(const void* w, int64_t N, int64_t K, const float* x, int M, float* y, Stream s) {
  const int64_t blocks = ceil_div(N, kGemvWarps);
  quant_gemv_kernel<T><<<static_cast<unsigned>(blocks), kGemvWarps * 32, 0, s>>>(
      static_cast<const uint8_t*>(w), N, K, quant::row_bytes(T, K), x, M, y);
  LOCR_CUDA_LAUNCHED("quant_gemv_kernel");
}

template <DType T>
void launch_dequantize(const void* w, int64_t N, int64_t K, uint16_t* out, Stream s) {
  constexpr int kThreads = 256;
  const int64_t upr = K / quant::kUnit, units = N * upr;
  dequantize_bf16_kernel<T><<<grid_for(units, kThreads), kThreads, 0, s>>>(static_cast<const uint8_t*>(w), units, upr,
                                                                           quant::row_bytes(T, K), out);
  LOCR_CUDA_LAUNCHED("dequantize_bf16_kernel");
}

template <DType T>
void launch_embed(const void* table, int64_t dim, const int32_t* ids, int64_t n, float* out, Stream s) {
  constexpr int kThreads = 256;
  const int64_t upr = dim / quant::kUnit, units = n * upr;
  embed_quantized_kernel<T><<<grid_for(units, kThreads), kThreads, 0, s>>>(static_cast<const uint8_t*>(table), units,
                                                                            upr, quant::row_bytes(T, dim), ids, out);
  LOCR_CUDA_LAUNCHED("embed_quantized_kernel");
}

}  // namespace
}  // namespace detail

void quant_gemv(DType t, const void* w, int64_t N, int64_t K, const float* x, int64_t M, float* y, Stream s) {
  detail::check_quant(t, K, "quant_gemv");
  if (M < 0 || M > kQuantGemvMaxRows)
    fail(ErrorKind::kInternal, "quant_gemv: ", M, " activation rows (at most ", kQuantGemvMaxRows, ")");
  if (M == 0 || N <= 0) return;
  const int m = static_cast<int>(M);
  if (t == DType::kQ8_0) detail::launch_gemv<DType::kQ8_0>(w, N, K, x, m, y, s);
  else if (t == DType::kQ4_K) detail::launch_gemv<DType::kQ4_K>(w, N, K, x, m, y, s);
  else detail::launch_gemv<DType::kQ6_K>(w, N, K, x, m, y, s);
}

void dequantize_to_bf16(DType t, const void* w, int64_t N, int64_t K, bf16* out, Stream s) {
  detail::check_quant(t, K, "dequantize_to_bf16");
  if (N <= 0) return;
  if (t == DType::kQ8_0) detail::launch_dequantize<DType::kQ8_0>(w, N, K, out, s);
  else if (t == DType::kQ4_K) detail::launch_dequantize<DType::kQ4_K>(w, N, K, out, s);
  else detail::launch_dequantize<DType::kQ6_K>(w, N, K, out, s);
}

void embed_quantized(DType t, const void* table, int64_t dim, const int32_t* ids, int64_t n, float* out, Stream s) {
  detail::check_quant(t, dim, "embed_quantized");
  if (n <= 0) return;
  if (t == DType::kQ8_0) detail::launch_embed<DType::kQ8_0>(table, dim, ids, n, out, s);
  else if (t == DType::kQ4_K) detail::launch_embed<DType::kQ4_K>(table, dim, ids, n, out, s);
  else detail::launch_embed<DType::kQ6_K>(table, dim, ids, n, out, s);
}

}  // namespace locr::kernels::cuda
