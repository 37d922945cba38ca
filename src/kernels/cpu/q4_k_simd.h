// The Q4_K matmul of q4_k_block.h on 256-bit vectors, on weights packed in groups of 16 rows,
// included by kernels_avx2.cc (AVX2) and kernels_avx2_vnni.cc (AVX-VNNI): the same code under each
// file's flags (`static`, one copy per file).
//
// A packed line's halves (rows 0..7 and 8..15 of a group, four bytes each) hold four consecutive
// weights of each row in their low nibbles and four more in their high ones; times four activation
// bytes broadcast to every lane they add four products to each row's sub-block sum. Eight such steps
// make a sub-block, its sum times the rows' scales adds to isum; imin is four int16-pair products of
// the mins against the activation's sub-block sums; then q4_k_block.h's two float steps, one FMA
// each for 8 rows. Sub-block sums, AVX2: vpmaddubsw (nibbles unsigned, activations signed) into
// int16 pairs, added (at most 8 x 2 x 15 x 128 = 30720 per lane: exact), then vpmaddwd against
// (scale, scale). AVX-VNNI: vpdpbusd in int32, times the scale by vpmulld. Exact either way.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/quant_simd256.h"

namespace locr::kernels::cpu {

#define LOCR_Q4Y_UNROLL _Pragma("GCC unroll 8")

#if defined(LOCR_QY_VNNI)
static inline __m256i q4y_acc(__m256i s, __m256i q, __m256i x) { return qy_dpbusd(s, q, x); }
// Eight rows' scales of sub-block j as the multiplier q4y_scale takes.
static inline __m256i q4y_scales(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
static inline __m256i q4y_scale(__m256i isum, __m256i s, __m256i sc) { return _mm256_add_epi32(isum, _mm256_mullo_epi32(s, sc)); }
#else
static inline __m256i q4y_acc(__m256i s, __m256i q, __m256i x) { return _mm256_add_epi16(s, _mm256_maddubs_epi16(q, x)); }
static inline __m256i q4y_scales(const uint8_t* p) {
  const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));  // (scale, scale) as int16 pairs
}
static inline __m256i q4y_scale(__m256i isum, __m256i s, __m256i sc) { return _mm256_add_epi32(isum, _mm256_madd_epi16(s, sc)); }
#endif

static inline __m256i q4y_bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// One group (from w) x MX activation rows (from x, x_row bytes apart): c[i * ldc + l] for its rows
// l < rows. No software prefetch: one sequential stream per tile, which the hardware prefetchers
// follow; q8_0_simd.h's 4 KB ahead made a Q4_K_M model's decode slower (docs/benchmarks.md).
template <int MX>
static inline void q4_k_tile_ymm(const uint8_t* w, const uint8_t* x, int64_t x_row, int64_t n_blocks, float* c,
                                 int64_t ldc, int rows) {
  Q4KAct act[MX];
  LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) act[i] = {x + i * x_row, n_blocks};
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[2][MX];
  LOCR_Q4Y_UNROLL for (int h = 0; h < 2; ++h)
    LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) acc[h][i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * kQ4KGroupBlockBytes;
    __m256i isum[2][MX];
    LOCR_Q4Y_UNROLL for (int h = 0; h < 2; ++h)
      LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) isum[h][i] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      __m256i s[2][MX];
      LOCR_Q4Y_UNROLL for (int h = 0; h < 2; ++h)
        LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) s[h][i] = _mm256_setzero_si256();
      LOCR_Q4Y_UNROLL for (int t = 0; t < 4; ++t) {
        LOCR_Q4Y_UNROLL for (int h = 0; h < 2; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ4KGQuants + 256 * j + 64 * t + 32 * h));
          const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
          LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) {
            const int8_t* xq = act[i].quants(b) + 32 * j + 4 * t;
            s[h][i] = q4y_acc(q4y_acc(s[h][i], lo, q4y_bcast4(xq)), hi, q4y_bcast4(xq + 16));
          }
        }
      }
      LOCR_Q4Y_UNROLL for (int h = 0; h < 2; ++h) {
        const __m256i sc = q4y_scales(blk + kQ4KGScales + 16 * j + 8 * h);
        LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) isum[h][i] = q4y_scale(isum[h][i], s[h][i], sc);
      }
    }
    LOCR_Q4Y_UNROLL for (int h = 0; h < 2; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ4KGD + 16 * h)));
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ4KGDmin + 16 * h)));
      LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) {
        __m256i imin = _mm256_setzero_si256();
        LOCR_Q4Y_UNROLL for (int p = 0; p < 4; ++p) {
          const __m256i mins = _mm256_cvtepu8_epi16(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ4KGMins + 32 * p + 16 * h)));
          imin = qy_madd_acc(imin, mins, q4y_bcast4(act[i].sub_sums(b) + 2 * p));
        }
        const __m256 dx = _mm256_set1_ps(act[i].scale(b));
        // fma(dx * d, isum, acc), then fma(-(dx * dmin), imin, acc): fnmadd is -(a * b) + c, one rounding.
        acc[h][i] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[h][i]), acc[h][i]);
        acc[h][i] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(imin), acc[h][i]);
      }
    }
  }
  LOCR_Q4Y_UNROLL for (int i = 0; i < MX; ++i) qy_store_group(acc[0][i], acc[1][i], c + i * ldc, rows);
}

// The kernel_table.h gemm_q4_k entry (quant_simd256.h's qy_walk_groups).
[[maybe_unused]] static void q4_k_gemm_simd(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                                            int64_t n_blocks, float* c, int64_t ldc) {
  const int64_t g_stride = n_blocks * kQ4KGroupBlockBytes, x_row = n_blocks * kQ4KActBlockBytes;
  qy_walk_groups(groups, rows, m, [&](auto mx, int64_t g, int64_t i, int nr, bool) {
    q4_k_tile_ymm<decltype(mx)::value>(w + g * g_stride, x + i * x_row, x_row, n_blocks, c + i * ldc + 16 * g, ldc, nr);
  });
}

}  // namespace locr::kernels::cpu
