// The Q4_K x Q8_K dot products of q4_k_block.h on 256-bit AVX2 vectors, included by kernels_avx2.cc
// and kernels_avx512.cc (the same code under each file's flags; `static`, one copy per file).
//
// Per 32-byte group of quants (64 weights: two sub-blocks): the low and the high nibbles (0..15,
// unsigned) times the activations (signed) by vpmaddubsw give sixteen exact int16 pair sums
// (|sum| <= 2 * 15 * 127), vpmaddwd against the sub-block's 6-bit scale eight int32 sums; those add
// up to isum. imin is one vpmaddwd of the sixteen bsums against the mins (each twice). Both are
// exact, so the float steps (q4_k_accumulate) see the generic path's integers.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q4_k_block.h"

namespace locr::kernels::cpu {

#define LOCR_Q4K_UNROLL _Pragma("GCC unroll 8")

// The sums of the int32 lanes of s and of m.
static inline void q4_k_hsum2(__m256i s, __m256i m, int32_t* is, int32_t* im) {
  __m256i t = _mm256_hadd_epi32(s, m);  // per half: s01 s23 m01 m23
  t = _mm256_hadd_epi32(t, t);          // per half: s m s m
  const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
  *is = _mm_cvtsi128_si32(h);
  *im = _mm_extract_epi32(h, 1);
}

// NR weight rows against MX activation rows: c[i * ldc + r] for r < NR, i < MX.
template <int NR, int MX>
static inline void q4_k_tile(const uint8_t* w, int64_t w_stride, const uint8_t* x, int64_t x_stride,
                             int64_t n_blocks, float* c, int64_t ldc) {
  float acc[NR][MX];
  LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) acc[r][i] = 0.0f;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* xb[MX];
    __m256i bs[MX];
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
      xb[i] = x + i * x_stride + b * kQ8KBlockBytes;
      bs[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[i] + kQ8KBsums));
    }
    LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r) {
      const uint8_t* wb = w + r * w_stride + b * kQ4KBlockBytes;
      uint8_t sc[8], mn[8];
      q4_k_scales_mins(wb + 4, sc, mn);
      const __m256i mins = _mm256_setr_epi16(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2], mn[3], mn[3], mn[4], mn[4],
                                             mn[5], mn[5], mn[6], mn[6], mn[7], mn[7]);
      __m256i sum[MX];
      LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) sum[i] = _mm256_setzero_si256();
      LOCR_Q4K_UNROLL for (int g = 0; g < 4; ++g) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 16 + 32 * g));
        const __m256i lo = _mm256_and_si256(q, nib);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
        const __m256i s_lo = _mm256_set1_epi16(sc[2 * g]), s_hi = _mm256_set1_epi16(sc[2 * g + 1]);
        LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
          const auto* qx = reinterpret_cast<const __m256i*>(xb[i] + kQ8KQs + 64 * g);
          const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(qx)), s_lo);
          const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256(qx + 1)), s_hi);
          sum[i] = _mm256_add_epi32(sum[i], _mm256_add_epi32(p_lo, p_hi));
        }
      }
      LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
        int32_t isum, imin;
        q4_k_hsum2(sum[i], _mm256_madd_epi16(bs[i], mins), &isum, &imin);
        acc[r][i] = q4_k_accumulate(acc[r][i], q8_k_scale(xb[i]), wb, isum, imin);
      }
    }
  }
  LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) c[i * ldc + r] = acc[r][i];
}

// The kernel_table.h gemm_q4_k entry: tiles of 4 weight rows x 2 activation rows (4 x 1 for one
// row), the remainders one weight row at a time. Every element is the same canonical dot product
// whatever the tiling, so the result does not depend on n or m.
static void q4_k_gemm_simd(const void* w_, int64_t w_stride, int64_t n, const void* x_, int64_t x_stride,
                           int64_t m, int64_t n_blocks, float* c, int64_t ldc) {
  const auto* w = static_cast<const uint8_t*>(w_);
  const auto* x = static_cast<const uint8_t*>(x_);
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) {
    int64_t r = 0;
    for (; r + 4 <= n; r += 4)
      q4_k_tile<4, 2>(w + r * w_stride, w_stride, x + i * x_stride, x_stride, n_blocks, c + i * ldc + r, ldc);
    for (; r < n; ++r)
      q4_k_tile<1, 2>(w + r * w_stride, w_stride, x + i * x_stride, x_stride, n_blocks, c + i * ldc + r, ldc);
  }
  for (; i < m; ++i) {
    int64_t r = 0;
    for (; r + 4 <= n; r += 4)
      q4_k_tile<4, 1>(w + r * w_stride, w_stride, x + i * x_stride, x_stride, n_blocks, c + i * ldc + r, ldc);
    for (; r < n; ++r)
      q4_k_tile<1, 1>(w + r * w_stride, w_stride, x + i * x_stride, x_stride, n_blocks, c + i * ldc + r, ldc);
  }
}

}  // namespace locr::kernels::cpu
