// One GGUF Q4_K super-block, its activation counterpart (llama.cpp's Q8_K) and the canonical order
// of a Q4_K dot product, shared by the ISA files (kernels_*.cc) and the baseline code (quant_q4_k.cc,
// ops.cc, cpu_ops.cc). The functions are `static` (one copy per ISA file, see kernel_table.h).
//
// Q4_K (ggml's block_q4_K, 144 bytes per 256 weights): f16 d, f16 dmin, 12 bytes packing eight
// 6-bit scales sc[j] and eight 6-bit mins m[j] (one per sub-block of 32), 128 bytes of 4-bit
// quants: byte l of the 32-byte group g holds weight 64g + l (low nibble) and 64g + 32 + l (high
// nibble). Weight 32j + l is (d * sc[j]) * q - (dmin * m[j]) (io::dequantize_row's order).
//
// Q8_K (an activation block, 292 bytes per 256 values): float d, int8 qs[256] (never -128),
// int16 bsums[16] (the sums of qs over each run of 16).
//
// The dot product of a weight row w and an activation row x (n super-blocks each) is defined as:
// per super-block b, the exact integers isum = sum_j sc[j] * sum_{l<32} q[32j+l] * qs[32j+l] and
// imin = sum_j m[j] * (bsums[2j] + bsums[2j+1]); then acc = fma(dx * d, float(isum), acc) and
// acc = fma(-(dx * dmin), float(imin), acc), the super-blocks in order from acc = 0. The integer
// sums are exact in any order (|isum| < 63 * 15 * 127 * 256 < 2^31), so every path (generic loops,
// AVX2 vpmaddubsw/vpmaddwd) and every tiling returns the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace locr::kernels::cpu {

constexpr int kQ4KBlock = 256;
constexpr int kQ4KBlockBytes = 144;
constexpr int kQ8KBlockBytes = 292;  // float d, int8 qs[256], int16 bsums[16]
constexpr int kQ8KQs = 4, kQ8KBsums = 260;

// The eight 6-bit scales and mins of a Q4_K super-block's 12 packed bytes (ggml's get_scale_min_k4:
// sub-blocks 0..3 in the low 6 bits of bytes 0..3 / 4..7; 4..7 split between the nibbles of bytes
// 8..11 and the top 2 bits of bytes 0..7).
static inline void q4_k_scales_mins(const uint8_t* packed, uint8_t sc[8], uint8_t m[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = packed[j] & 63;
    m[j] = packed[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
    m[j] = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

static inline float q4_k_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// The 4-bit quant of weight e (0..255) of a super-block.
static inline int q4_k_quant(const uint8_t* block, int e) {
  const uint8_t byte = block[16 + (e / 64) * 32 + e % 32];
  return (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
}

// Weight e of a super-block as float, with io::dequantize_row's operations in its order (exact).
static inline float q4_k_value(const uint8_t* block, int e) {
  uint8_t sc[8], m[8];
  q4_k_scales_mins(block + 4, sc, m);
  const int j = e / 32;
  const float d1 = q4_k_f16(block) * sc[j], m1 = q4_k_f16(block + 2) * m[j];
  return d1 * static_cast<float>(q4_k_quant(block, e)) - m1;
}

static inline float q8_k_scale(const uint8_t* block) {
  float d;
  std::memcpy(&d, block, 4);
  return d;
}

// One super-block's two float steps of the canonical dot product.
static inline float q4_k_accumulate(float acc, float dx, const uint8_t* w, int32_t isum, int32_t imin) {
  acc = std::fma(dx * q4_k_f16(w), static_cast<float>(isum), acc);
  return std::fma(-(dx * q4_k_f16(w + 2)), static_cast<float>(imin), acc);
}

// The canonical dot product written out (the generic path, and the reference of the SIMD one).
static inline float q4_k_dot_scalar(const uint8_t* w, const uint8_t* x, int64_t n_blocks) {
  float acc = 0;
  for (int64_t b = 0; b < n_blocks; ++b, w += kQ4KBlockBytes, x += kQ8KBlockBytes) {
    uint8_t sc[8], m[8];
    q4_k_scales_mins(w + 4, sc, m);
    const auto* qs = reinterpret_cast<const int8_t*>(x + kQ8KQs);
    int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) s += q4_k_quant(w, 32 * j + l) * int32_t{qs[32 * j + l]};
      isum += int32_t{sc[j]} * s;
      int16_t b0, b1;
      std::memcpy(&b0, x + kQ8KBsums + 4 * j, 2);
      std::memcpy(&b1, x + kQ8KBsums + 4 * j + 2, 2);
      imin += int32_t{m[j]} * (int32_t{b0} + int32_t{b1});
    }
    acc = q4_k_accumulate(acc, q8_k_scale(x), w, isum, imin);
  }
  return acc;
}

}  // namespace locr::kernels::cpu
