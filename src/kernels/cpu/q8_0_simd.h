// The Q8_0 matmul of q8_0_block.h on 256-bit vectors, included by kernels_avx2.cc (AVX2) and
// kernels_avx2_vnni.cc (AVX-VNNI): the same code under each file's flags (`static`, one copy per file).
//
// A packed line's halves (rows 0..7 and 8..15 of a group, four bytes each) times four activation
// bytes broadcast to every lane add four products to each row's block sum; eight lines make the
// block, then one float product and one FMA per lane (q8_0_block.h's order). Block sums, AVX2: the
// weights back to signed (^ 0x80), |q| (vpsignb q, q: -128 becomes 128 unsigned) times x with q's
// sign (vpsignb x, q) by vpmaddubsw (exact int16 pair sums, |q| <= 128, |x| <= 127: x must be an
// activation from quantize_act_q8_0, never -128), vpmaddwd against ones, added. AVX-VNNI: vpdpbusd
// of the stored unsigned weight bytes and x from the activation block's correction, as on 512 bits.
#pragma once

#include <immintrin.h>

#include <type_traits>

#include "kernels/cpu/q8_0_block.h"
#include "kernels/cpu/quant_simd256.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#define LOCR_Q8_UNROLL _Pragma("GCC unroll 8")

// How far ahead of its reads a tile prefetches (into L1) when it streams the weights: 4 KB measured
// best on Zen 4 among 1, 2, 4, 8 and 16 KB (the last into L2), level with the row-by-row kernel
// this replaced at one activation row.
constexpr int64_t kQ8YAhead = 4096;

#if defined(LOCR_QY_VNNI)
struct Q8YLine {
  __m256i u;
};
static inline Q8YLine q8y_line(const uint8_t* p) { return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))}; }
static inline __m256i q8y_init(const Q8Act& x, int64_t b) { return _mm256_set1_epi32(*x.corr(b)); }
static inline __m256i q8y_acc(__m256i acc, const Q8YLine& w, __m256i xb) { return qy_dpbusd(acc, w.u, xb); }
#else
struct Q8YLine {
  __m256i q, abs_q;
};
static inline Q8YLine q8y_line(const uint8_t* p) {
  const __m256i q = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                     _mm256_set1_epi8(static_cast<char>(0x80)));
  return {q, _mm256_sign_epi8(q, q)};
}
static inline __m256i q8y_init(const Q8Act&, int64_t) { return _mm256_setzero_si256(); }
static inline __m256i q8y_acc(__m256i acc, const Q8YLine& w, __m256i xb) {
  const __m256i p16 = _mm256_maddubs_epi16(w.abs_q, _mm256_sign_epi8(xb, w.q));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}
#endif

// One group (from w) x MX activation rows (from x, x_row bytes apart): c[i * ldc + l] for its rows
// l < rows. With w_end set, the bytes from kQ8YAhead past its start up to w_end are prefetched as it
// goes, one group's worth (the next tile then starts where this one stopped).
template <int MX>
static inline void q8_0_tile_ymm(const uint8_t* w, const uint8_t* x, int64_t x_row, int64_t n_blocks, float* c,
                                 int64_t ldc, int rows, const uint8_t* w_end) {
  WeightStream<3> stream(w + kQ8YAhead, w_end, kQ8GroupBlockBytes);
  const Q8Group grp{w, n_blocks};
  Q8Act act[MX];
  LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) act[i] = {x + i * x_row, n_blocks};
  __m256 acc[2][MX];
  LOCR_Q8_UNROLL for (int h = 0; h < 2; ++h)
    LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) acc[h][i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    __m256i sum[2][MX];
    LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) sum[0][i] = sum[1][i] = q8y_init(act[i], b);
    const uint8_t* q = grp.quants(b);
    LOCR_Q8_UNROLL for (int j = 0; j < 8; ++j) {
      const Q8YLine lo = q8y_line(q + 64 * j), hi = q8y_line(q + 64 * j + 32);
      LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) {
        int32_t four;
        std::memcpy(&four, act[i].quants(b) + 4 * j, 4);
        const __m256i xb = _mm256_set1_epi32(four);
        sum[0][i] = q8y_acc(sum[0][i], lo, xb);
        sum[1][i] = q8y_acc(sum[1][i], hi, xb);
      }
    }
    LOCR_Q8_UNROLL for (int h = 0; h < 2; ++h) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(grp.scales(b) + 16 * h)));
      LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i)
        acc[h][i] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(act[i].scale(b))), _mm256_cvtepi32_ps(sum[h][i]),
                                    acc[h][i]);
    }
  }
  LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) qy_store_group(acc[0][i], acc[1][i], c + i * ldc, rows);
}

// The kernel_table.h gemm_q8_0 entry (quant_simd256.h's qy_walk_groups); the first pass over
// each group prefetches ahead.
[[maybe_unused]] static void q8_0_gemm_simd(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                                            int64_t n_blocks, float* c, int64_t ldc) {
  const int64_t g_stride = n_blocks * kQ8GroupBlockBytes, x_row = n_blocks * kQ8ActBlockBytes;
  const uint8_t* const w_end = w + groups * g_stride;
  qy_walk_groups(groups, rows, m, [&](auto mx, int64_t g, int64_t i, int nr, bool first) {
    q8_0_tile_ymm<decltype(mx)::value>(w + g * g_stride, x + i * x_row, x_row, n_blocks, c + i * ldc + 16 * g, ldc, nr,
                                       first ? w_end : nullptr);
  });
}

}  // namespace locr::kernels::cpu
