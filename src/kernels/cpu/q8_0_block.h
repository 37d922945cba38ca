// One GGUF Q8_0 block and the float part of its dot product, shared by the ISA files
// (kernels_*.cc): the per-block integer sums differ by ISA, the float accumulation is this. The
// functions are `static` (one copy per ISA file), so the linker cannot hand one file's copy, built
// with other instruction flags, to another (see kernel_table.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace locr::kernels::cpu {

constexpr int kQ8Block = 32;
constexpr int kQ8BlockBytes = 34;

static inline float q8_0_scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return f16_to_f32(h);
}

// acc + (d_a * d_b) * isum as one fused multiply-add: written out, the compiler would fuse it in
// the files built with FMA and not in the generic one, and the paths would differ in the last bit.
static inline float q8_0_accumulate(float acc, const uint8_t* a, const uint8_t* b, int32_t isum) {
  return std::fma(q8_0_scale(a) * q8_0_scale(b), static_cast<float>(isum), acc);
}

}  // namespace locr::kernels::cpu
