// What the 256-bit quantized kernels (q8_0_simd.h, q4_k_simd.h, q6_k_simd.h) share: whether the file
// is built with a 256-bit VNNI (AVX-VNNI's VEX encoding, or AVX512_VNNI + AVX512VL's EVEX one: the
// same operations), and those operations with the AVX2 stand-in where there is one. Only
// instruction choice: the integer results are exact either way.
#pragma once

#include <immintrin.h>

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
