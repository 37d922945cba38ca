// One GGUF Q6_K super-block and the canonical order of a Q6_K x Q8_K dot product, shared by the ISA
// files (kernels_*.cc) and the baseline code (quant_q6_k.cc, ops.cc, cpu_ops.cc). The functions are
// `static` (one copy per ISA file, see kernel_table.h). The activations are q4_k_block.h's Q8_K.
//
// Q6_K (ggml's block_q6_K, 210 bytes per 256 weights): 128 bytes ql (the low 4 bits), 64 bytes qh
// (the high 2 bits), 16 int8 scales (one per group of 16 weights), f16 d. Weight e = 128h + 32k + l
// (h < 2, k < 4, l < 32) has the 6-bit quant q = nibble (low for k < 2, high otherwise) of
// ql[64h + 32(k & 1) + l] | ((qh[32h + l] >> 2k) & 3) << 4, and the value (d * scales[e / 16]) *
// (q - 32) (io::dequantize_row's order).
//
// The dot product of a weight row w and an activation row x (n super-blocks each) is defined as:
// per super-block, the exact integer isum = sum_g scales[g] * sum_{l<16} (q[16g+l] - 32) *
// qs[16g+l], then acc = fma(dx * d, float(isum), acc), the super-blocks in order from acc = 0.
// |isum| <= 16 * 128 * 16 * 32 * 127 < 2^27, exact in any order, so every path (generic loops, AVX2
// vpmaddubsw/vpmaddwd with the -32 folded in through the Q8_K bsums) and every tiling returns the
// same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/q4_k_block.h"

namespace locr::kernels::cpu {

constexpr int kQ6KBlock = 256;
constexpr int kQ6KBlockBytes = 210;
constexpr int kQ6KQh = 128, kQ6KScales = 192, kQ6KD = 208;

// The 6-bit quant (0..63, offset 32) of weight e (0..255) of a super-block.
static inline int q6_k_quant(const uint8_t* block, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t lo = block[64 * h + 32 * (k & 1) + l];
  const int nib = k < 2 ? (lo & 0xF) : (lo >> 4);
  return nib | (((block[kQ6KQh + 32 * h + l] >> (2 * k)) & 3) << 4);
}

static inline int q6_k_scale(const uint8_t* block, int g) { return static_cast<int8_t>(block[kQ6KScales + g]); }

// Weight e of a super-block as float, with io::dequantize_row's operations in its order (exact).
static inline float q6_k_value(const uint8_t* block, int e) {
  const float d = q4_k_f16(block + kQ6KD);
  return d * static_cast<float>(q6_k_scale(block, e / 16)) * static_cast<float>(q6_k_quant(block, e) - 32);
}

// One super-block's float step of the canonical dot product.
static inline float q6_k_accumulate(float acc, float dx, const uint8_t* w, int32_t isum) {
  return std::fma(dx * q4_k_f16(w + kQ6KD), static_cast<float>(isum), acc);
}

// The canonical dot product written out (the generic path, and the reference of the SIMD one).
static inline float q6_k_dot_scalar(const uint8_t* w, const uint8_t* x, int64_t n_blocks) {
  float acc = 0;
  for (int64_t b = 0; b < n_blocks; ++b, w += kQ6KBlockBytes, x += kQ8KBlockBytes) {
    const auto* qs = reinterpret_cast<const int8_t*>(x + kQ8KQs);
    int32_t isum = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) s += (q6_k_quant(w, 16 * g + l) - 32) * int32_t{qs[16 * g + l]};
      isum += q6_k_scale(w, g) * s;
    }
    acc = q6_k_accumulate(acc, q8_k_scale(x), w, isum);
  }
  return acc;
}

}  // namespace locr::kernels::cpu
