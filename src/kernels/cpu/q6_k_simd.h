// The Q6_K matmul of q6_k_block.h on 256-bit vectors, on weights packed in groups of 16 rows,
// included by kernels_avx2.cc (AVX2) and kernels_avx2_vnni.cc (AVX-VNNI): the same code under each
// file's flags (`static`, one copy per file).
//
// A packed line's halves (rows 0..7 and 8..15 of a group): per group of 16 weights, two nibble lines
// and one line of 2-bit tops give four vectors of 6-bit quants (unsigned), four consecutive weights
// of each row; times four activation bytes broadcast to every lane they add four products to each
// row's group sum, started from the activation's -32 * bsum. Times the rows' int8 scales (vpmulld)
// the sums add to isum, then q6_k_block.h's float step, one FMA for 8 rows. Group sums, AVX2: two
// vpmaddubsw (|.| <= 2 * 63 * 128 each) added in int16 (<= 32256: exact), vpmaddwd against ones,
// vpaddd. AVX-VNNI: vpdpbusd. Exact integers either way.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_simd256.h"

namespace locr::kernels::cpu {

#define LOCR_Q6Y_UNROLL _Pragma("GCC unroll 8")

// s + the products of two quant vectors (unsigned) with two broadcast activation vectors.
static inline __m256i q6y_acc2(__m256i s, __m256i q0, __m256i x0, __m256i q1, __m256i x1) {
#if defined(LOCR_QY_VNNI)
  return qy_dpbusd(qy_dpbusd(s, q0, x0), q1, x1);
#else
  const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(q0, x0), _mm256_maddubs_epi16(q1, x1));
  return _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

static inline __m256i q6y_bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// One group (from w) x MX activation rows (from x, x_row bytes apart): c[i * ldc + l] for its rows
// l < rows. No software prefetch: one sequential stream per tile, which the hardware prefetchers
// follow; q8_0_simd.h's 4 KB ahead made a Q4_K_M model's decode slower (docs/benchmarks.md).
template <int MX>
static inline void q6_k_tile_ymm(const uint8_t* w, const uint8_t* x, int64_t x_row, int64_t n_blocks, float* c,
                                 int64_t ldc, int rows) {
  Q6KAct act[MX];
  LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) act[i] = {x + i * x_row, n_blocks};
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  __m256 acc[2][MX];
  LOCR_Q6Y_UNROLL for (int h = 0; h < 2; ++h)
    LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) acc[h][i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * kQ6KGroupBlockBytes;
    __m256i isum[2][MX];
    LOCR_Q6Y_UNROLL for (int h = 0; h < 2; ++h)
      LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) isum[h][i] = _mm256_setzero_si256();
    for (int k = 0; k < 16; ++k) {  // group of 16 weights k
      __m256i s[2][MX];
      LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) s[0][i] = s[1][i] = _mm256_set1_epi32(act[i].corr(b)[k]);
      LOCR_Q6Y_UNROLL for (int h = 0; h < 2; ++h) {
        const uint8_t* q = blk + kQ6KGQuants + 192 * k + 32 * h;
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64));
        const __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 128));
        const __m256i c0 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(t, 4), m30));
        const __m256i c1 = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(t, 2), m30));
        const __m256i c2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(t, m30));
        const __m256i c3 =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(t, 2), m30));
        LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) {
          const int8_t* xq = act[i].quants(b) + 16 * k;
          s[h][i] = q6y_acc2(s[h][i], c0, q6y_bcast4(xq), c1, q6y_bcast4(xq + 4));
          s[h][i] = q6y_acc2(s[h][i], c2, q6y_bcast4(xq + 8), c3, q6y_bcast4(xq + 12));
        }
      }
      LOCR_Q6Y_UNROLL for (int h = 0; h < 2; ++h) {
        const __m256i sc =
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + kQ6KGScales + 16 * k + 8 * h)));
        LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) isum[h][i] = _mm256_add_epi32(isum[h][i], _mm256_mullo_epi32(s[h][i], sc));
      }
    }
    LOCR_Q6Y_UNROLL for (int h = 0; h < 2; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ6KGD + 16 * h)));
      LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i)
        acc[h][i] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[i].scale(b))), _mm256_cvtepi32_ps(isum[h][i]),
                                    acc[h][i]);
    }
  }
  LOCR_Q6Y_UNROLL for (int i = 0; i < MX; ++i) qy_store_group(acc[0][i], acc[1][i], c + i * ldc, rows);
}

// The kernel_table.h gemm_q6_k entry (quant_simd256.h's qy_walk_groups).
[[maybe_unused]] static void q6_k_gemm_simd(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                                            int64_t n_blocks, float* c, int64_t ldc) {
  const int64_t g_stride = n_blocks * kQ6KGroupBlockBytes, x_row = n_blocks * kQ6KActBlockBytes;
  qy_walk_groups(groups, rows, m, [&](auto mx, int64_t g, int64_t i, int nr, bool) {
    q6_k_tile_ymm<decltype(mx)::value>(w + g * g_stride, x + i * x_row, x_row, n_blocks, c + i * ldc + 16 * g, ldc, nr);
  });
}

}  // namespace locr::kernels::cpu
