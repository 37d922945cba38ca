// Q8_0 weights as the CPU kernels read them, and the canonical order of a Q8_0 dot product, shared
// by the ISA files (kernels_*.cc). The functions are `static` (one copy per ISA file), so the linker
// cannot hand one file's copy, built with other instruction flags, to another (see kernel_table.h).
//
// The dot product of a weight row and an activation row (quantize_row_q8_0's: never -128), n blocks
// of 32 each, is defined per block b as p = the exact int32 sum of the block's 32 products,
// d = d_w(b) * d_x(b) (one float product of the two f16 scales as floats), and one FMA chain over
// the blocks in order: acc = fma(d, float(p), acc) from acc = 0. |p| <= 32 * 128 * 127 < 2^24, so
// float(p) is exact. llama.cpp's scalar reference sums the same products per block.
//
// Packed layout (pack_q8_0 in quant_q8_0.cc makes it from GGUF's 34-byte blocks; the same bytes in
// all): weight rows in groups of 16 (the last group padded with zero rows), each group
// n_blocks * 544 bytes: first the 16 rows' f16 scales of every block (block b at 32 * b, row r at
// 2 * r), then the quants of every block (block b at 32 * n_blocks + 512 * b): eight 64-byte lines,
// line j holding bytes 4j..4j+3 of rows 0..15 (row r at 4 * r), each byte stored as q ^ 0x80 (q + 128
// read as unsigned). So one 512-bit vector (or two 256-bit ones) times a broadcast of four
// activation bytes takes four products of each of 16 rows: the rows' block sums build up lane by
// lane, and the float chain is one FMA per block for 16 rows.
//
// Activation rows (quantize_act_q8_0): n_blocks * 40 bytes per row: the quants (32 * n_blocks
// int8), then the scales as float (n_blocks), then -128 * the sum of each block's quants (n_blocks
// int32: the correction of vpdpbusd's unsigned weight bytes).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace locr::kernels::cpu {

constexpr int kQ8Block = 32;
constexpr int kQ8BlockBytes = 34;  // GGUF's block: f16 scale + 32 int8
constexpr int kQ8GroupRows = 16;
constexpr int64_t kQ8GroupBlockBytes = kQ8GroupRows * kQ8BlockBytes;  // 544
constexpr int64_t kQ8ActBlockBytes = 40;                              // 32 quants + float + int32

// Where the parts of one packed group and one activation row lie (n_blocks blocks per row).
struct Q8Group {
  const uint8_t* base;
  int64_t n_blocks;
  const uint8_t* scales(int64_t b) const { return base + 32 * b; }
  const uint8_t* quants(int64_t b) const { return base + 32 * n_blocks + 512 * b; }
};
struct Q8Act {
  const uint8_t* base;
  int64_t n_blocks;
  const int8_t* quants(int64_t b) const { return reinterpret_cast<const int8_t*>(base + 32 * b); }
  float scale(int64_t b) const {
    float d;
    std::memcpy(&d, base + 32 * n_blocks + 4 * b, 4);
    return d;
  }
  const int32_t* corr(int64_t b) const { return reinterpret_cast<const int32_t*>(base + 36 * n_blocks + 4 * b); }
};

static inline float q8_0_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// The canonical dot product of row r (< 16) of a packed group and one activation row, written out:
// the generic path, and the reference of the SIMD ones. std::fma: written as a * b + c, the compiler
// would fuse it in files built with FMA and not in the generic one, and the paths would differ.
static inline float q8_0_dot_packed(const Q8Group& g, int r, const Q8Act& x) {
  float acc = 0;
  for (int64_t b = 0; b < g.n_blocks; ++b) {
    const uint8_t* q = g.quants(b);
    const int8_t* xq = x.quants(b);
    int32_t p = 0;
    for (int k = 0; k < kQ8Block; ++k) p += (int32_t{q[(k / 4) * 64 + 4 * r + k % 4]} - 128) * int32_t{xq[k]};
    const float d = q8_0_f16(g.scales(b) + 2 * r) * x.scale(b);
    acc = std::fma(d, static_cast<float>(p), acc);
  }
  return acc;
}

}  // namespace locr::kernels::cpu
