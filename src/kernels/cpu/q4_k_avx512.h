// The Q4_K matmul of q4_k_block.h on 512-bit vectors, on weights packed in groups of 16 rows,
// included by kernels_avx512.cc (AVX-512BW) and kernels_avx512_vnni.cc (AVX512_VNNI): the same code
// under each file's flags, `static`.
//
// One packed line's low (high) nibbles are four consecutive weights of each of 16 rows; times four
// activation bytes broadcast to every lane they add four products to each row's sub-block sum
// (lane r = row r). Eight such steps make a sub-block; its sum times the rows' 6-bit scales adds to
// isum. imin is four int16-pair products of the rows' mins against the activation's sub-block sums.
// Then q4_k_block.h's two float steps, one FMA each for 16 rows. The weight vectors are shared by MX
// activation rows and each broadcast by NG groups.
//
// Sub-block sums, AVX512_VNNI: vpdpbusd (the nibbles unsigned, the activations signed) in int32,
// times the scale by vpmulld. AVX-512BW: vpmaddubsw into int16 pairs, added (at most 8 x 2 x 15 x
// 128 = 30720 per lane: exact), then vpmaddwd against (scale, scale). Exact integers either way.
#pragma once

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#define LOCR_Q4Z_UNROLL _Pragma("GCC unroll 16")

#if defined(__AVX512VNNI__)
static inline __m512i q4z_acc(__m512i s, __m512i q, __m512i x) { return _mm512_dpbusd_epi32(s, q, x); }
// The rows' scales of sub-block j as the multiplier q4z_scale takes.
static inline __m512i q4z_scales(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline __m512i q4z_scale(__m512i isum, __m512i s, __m512i sc) { return _mm512_add_epi32(isum, _mm512_mullo_epi32(s, sc)); }
static inline __m512i q4z_madd_acc(__m512i acc, __m512i a, __m512i b) { return _mm512_dpwssd_epi32(acc, a, b); }
#else
static inline __m512i q4z_acc(__m512i s, __m512i q, __m512i x) { return _mm512_add_epi16(s, _mm512_maddubs_epi16(q, x)); }
static inline __m512i q4z_scales(const uint8_t* p) {
  const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm512_or_si512(sc, _mm512_slli_epi32(sc, 16));  // (scale, scale) as int16 pairs
}
static inline __m512i q4z_scale(__m512i isum, __m512i s, __m512i sc) { return _mm512_add_epi32(isum, _mm512_madd_epi16(s, sc)); }
static inline __m512i q4z_madd_acc(__m512i acc, __m512i a, __m512i b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
#endif

static inline __m512i q4z_bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// NG groups (from w, g_stride bytes apart) x MX activation rows (from x, x_row bytes apart):
// c[i * ldc + 16 g + l] for the rows l < 16 of group g, all but the last group's rows >= last_rows.
// With w_end set, the bytes after the tile up to w_end are prefetched as it goes (quant_tiles.h).
template <int NG, int MX>
static inline void q4_k_tile_zmm(const uint8_t* w, int64_t g_stride, const uint8_t* x, int64_t x_row,
                                 int64_t n_blocks, float* c, int64_t ldc, int last_rows, const uint8_t* w_end) {
  WeightStream<2> stream(w + NG * g_stride, w_end, NG * kQ4KGroupBlockBytes);
  Q4KAct act[MX];
  LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) act[i] = {x + i * x_row, n_blocks};
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512 acc[NG][MX];
  LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g)
    LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) acc[g][i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const uint8_t* blk[NG];
    LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g) blk[g] = w + g * g_stride + b * kQ4KGroupBlockBytes;
    __m512i isum[NG][MX];
    LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g)
      LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) isum[g][i] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i s[NG][MX];
      LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g)
        LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) s[g][i] = _mm512_setzero_si512();
      LOCR_Q4Z_UNROLL for (int t = 0; t < 4; ++t) {
        LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g) {
          const __m512i v = _mm512_loadu_si512(blk[g] + kQ4KGQuants + 256 * j + 64 * t);
          const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
          LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) {
            const int8_t* xq = act[i].quants(b) + 32 * j + 4 * t;
            s[g][i] = q4z_acc(q4z_acc(s[g][i], lo, q4z_bcast4(xq)), hi, q4z_bcast4(xq + 16));
          }
        }
      }
      LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g) {
        const __m512i sc = q4z_scales(blk[g] + kQ4KGScales + 16 * j);
        LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) isum[g][i] = q4z_scale(isum[g][i], s[g][i], sc);
      }
    }
    LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g) {
      __m512i mins[4];
      LOCR_Q4Z_UNROLL for (int p = 0; p < 4; ++p)
        mins[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[g] + kQ4KGMins + 32 * p)));
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[g] + kQ4KGD)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[g] + kQ4KGDmin)));
      LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) {
        __m512i imin = _mm512_setzero_si512();
        LOCR_Q4Z_UNROLL for (int p = 0; p < 4; ++p) imin = q4z_madd_acc(imin, mins[p], q4z_bcast4(act[i].sub_sums(b) + 2 * p));
        const __m512 dx = _mm512_set1_ps(act[i].scale(b));
        // fma(dx * d, isum, acc), then fma(-(dx * dmin), imin, acc): fnmadd is -(a * b) + c, one rounding.
        acc[g][i] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[g][i]), acc[g][i]);
        acc[g][i] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(imin), acc[g][i]);
      }
    }
  }
  LOCR_Q4Z_UNROLL for (int g = 0; g < NG; ++g) {
    const __mmask16 keep = g + 1 < NG || last_rows >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << last_rows) - 1);
    LOCR_Q4Z_UNROLL for (int i = 0; i < MX; ++i) _mm512_mask_storeu_ps(c + i * ldc + 16 * g, keep, acc[g][i]);
  }
}

// The kernel_table.h gemm_q4_k entry (quant_tiles.h's walk_group_tiles).
[[maybe_unused]] static void q4_k_gemm_zmm(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                                           int64_t n_blocks, float* c, int64_t ldc) {
  const int64_t g_stride = n_blocks * kQ4KGroupBlockBytes, x_row = n_blocks * kQ4KActBlockBytes;
  const uint8_t* const w_end = w + groups * g_stride;
  walk_group_tiles(groups, rows, m, [&](auto ng, auto mx, int64_t g, int64_t i, int last_rows, bool prefetch) {
    q4_k_tile_zmm<decltype(ng)::value, decltype(mx)::value>(w + g * g_stride, g_stride, x + i * x_row, x_row, n_blocks,
                                                           c + i * ldc + 16 * g, ldc, last_rows,
                                                           prefetch ? w_end : nullptr);
  });
}

}  // namespace locr::kernels::cpu
