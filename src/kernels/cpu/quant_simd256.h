// What the 256-bit quantized kernels (q8_0_simd.h, q4_k_simd.h, q6_k_simd.h) share: whether the file
// is built with a 256-bit VNNI (AVX-VNNI's VEX encoding, or AVX512_VNNI + AVX512VL's EVEX one: the
// same operations), and those operations with the AVX2 stand-in where there is one. Only
// instruction choice: the integer results are exact either way.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define LOCR_QY_VNNI 1

// acc + the four products of unsigned bytes u and signed bytes s per int32 lane (vpdpbusd).
static inline __m256i qy_dpbusd(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
  return _mm256_dpbusd_epi32(acc, u, s);
#endif
}
#endif

// acc + the int16 pairs of p times those of s, summed per int32 lane (exact while it fits in int32):
// vpdpwssd, or vpmaddwd + vpaddd.
static inline __m256i qy_madd_acc(__m256i acc, __m256i p, __m256i s) {
#if defined(__AVXVNNI__)
  return _mm256_dpwssd_avx_epi32(acc, p, s);
#elif defined(LOCR_QY_VNNI)
  return _mm256_dpwssd_epi32(acc, p, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
#endif
}

namespace locr::kernels::cpu {

// A group's outputs for one activation row, rows 0..7 in lo and 8..15 in hi, into c[0..rows).
static inline void qy_store_group(__m256 lo, __m256 hi, float* c, int rows) {
  if (rows >= 16) {
    _mm256_storeu_ps(c, lo);
    _mm256_storeu_ps(c + 8, hi);
    return;
  }
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, lo);
  _mm256_store_ps(lanes + 8, hi);
  for (int l = 0; l < rows; ++l) c[l] = lanes[l];
}

// The walk of the 256-bit kernels on weights packed in groups of 16 rows (q8_0_simd.h, q4_k_simd.h,
// q6_k_simd.h): each group against every activation row in pairs (one left over) while it is in
// cache, so the weights stream from memory once. tile(mx, g, i, rows, first): group g against
// activation rows i..i+mx-1 (mx a std::integral_constant), `rows` of its rows real; first: the
// first pass over the group.
template <class Tile>
static inline void qy_walk_groups(int64_t groups, int64_t rows, int64_t m, Tile tile) {
  for (int64_t g = 0; g < groups; ++g) {
    const int nr = static_cast<int>(rows - 16 * g < 16 ? rows - 16 * g : 16);
    int64_t i = 0;
    for (; i + 2 <= m; i += 2) tile(std::integral_constant<int, 2>{}, g, i, nr, i == 0);
    if (i < m) tile(std::integral_constant<int, 1>{}, g, i, nr, i == 0);
  }
}

}  // namespace locr::kernels::cpu
