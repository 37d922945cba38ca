// The projector's channel-major m x m patch merge of one image (model::patch_merge on the GPU):
// in [grid_h*grid_w, d] -> out [(grid_h/m)*(grid_w/m), d*m*m] with
// out[i*(gw/m)+j][c*m*m + a*m + b] = in[(m*i+a)*gw + (m*j+b)][c]; odd trailing rows/cols dropped.
// One thread per output element (coalesced writes; reads are strided by m*m, which the caches
// absorb). A pure copy: bit-exact. Not here: the RMSNorm before and the merging Linear after.
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

__global__ void patch_merge_kernel(const uint16_t* in, int grid_w, int64_t d, int m, int ow, int64_t n,
                                   uint16_t* out) {
  const int64_t mm = static_cast<int64_t>(m) * m;
  const int64_t width = d * mm;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t orow = idx / width, col = idx - orow * width;
    const int64_t i = orow / ow, j = orow - i * ow;
    const int64_t c = col / mm, ab = col - c * mm;
    const int64_t a = ab / m, b = ab - a * m;
    out[idx] = in[((m * i + a) * grid_w + (m * j + b)) * d + c];
  }
}

}  // namespace

void patch_merge(const bf16* in, int grid_h, int grid_w, int64_t d, int m, bf16* out, Stream s) {
  if (m <= 0 || d <= 0) return;
  const int oh = grid_h / m, ow = grid_w / m;
  const int64_t n = static_cast<int64_t>(oh) * ow * d * m * m;
  if (n <= 0) return;
  patch_merge_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(in, grid_w, d, m, ow, n, out);
  LOCR_CUDA_LAUNCHED("patch_merge");
}

}  // namespace locr::kernels::cuda
