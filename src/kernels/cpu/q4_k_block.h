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
// vpdpbusd, vpmaddubsw/vpmaddwd) and every tiling returns the same bits.
//
// Packed layout (pack_q4_k in quant_q4_k.cc makes it from GGUF's super-blocks; the same values):
// weight rows in groups of 16 (the last group padded with zero rows), each group n_blocks records of
// 2368 bytes, one per super-block:
//   [0, 32)      the 16 rows' d (f16, row r at 2r);      [32, 64)   their dmin (f16)
//   [64, 192)    the scales: sub-block j at 64 + 16j, row r at + r (uint8, 0..63)
//   [192, 320)   the mins by pairs of sub-blocks: pair p at 192 + 32p, row r at + 2r: m[2p], m[2p+1]
//   [320, 2368)  the quants: sub-block j at 320 + 256j, four 64-byte lines; line t holds, at 4r + k
//                (k < 4), weight 32j + 4t + k of row r in the low nibble, 32j + 16 + 4t + k in the high.
// So one line's low (or high) nibbles are four consecutive weights of each of 16 rows, as unsigned
// bytes: one vpdpbusd with four broadcast activation bytes adds four products to each row's
// sub-block sum (lane r = row r), and the scales, mins and float steps are one vector for 16 rows.
//
// Activation rows (quantize_act_q8_K, from quantize_row_q8_K's values): n_blocks * 276 bytes per
// row: the quants (256 * n_blocks int8), the scales (n_blocks float), then per super-block the eight
// sub-block sums bsums[2j] + bsums[2j+1] (int16, |.| <= 32 * 127).
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

constexpr int kQ4KGroupRows = 16;
constexpr int64_t kQ4KGroupBlockBytes = 2368;  // kQ4KGroupRows * 148: 144 bytes per row and block, + 4 for the split scales
constexpr int64_t kQ4KActBlockBytes = 276;     // 256 quants + float scale + 8 int16 sub-block sums
constexpr int kQ4KGD = 0, kQ4KGDmin = 32, kQ4KGScales = 64, kQ4KGMins = 192, kQ4KGQuants = 320;

// Where the parts of one packed group and one activation row lie (n_blocks super-blocks per row).
struct Q4KGroup {
  const uint8_t* base;
  const uint8_t* block(int64_t b) const { return base + b * kQ4KGroupBlockBytes; }
};
struct Q4KAct {
  const uint8_t* base;
  int64_t n_blocks;
  const int8_t* quants(int64_t b) const { return reinterpret_cast<const int8_t*>(base + 256 * b); }
  float scale(int64_t b) const {
    float d;
    std::memcpy(&d, base + 256 * n_blocks + 4 * b, 4);
    return d;
  }
  const int16_t* sub_sums(int64_t b) const { return reinterpret_cast<const int16_t*>(base + 260 * n_blocks + 16 * b); }
};

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

// The canonical dot product of row r (< 16) of a packed group and one activation row, written out
// on the packed layout: the generic path (the SIMD paths and q4_k_dot_scalar on GGUF's bytes return
// the same bits).
static inline float q4_k_dot_packed(const Q4KGroup& g, int r, const Q4KAct& x) {
  float acc = 0;
  for (int64_t b = 0; b < x.n_blocks; ++b) {
    const uint8_t* blk = g.block(b);
    const int8_t* xq = x.quants(b);
    int32_t isum = 0, imin = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int t = 0; t < 4; ++t)
        for (int k = 0; k < 4; ++k) {
          const uint8_t byte = blk[kQ4KGQuants + 256 * j + 64 * t + 4 * r + k];
          s += int32_t{byte & 0xF} * xq[32 * j + 4 * t + k] + int32_t{byte >> 4} * xq[32 * j + 16 + 4 * t + k];
        }
      isum += int32_t{blk[kQ4KGScales + 16 * j + r]} * s;
      imin += int32_t{blk[kQ4KGMins + 32 * (j / 2) + 2 * r + j % 2]} * int32_t{x.sub_sums(b)[j]};
    }
    const float dx = x.scale(b);
    acc = std::fma(dx * q4_k_f16(blk + kQ4KGD + 2 * r), static_cast<float>(isum), acc);
    acc = std::fma(-(dx * q4_k_f16(blk + kQ4KGDmin + 2 * r)), static_cast<float>(imin), acc);
  }
  return acc;
}

}  // namespace locr::kernels::cpu
