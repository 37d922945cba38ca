// kv_store into the CUDA backend's FP8 E4M3 KV cache (cuda_api.h kv_store_fp8): one warp per (row,
// kv head, key or value) computes the head's scale and bytes as kernels::kv_store_host does, with
// kv_fp8.h's host-device lane bodies and core/fp8.h's conversion (the same source on both sides).
// Not here: attention over the FP8 cache (paged_attention.cu, attention_tile.cuh).
#include <cstdint>

#include "core/fp8.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kv_fp8.h"

namespace locr::kernels::cuda {

namespace detail {
namespace {

constexpr int kStoreWarps = 4;

struct StoreArgs {
  const float* k;
  const float* v;
  int64_t stride;
  const int32_t* slots;
  int64_t n;
  int n_kv_heads, head_dim;
  uint8_t* k_cache;
  uint8_t* v_cache;
  float* k_scale;
  float* v_scale;
};

// Item i = (row r, kv head h, key or value): r = i / (2 * n_kv_heads), then the keys' heads, then
// the values'. One warp per item; every branch below is uniform over the warp.
__global__ void __launch_bounds__(kStoreWarps * 32) kv_store_fp8_kernel(StoreArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t per_row = 2 * static_cast<int64_t>(a.n_kv_heads), items = a.n * per_row;
  const int64_t width = static_cast<int64_t>(a.n_kv_heads) * a.head_dim;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kStoreWarps + (threadIdx.x >> 5); i < items;
       i += static_cast<int64_t>(gridDim.x) * kStoreWarps) {
    const int64_t r = i / per_row;
    const int rem = static_cast<int>(i - r * per_row);
    const bool value = rem >= a.n_kv_heads;
    const int h = value ? rem - a.n_kv_heads : rem;
    const int64_t slot = a.slots[r];
    if (slot < 0) continue;  // padding row: nothing to store
    const float* x = (value ? a.v : a.k) + r * a.stride + static_cast<int64_t>(h) * a.head_dim;
    float amax;
    bool finite;
    kvfp8::head_lane_amax(x, a.head_dim, lane, &amax, &finite);
    amax = warp_max(amax);
    finite = __all_sync(0xffffffffu, finite);
    const float scale = fp8_e4m3_head_scale(amax, finite);
    const float inv = 1.0f / scale;
    kvfp8::head_lane_store(x, a.head_dim, lane, inv, (value ? a.v_cache : a.k_cache) + slot * width +
                                                         static_cast<int64_t>(h) * a.head_dim);
    if (lane == 0) (value ? a.v_scale : a.k_scale)[slot * a.n_kv_heads + h] = scale;
  }
}

}  // namespace
}  // namespace detail

void kv_store_fp8(const float* k, const float* v, int64_t stride, const int32_t* slots, int64_t n, int n_kv_heads,
                  int head_dim, uint8_t* k_cache, uint8_t* v_cache, float* k_scale, float* v_scale, Stream s) {
  if (n <= 0 || n_kv_heads <= 0 || head_dim <= 0) return;
  const detail::StoreArgs a{k, v, stride, slots, n, n_kv_heads, head_dim, k_cache, v_cache, k_scale, v_scale};
  const int64_t items = n * 2 * n_kv_heads;
  detail::kv_store_fp8_kernel<<<detail::grid_for(items, detail::kStoreWarps), detail::kStoreWarps * 32, 0, s>>>(a);
  LOCR_CUDA_LAUNCHED("kv_store_fp8");
}

}  // namespace locr::kernels::cuda
