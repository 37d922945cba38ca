// The Q4_K x Q8_K dot products of q4_k_block.h on 256-bit vectors, included by kernels_avx2.cc (AVX2)
// and kernels_avx2_vnni.cc (AVX-VNNI: vpdpwssd fuses each vpmaddwd with its vpaddd, qy_madd_acc):
// the same code under each file's flags (`static`, one copy per file). q4_k_avx512.h uses the helpers
// and runs this kernel for single activation rows (the GEMV, where it is faster than 512 bits).
//
// Per 32-byte group of quants (64 weights: two sub-blocks): the low and the high nibbles (0..15,
// unsigned) times the activations (signed) by vpmaddubsw give sixteen exact int16 pair sums
// (|sum| <= 2 * 15 * 127), vpmaddwd against the sub-block's 6-bit scale (broadcast by vpshufb) eight
// int32 sums; those add up to isum. imin is one vpmaddwd of the eight per-sub-block bsum pairs
// (vphaddw, once per activation block) against the mins. Both are exact, so the float steps
// (q4_k_accumulate's) see the generic path's integers.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/quant_simd256.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#define LOCR_Q4K_UNROLL _Pragma("GCC unroll 8")

// The 12 packed bytes as 16: the eight 6-bit scales (bytes 0..7) then the eight mins (8..15), by
// 32-bit masks and shifts (the same values as q4_k_scales_mins). In little-endian words u0..u2 of
// the packed bytes: scales 0..3 = u0 & 0x3f.., mins 0..3 = u1 & 0x3f..; scales 4..7 = the low
// nibbles of u2 with the top 2 bits of u0 above them, mins 4..7 the high nibbles of u2 with the top
// 2 bits of u1.
static inline __m128i q4_k_scales_mins16(const uint8_t* packed) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
  const uint32_t sc_lo = u[0] & m6, mn_lo = u[1] & m6;
  const uint32_t sc_hi = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
  const uint32_t mn_hi = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
  return _mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), static_cast<int>(mn_lo),
                        static_cast<int>(mn_hi));
}

// A byte shuffle broadcasting int16 element k of each 128-bit half.
static inline __m256i q4_k_bcast16(int k) {
  const char lo = static_cast<char>(2 * k), hi = static_cast<char>(2 * k + 1);
  return _mm256_setr_epi8(lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi,
                          lo, hi, lo, hi, lo, hi, lo, hi);
}

// An activation block's bsums[2j] + bsums[2j+1] (|.| <= 32 * 127): the sums per 32-value sub-block.
static inline __m128i q4_k_bsum_pairs(const uint8_t* x_block) {
  const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x_block + kQ8KBsums));
  return _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
}

// f16 by F16C (exact, as core/dtype.h's f16_to_f32, without a call).
static inline float q4_k_f16c(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// NR weight rows against MX activation rows: c[i * ldc + r] for r < NR, i < MX.
template <int NR, int MX>
static inline void q4_k_tile(const uint8_t* w, int64_t w_stride, const uint8_t* x, int64_t x_stride,
                             int64_t n_blocks, float* c, int64_t ldc,
                             const uint8_t* w_end = nullptr) {
  WeightStream stream(w + NR * w_stride, w_end, NR * kQ4KBlockBytes);
  float acc[NR][MX];
  LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) acc[r][i] = 0.0f;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256i bc[8];
  LOCR_Q4K_UNROLL for (int k = 0; k < 8; ++k) bc[k] = q4_k_bcast16(k);
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const uint8_t* xb[MX];
    __m128i bs2[MX];
    float dx[MX];
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
      xb[i] = x + i * x_stride + b * kQ8KBlockBytes;
      bs2[i] = q4_k_bsum_pairs(xb[i]);
      dx[i] = q8_k_scale(xb[i]);
    }
    LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r) {
      const uint8_t* wb = w + r * w_stride + b * kQ4KBlockBytes;
      const __m256i sm = _mm256_cvtepu8_epi16(q4_k_scales_mins16(wb + 4));  // scales, then mins (int16)
      const __m128i mins = _mm256_extracti128_si256(sm, 1);
      const __m256i scales = _mm256_permute2x128_si256(sm, sm, 0x00);  // the scales in both halves
      __m256i sum[MX];
      LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) sum[i] = _mm256_setzero_si256();
      LOCR_Q4K_UNROLL for (int g = 0; g < 4; ++g) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 16 + 32 * g));
        const __m256i lo = _mm256_and_si256(q, nib);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
        const __m256i s_lo = _mm256_shuffle_epi8(scales, bc[2 * g]), s_hi = _mm256_shuffle_epi8(scales, bc[2 * g + 1]);
        LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
          const auto* qx = reinterpret_cast<const __m256i*>(xb[i] + kQ8KQs + 64 * g);
          sum[i] = qy_madd_acc(sum[i], _mm256_maddubs_epi16(lo, _mm256_loadu_si256(qx)), s_lo);
          sum[i] = qy_madd_acc(sum[i], _mm256_maddubs_epi16(hi, _mm256_loadu_si256(qx + 1)), s_hi);
        }
      }
      const float d = q4_k_f16c(wb), dmin = q4_k_f16c(wb + 2);
      LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
        const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum[i]), _mm256_extracti128_si256(sum[i], 1));
        __m128i t = _mm_hadd_epi32(s4, _mm_madd_epi16(bs2[i], mins));  // s01 s23 m01 m23
        t = _mm_hadd_epi32(t, t);                                      // isum imin isum imin
        const int32_t isum = _mm_cvtsi128_si32(t), imin = _mm_extract_epi32(t, 1);
        // q4_k_accumulate's two steps, with d and dmin converted once per row.
        acc[r][i] = std::fma(dx[i] * d, static_cast<float>(isum), acc[r][i]);
        acc[r][i] = std::fma(-(dx[i] * dmin), static_cast<float>(imin), acc[r][i]);
      }
    }
  }
  LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) c[i * ldc + r] = acc[r][i];
}

// The kernel_table.h gemm_q4_k entry (tiling: quant_tiles.h).
[[maybe_unused]] static void q4_k_gemm_simd(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride,
                           int64_t m, int64_t n_blocks, float* c, int64_t ldc) {
  walk_quant_tiles(static_cast<const uint8_t*>(w), w_stride, n, static_cast<const uint8_t*>(x), x_stride, m, c, ldc,
                   [&](auto nr, auto mx, const uint8_t* wt, const uint8_t* xt, float* ct, const uint8_t* w_end) {
                     q4_k_tile<decltype(nr)::value, decltype(mx)::value>(wt, w_stride, xt, x_stride, n_blocks, ct, ldc, w_end);
                   });
}

}  // namespace locr::kernels::cpu
