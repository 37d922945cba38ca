// One GGUF Q8_0 block and the canonical order of a Q8_0 dot product, shared by the ISA files
// (kernels_*.cc). The functions are `static` (one copy per ISA file), so the linker cannot hand one
// file's copy, built with other instruction flags, to another (see kernel_table.h).
//
// The dot product of a weight row w and an activation row x (n blocks each) is defined as eight
// float lanes: lane j of block b gets p = the exact int32 sum of the four products
// w[4j..4j+3] * x[4j..4j+3] of that block, and acc_j = fma(d_w(b) * d_x(b), float(p), acc_j) over
// the blocks in order; the result is q8_0_hsum(acc). That is what one 256-bit vector of
// vpmaddubsw + vpmaddwd (or vpdpbusd) + vfmadd computes per block, and the generic path writes it
// out lane by lane, so every path returns the same bits.
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

// The eight lanes summed in the order of a 256-bit horizontal reduction (halves, then pairs).
static inline float q8_0_hsum(const float a[8]) {
  const float s0 = a[0] + a[4], s1 = a[1] + a[5], s2 = a[2] + a[6], s3 = a[3] + a[7];
  return (s0 + s2) + (s1 + s3);
}

// The canonical dot product written out (the generic path, and the reference of the SIMD ones).
// std::fma: written as a * b + c, the compiler would fuse it in files built with FMA and not in the
// generic one, and the paths would differ in the last bit.
static inline float q8_0_dot_lanes(const uint8_t* w, const uint8_t* x, int64_t n_blocks) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t b = 0; b < n_blocks; ++b, w += kQ8BlockBytes, x += kQ8BlockBytes) {
    const float d = q8_0_scale(w) * q8_0_scale(x);
    const auto* qw = reinterpret_cast<const int8_t*>(w + 2);
    const auto* qx = reinterpret_cast<const int8_t*>(x + 2);
    for (int j = 0; j < 8; ++j) {
      int32_t p = 0;
      for (int i = 4 * j; i < 4 * j + 4; ++i) p += int32_t{qw[i]} * int32_t{qx[i]};
      acc[j] = std::fma(d, static_cast<float>(p), acc[j]);
    }
  }
  return q8_0_hsum(acc);
}

}  // namespace locr::kernels::cpu
