// GGUF weight blocks (Q8_0, Q4_K, Q6_K) decoded on the device, and the per-lane / per-thread bodies
// of the CUDA backend's quantized-weight kernels (quant_gemv.cu). Every function is
// LOCR_HOST_DEVICE, so the host tests (tests/unit/cuda_quant_emulation_test.cc) run this same source,
// index math included, against Matrix::at / io::dequantize_row on a machine without a GPU.
//
// The unit of decoding is 32 consecutive weights of a row ("unit" u = weights 32u .. 32u + 31): a
// whole Q8_0 block, one sub-block (one 6-bit scale and min) of a Q4_K super-block, two 16-weight
// groups of a Q6_K super-block. Values are the exact ones of Matrix::at, with its operations in its
// order (the layouts are documented in kernels/cpu/q8_0_block.h, q4_k_block.h, q6_k_block.h):
//   Q8_0  d * q                      (d the block's f16 scale; exact)
//   Q4_K  (d * sc) * q - (dmin * m)  (the products are exact, so one rounding, fused or not)
//   Q6_K  (d * scale) * (q - 32)     (the same two roundings in the same order)
// Not here: the kernels' launch code (quant_gemv.cu), the CPU's integer kernels (kernels/cpu).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "core/host_device.h"

namespace locr::kernels::cuda::quant {

constexpr int kUnit = 32;  // weights per decoding unit

// Bytes of one row of `cols` weights (cols a whole number of blocks), as dtype_row_bytes.
LOCR_HOST_DEVICE inline int64_t row_bytes(DType t, int64_t cols) {
  if (t == DType::kQ8_0) return cols / 32 * 34;
  if (t == DType::kQ4_K) return cols / 256 * 144;
  return cols / 256 * 210;  // Q6_K
}

// Weights per block: a row of a quantized matrix is a whole number of them.
LOCR_HOST_DEVICE inline int64_t block_weights(DType t) { return t == DType::kQ8_0 ? 32 : 256; }

// IEEE half bits to float, exactly (subnormals, infinities and NaN included).
LOCR_HOST_DEVICE inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    const float mag = static_cast<float>(man) * 5.9604644775390625e-8f;  // man * 2^-24, exact
    std::memcpy(&u, &mag, 4);
    u |= sign;
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 112u) << 23) | (man << 13);  // rebias 15 -> 127
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

LOCR_HOST_DEVICE inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_bits_to_f32(h);
}

// Weights 32u .. 32u + 31 of a row (`row` = its first byte) into out[0..31].
template <DType T>
LOCR_HOST_DEVICE inline void dequantize_unit(const uint8_t* row, int64_t u, float out[kUnit]);

template <>
LOCR_HOST_DEVICE inline void dequantize_unit<DType::kQ8_0>(const uint8_t* row, int64_t u, float out[kUnit]) {
  const uint8_t* block = row + u * 34;  // f16 d, int8 q[32]
  const float d = load_f16(block);
  for (int i = 0; i < kUnit; ++i) out[i] = d * static_cast<float>(static_cast<int8_t>(block[2 + i]));
}

template <>
LOCR_HOST_DEVICE inline void dequantize_unit<DType::kQ4_K>(const uint8_t* row, int64_t u, float out[kUnit]) {
  const uint8_t* block = row + (u / 8) * 144;  // f16 d, f16 dmin, 12 bytes of scales/mins, 128 bytes of nibbles
  const int j = static_cast<int>(u % 8);      // sub-block
  const uint8_t* p = block + 4;
  int sc, m;
  if (j < 4) {
    sc = p[j] & 63;
    m = p[j + 4] & 63;
  } else {
    sc = (p[j + 4] & 0xF) | ((p[j - 4] >> 6) << 4);
    m = (p[j + 4] >> 4) | ((p[j] >> 6) << 4);
  }
  const float d1 = load_f16(block) * static_cast<float>(sc), m1 = load_f16(block + 2) * static_cast<float>(m);
  // Weight 32j + l sits in byte l of the 32-byte group j / 2: the low nibble for even j, the high one for odd.
  const uint8_t* qs = block + 16 + (j / 2) * 32;
  const int shift = (j % 2) * 4;
  for (int l = 0; l < kUnit; ++l) out[l] = d1 * static_cast<float>((qs[l] >> shift) & 0xF) - m1;
}

template <>
LOCR_HOST_DEVICE inline void dequantize_unit<DType::kQ6_K>(const uint8_t* row, int64_t u, float out[kUnit]) {
  const uint8_t* block = row + (u / 8) * 210;  // ql[128], qh[64], int8 scales[16], f16 d
  const int t = static_cast<int>(u % 8);      // weights e = 32t + l: half h = t / 4, quarter k = t % 4
  const int h = t / 4, k = t % 4;
  const uint8_t* ql = block + 64 * h + 32 * (k & 1);
  const uint8_t* qh = block + 128 + 32 * h;
  const float d = load_f16(block + 208);
  for (int l = 0; l < kUnit; ++l) {
    const int nib = k < 2 ? (ql[l] & 0xF) : (ql[l] >> 4);
    const int q = nib | (((qh[l] >> (2 * k)) & 3) << 4);
    const int scale = static_cast<int8_t>(block[192 + 2 * t + l / 16]);  // group (32t + l) / 16
    out[l] = d * static_cast<float>(scale) * static_cast<float>(q - 32);
  }
}

// ---- GEMV: one warp per weight row, lane `lane` takes units lane, lane + 32, ... ----
// Its partial sums acc[m] = sum over its units of W[row, k] * x[m, k] (m < m_rows <= kMaxRows), each
// an F32 FMA chain in k order within the unit and unit order; the warp then adds the 32 lanes.
template <DType T, int kMaxRows>
LOCR_HOST_DEVICE inline void gemv_lane(const uint8_t* w_row, int64_t units, const float* x, int64_t K, int m_rows,
                                       int lane, float acc[kMaxRows]) {
  for (int m = 0; m < kMaxRows; ++m) acc[m] = 0.0f;
  for (int64_t u = lane; u < units; u += 32) {
    float wv[kUnit];
    dequantize_unit<T>(w_row, u, wv);
    for (int m = 0; m < kMaxRows; ++m) {
      if (m >= m_rows) break;
      const float* xr = x + m * K + u * kUnit;
      float s = acc[m];
      for (int i = 0; i < kUnit; ++i) s = std::fma(wv[i], xr[i], s);
      acc[m] = s;
    }
  }
}

// ---- Dequantization to BF16 (the many-row GEMM path): thread g writes unit g of the matrix ----
// Unit g is unit g % units_per_row of row g / units_per_row; out is [rows, units_per_row * 32].
template <DType T>
LOCR_HOST_DEVICE inline void dequantize_unit_bf16(const uint8_t* w, int64_t units_per_row, int64_t w_row_bytes,
                                                  int64_t g, uint16_t* out) {
  const int64_t r = g / units_per_row, u = g - r * units_per_row;
  float v[kUnit];
  dequantize_unit<T>(w + r * w_row_bytes, u, v);
  uint16_t* o = out + r * units_per_row * kUnit + u * kUnit;
  for (int i = 0; i < kUnit; ++i) o[i] = ::locr::f32_to_bf16(v[i]);
}

// ---- Embedding rows of a quantized table: thread g writes unit g % units_per_row of output row
// g / units_per_row, from table row ids[g / units_per_row], as F32 (exact). ----
template <DType T>
LOCR_HOST_DEVICE inline void embed_unit(const uint8_t* table, int64_t units_per_row, int64_t table_row_bytes,
                                        const int32_t* ids, int64_t g, float* out) {
  const int64_t i = g / units_per_row, u = g - i * units_per_row;
  const uint8_t* row = table + static_cast<int64_t>(ids[i]) * table_row_bytes;
  dequantize_unit<T>(row, u, out + i * units_per_row * kUnit + u * kUnit);
}

}  // namespace locr::kernels::cuda::quant
