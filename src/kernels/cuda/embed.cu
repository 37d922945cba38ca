// Row gathers/scatters of the CUDA backend: token embedding lookup (BF16 table -> F32 rows),
// scatter of image embeddings into prompt rows, and gather of the rows whose logits are needed.
// One block per row, threads over columns. Ids and row indices are trusted (the host checked them
// when it built the batch); nothing here bounds-checks against the table. Not here: the LM head.
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

__global__ void embed_kernel(const uint16_t* table, const int32_t* ids, int64_t dim, float* out) {
  const int64_t i = blockIdx.x;
  const uint16_t* src = table + static_cast<int64_t>(ids[i]) * dim;
  float* dst = out + i * dim;
  for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) dst[c] = bf16_bits_to_f32(src[c]);
}

// dst[dst_rows[i]] = src[i] (scatter) or dst[i] = src[src_rows[i]] (gather).
template <bool kScatter>
__global__ void move_rows_kernel(const float* src, const int32_t* rows, int64_t dim, float* dst) {
  const int64_t i = blockIdx.x;
  const int64_t s_row = kScatter ? i : static_cast<int64_t>(rows[i]);
  const int64_t d_row = kScatter ? static_cast<int64_t>(rows[i]) : i;
  const float* sp = src + s_row * dim;
  float* dp = dst + d_row * dim;
  for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) dp[c] = sp[c];
}

}  // namespace

void embed(const bf16* table, const int32_t* ids, int64_t n, int64_t dim, float* out, Stream s) {
  if (n <= 0 || dim <= 0) return;
  embed_kernel<<<static_cast<unsigned>(n), kThreads, 0, s>>>(table, ids, dim, out);
  LOCR_CUDA_LAUNCHED("embed");
}

void scatter_rows(const float* src, const int32_t* dst_rows, int64_t n, int64_t dim, float* dst, Stream s) {
  if (n <= 0 || dim <= 0) return;
  move_rows_kernel<true><<<static_cast<unsigned>(n), kThreads, 0, s>>>(src, dst_rows, dim, dst);
  LOCR_CUDA_LAUNCHED("scatter_rows");
}

void gather_rows(const float* src, const int32_t* src_rows, int64_t n, int64_t dim, float* dst, Stream s) {
  if (n <= 0 || dim <= 0) return;
  move_rows_kernel<false><<<static_cast<unsigned>(n), kThreads, 0, s>>>(src, src_rows, dim, dst);
  LOCR_CUDA_LAUNCHED("gather_rows");
}

}  // namespace locr::kernels::cuda
