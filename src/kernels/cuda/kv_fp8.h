// The FP8 E4M3 KV cache on the CUDA backend (--kv-cache-dtype fp8): the per-lane bodies of its
// kv_store kernel (kv_fp8.cu) and the element read of its attention kernels (paged_attention.cu,
// attention_tile.cuh). LOCR_HOST_DEVICE, so the host tests (tests/unit/cuda_quant_emulation_test.cc)
// run this same source against kernels::kv_store_host on a machine without a GPU.
//
// Layout (kernels::KvLayer): pool row `row` holds n_kv_heads heads of head_dim E4M3 bytes, and one
// F32 scale per row and kv head at scale[row * n_kv_heads + kh]; element d of head kh is
// fp8_e4m3_to_f32(byte) * scale. A head is stored by one warp: each lane takes the elements lane,
// lane + 32, ... of the head; the warp's max of the lanes' amax (and the AND of their `finite`) gives
// the scale fp8_e4m3_head_scale, and every lane stores its elements times 1 / scale. The max and the
// AND do not depend on the order, so the bytes and scales are kv_store_host's (one exception: an
// input that is a negative NaN may become the positive NaN code, the GPU's canonical NaN).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/fp8.h"
#include "core/host_device.h"

namespace locr::kernels::cuda::kvfp8 {

// Lane `lane`'s part of a head's amax and finiteness (as kv_store_host's loop, over its elements).
LOCR_HOST_DEVICE inline void head_lane_amax(const float* x, int head_dim, int lane, float* amax, bool* finite) {
  float m = 0.0f;
  bool f = true;
  for (int d = lane; d < head_dim; d += 32) {
    const float a = std::fabs(x[d]);
    f = f && a <= std::numeric_limits<float>::max();
    m = a > m ? a : m;
  }
  *amax = m;
  *finite = f;
}

// Lane `lane`'s bytes of a head, given inv = 1 / scale.
LOCR_HOST_DEVICE inline void head_lane_store(const float* x, int head_dim, int lane, float inv, uint8_t* q) {
  for (int d = lane; d < head_dim; d += 32) q[d] = f32_to_fp8_e4m3(x[d] * inv);
}

// Element d of kv head kh of pool row `row` as F32 (exactly the value kernels::ref reads).
LOCR_HOST_DEVICE inline float element(const uint8_t* cache, const float* scale, int64_t row, int n_kv_heads,
                                      int head_dim, int kh, int d) {
  const int64_t head = row * n_kv_heads + kh;
  return fp8_e4m3_to_f32(cache[head * head_dim + d]) * scale[head];
}

}  // namespace locr::kernels::cuda::kvfp8
