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
// |isum| <= 16 * 128 * 16 * 32 * 127 < 2^27, exact in any order, so every path (generic loops,
// vpdpbusd, vpmaddubsw/vpmaddwd, with the -32 folded in through the Q8_K bsums) and every tiling
// returns the same bits.
//
// Packed layout (pack_q6_k in quant_q6_k.cc makes it from GGUF's super-blocks; the same values and
// the same 210 bytes per row and super-block): weight rows in groups of 16 (the last group padded
// with zero rows), each group n_blocks records of 3360 bytes, one per super-block:
//   [0, 32)      the 16 rows' d (f16, row r at 2r)
//   [32, 288)    the scales: group of 16 weights g at 32 + 16g, row r at + r (int8)
//   [288, 3360)  the quants: group g at 288 + 192g, three 64-byte lines. Lines a = 0, 1 hold, at
//                4r + k (k < 4), the low 4 bits of weight 16g + 4a + k of row r in the low nibble
//                and of weight 16g + 8 + 4a + k in the high one; line 2 holds at 4r + k the high 2
//                bits of weights 16g + 4c + k (c < 4) at bits 2c, 2c + 1.
// So four consecutive weights of each of 16 rows (6-bit, unsigned) come out of the lines as bytes,
// one per lane: one vpdpbusd with four broadcast activation bytes adds four products to each row's
// group sum, and the float step is one FMA for 16 rows.
//
// Activation rows (quantize_act_q6_k, from quantize_row_q8_K's values): n_blocks * 324 bytes per
// row: the quants (256 * n_blocks int8), the scales (n_blocks float), then per super-block
// -32 * bsums[g] for the 16 groups (int32): the start of each group sum, which makes the sum of the
// unsigned quants times x that of (q - 32) x.
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

constexpr int kQ6KGroupRows = 16;
constexpr int64_t kQ6KGroupBlockBytes = 3360;  // kQ6KGroupRows * 210
constexpr int64_t kQ6KActBlockBytes = 324;     // 256 quants + float scale + 16 int32 group corrections
constexpr int kQ6KGD = 0, kQ6KGScales = 32, kQ6KGQuants = 288;

// Where the parts of one packed group and one activation row lie (n_blocks super-blocks per row).
struct Q6KGroup {
  const uint8_t* base;
  const uint8_t* block(int64_t b) const { return base + b * kQ6KGroupBlockBytes; }
};
struct Q6KAct {
  const uint8_t* base;
  int64_t n_blocks;
  const int8_t* quants(int64_t b) const { return reinterpret_cast<const int8_t*>(base + 256 * b); }
  float scale(int64_t b) const {
    float d;
    std::memcpy(&d, base + 256 * n_blocks + 4 * b, 4);
    return d;
  }
  const int32_t* corr(int64_t b) const { return reinterpret_cast<const int32_t*>(base + 260 * n_blocks + 64 * b); }
};

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

// The 6-bit quant of weight 16g + 4c + k of row r from a packed super-block record.
static inline int q6_k_packed_quant(const uint8_t* blk, int r, int g, int c, int k) {
  const uint8_t* q = blk + kQ6KGQuants + 192 * g;
  const uint8_t lo = q[64 * (c % 2) + 4 * r + k];
  return ((c < 2 ? lo : lo >> 4) & 0xF) | (((q[128 + 4 * r + k] >> (2 * c)) & 3) << 4);
}

// The canonical dot product of row r (< 16) of a packed group and one activation row, written out
// on the packed layout: the generic path (the SIMD paths and q6_k_dot_scalar on GGUF's bytes return
// the same bits).
static inline float q6_k_dot_packed(const Q6KGroup& grp, int r, const Q6KAct& x) {
  float acc = 0;
  for (int64_t b = 0; b < x.n_blocks; ++b) {
    const uint8_t* blk = grp.block(b);
    const int8_t* xq = x.quants(b);
    int32_t isum = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t s = x.corr(b)[g];
      for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 4; ++k) s += q6_k_packed_quant(blk, r, g, c, k) * int32_t{xq[16 * g + 4 * c + k]};
      isum += int32_t{static_cast<int8_t>(blk[kQ6KGScales + 16 * g + r])} * s;
    }
    acc = std::fma(x.scale(b) * q4_k_f16(blk + kQ6KGD + 2 * r), static_cast<float>(isum), acc);
  }
  return acc;
}

}  // namespace locr::kernels::cpu
