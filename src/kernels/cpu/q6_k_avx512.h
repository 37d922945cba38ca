// The Q6_K matmul of q6_k_block.h on 512-bit vectors, on weights packed in groups of 16 rows,
// included by kernels_avx512.cc (AVX-512BW) and kernels_avx512_vnni.cc (AVX512_VNNI): the same code
// under each file's flags, `static`.
//
// Per group of 16 weights, two nibble lines and one line of 2-bit tops give four vectors of 6-bit
// quants (unsigned), each four consecutive weights of each of 16 rows; times four activation bytes
// broadcast to every lane they add four products to each row's group sum, started from the
// activation's -32 * bsum (the quants' offset). Times the rows' int8 scales (vpmulld) the sums add
// to isum, then q6_k_block.h's float step, one FMA for 16 rows. The weight vectors are shared by MX
// activation rows and each broadcast by NG groups.
//
// Group sums, AVX512_VNNI: vpdpbusd in int32. AVX-512BW: two vpmaddubsw (|.| <= 2 * 63 * 128 each)
// added in int16 (<= 32256: exact), vpmaddwd against ones, vpaddd. Exact integers either way.
#pragma once

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#define LOCR_Q6Z_UNROLL _Pragma("GCC unroll 16")

// s + the products of two quant vectors (unsigned) with two broadcast activation vectors.
static inline __m512i q6z_acc2(__m512i s, __m512i q0, __m512i x0, __m512i q1, __m512i x1) {
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s, q0, x0), q1, x1);
#else
  const __m512i p = _mm512_add_epi16(_mm512_maddubs_epi16(q0, x0), _mm512_maddubs_epi16(q1, x1));
  return _mm512_add_epi32(s, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
#endif
}

static inline __m512i q6z_bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// NG groups (from w, g_stride bytes apart) x MX activation rows (from x, x_row bytes apart):
// c[i * ldc + 16 g + l] for the rows l < 16 of group g, all but the last group's rows >= last_rows.
// With w_end set, the bytes after the tile up to w_end are prefetched as it goes (quant_tiles.h).
template <int NG, int MX>
static inline void q6_k_tile_zmm(const uint8_t* w, int64_t g_stride, const uint8_t* x, int64_t x_row,
                                 int64_t n_blocks, float* c, int64_t ldc, int last_rows, const uint8_t* w_end) {
  WeightStream<2> stream(w + NG * g_stride, w_end, NG * kQ6KGroupBlockBytes);
  Q6KAct act[MX];
  LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) act[i] = {x + i * x_row, n_blocks};
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  __m512 acc[NG][MX];
  LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g)
    LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) acc[g][i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const uint8_t* blk[NG];
    LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g) blk[g] = w + g * g_stride + b * kQ6KGroupBlockBytes;
    __m512i isum[NG][MX];
    LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g)
      LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) isum[g][i] = _mm512_setzero_si512();
    for (int k = 0; k < 16; ++k) {  // group of 16 weights k
      __m512i s[NG][MX];
      LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) {
        const __m512i start = _mm512_set1_epi32(act[i].corr(b)[k]);
        LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g) s[g][i] = start;
      }
      LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g) {
        const uint8_t* q = blk[g] + kQ6KGQuants + 192 * k;
        const __m512i l0 = _mm512_loadu_si512(q), l1 = _mm512_loadu_si512(q + 64), h = _mm512_loadu_si512(q + 128);
        const __m512i c0 = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
        const __m512i c1 = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
        const __m512i c2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(h, m30));
        const __m512i c3 =
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4), _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
        LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) {
          const int8_t* xq = act[i].quants(b) + 16 * k;
          s[g][i] = q6z_acc2(s[g][i], c0, q6z_bcast4(xq), c1, q6z_bcast4(xq + 4));
          s[g][i] = q6z_acc2(s[g][i], c2, q6z_bcast4(xq + 8), c3, q6z_bcast4(xq + 12));
        }
      }
      LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g) {
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[g] + kQ6KGScales + 16 * k)));
        LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) isum[g][i] = _mm512_add_epi32(isum[g][i], _mm512_mullo_epi32(s[g][i], sc));
      }
    }
    LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g) {
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[g] + kQ6KGD)));
      LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i)
        acc[g][i] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[i].scale(b))), _mm512_cvtepi32_ps(isum[g][i]),
                                    acc[g][i]);
    }
  }
  LOCR_Q6Z_UNROLL for (int g = 0; g < NG; ++g) {
    const __mmask16 keep = g + 1 < NG || last_rows >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << last_rows) - 1);
    LOCR_Q6Z_UNROLL for (int i = 0; i < MX; ++i) _mm512_mask_storeu_ps(c + i * ldc + 16 * g, keep, acc[g][i]);
  }
}

// The kernel_table.h gemm_q6_k entry (quant_tiles.h's walk_group_tiles).
[[maybe_unused]] static void q6_k_gemm_zmm(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                                           int64_t n_blocks, float* c, int64_t ldc) {
  const int64_t g_stride = n_blocks * kQ6KGroupBlockBytes, x_row = n_blocks * kQ6KActBlockBytes;
  const uint8_t* const w_end = w + groups * g_stride;
  walk_group_tiles(groups, rows, m, [&](auto ng, auto mx, int64_t g, int64_t i, int last_rows, bool prefetch) {
    q6_k_tile_zmm<decltype(ng)::value, decltype(mx)::value>(w + g * g_stride, g_stride, x + i * x_row, x_row, n_blocks,
                                                           c + i * ldc + 16 * g, ldc, last_rows,
                                                           prefetch ? w_end : nullptr);
  });
}

}  // namespace locr::kernels::cpu
