// The Q8_0 matmul of q8_0_block.h on 512-bit vectors, included by kernels_avx512.cc (AVX-512BW) and
// kernels_avx512_vnni.cc (AVX512_VNNI): the same code under each file's flags, `static`.
//
// One vector holds one packed line: four bytes of each of a group's 16 weight rows. Times four
// bytes of an activation row broadcast to every lane, it adds four products to each row's block sum
// (lane r = row r); eight lines make the block, then one float product and one FMA per lane
// (q8_0_block.h's order). The weight vector is shared by MX activation rows and each broadcast by
// NG groups: NG x MX integer and float accumulators.
//
// Block sums, AVX512_VNNI: vpdpbusd of the stored weight bytes (q + 128, unsigned) and the activation
// bytes (signed), from the activation block's correction -128 * sum x: sum (q + 128) x - 128 sum x =
// sum q x, exact in int32. AVX-512BW (no vpsignb on 512 bits): the weights back to signed (^ 0x80),
// |q| (vpabsb; -128 becomes 128 unsigned) times x negated where q < 0 (a masked subtract) by
// vpmaddubsw, then vpmaddwd against ones: exact int16 pair sums (|q| <= 128, |x| <= 127), added.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/q8_0_block.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#define LOCR_Q8Z_UNROLL _Pragma("GCC unroll 16")

#if defined(__AVX512VNNI__)
struct Q8ZLine {
  __m512i u;
};
static inline Q8ZLine q8z_line(const uint8_t* p) { return {_mm512_loadu_si512(p)}; }
static inline __m512i q8z_init(const Q8Act& x, int64_t b) { return _mm512_set1_epi32(*x.corr(b)); }
static inline __m512i q8z_acc(__m512i acc, const Q8ZLine& w, __m512i xb) { return _mm512_dpbusd_epi32(acc, w.u, xb); }
#else
struct Q8ZLine {
  __m512i abs_q;
  __mmask64 negative;
};
static inline Q8ZLine q8z_line(const uint8_t* p) {
  const __m512i q = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set1_epi8(static_cast<char>(0x80)));
  return {_mm512_abs_epi8(q), _mm512_movepi8_mask(q)};
}
static inline __m512i q8z_init(const Q8Act&, int64_t) { return _mm512_setzero_si512(); }
static inline __m512i q8z_acc(__m512i acc, const Q8ZLine& w, __m512i xb) {
  const __m512i signed_x = _mm512_mask_sub_epi8(xb, w.negative, _mm512_setzero_si512(), xb);
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w.abs_q, signed_x), _mm512_set1_epi16(1)));
}
#endif

// NG groups (from w, g_stride bytes apart) x MX activation rows (from x, x_row bytes apart):
// c[i * ldc + 16 g + l] for the rows l < 16 of group g, all but the last group's rows >= last_rows.
// With w_end set, the bytes after the tile up to w_end are prefetched as it goes (quant_tiles.h).
template <int NG, int MX>
static inline void q8_0_tile_zmm(const uint8_t* w, int64_t g_stride, const uint8_t* x, int64_t x_row,
                                 int64_t n_blocks, float* c, int64_t ldc, int last_rows, const uint8_t* w_end) {
  WeightStream<2> stream(w + NG * g_stride, w_end, NG * kQ8GroupBlockBytes);
  Q8Group grp[NG];
  Q8Act act[MX];
  LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g) grp[g] = {w + g * g_stride, n_blocks};
  LOCR_Q8Z_UNROLL for (int i = 0; i < MX; ++i) act[i] = {x + i * x_row, n_blocks};
  __m512 acc[NG][MX];
  LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g)
    LOCR_Q8Z_UNROLL for (int i = 0; i < MX; ++i) acc[g][i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    __m512i sum[NG][MX];
    LOCR_Q8Z_UNROLL for (int i = 0; i < MX; ++i) {
      const __m512i init = q8z_init(act[i], b);
      LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g) sum[g][i] = init;
    }
    LOCR_Q8Z_UNROLL for (int j = 0; j < 8; ++j) {
      Q8ZLine line[NG];
      LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g) line[g] = q8z_line(grp[g].quants(b) + 64 * j);
      LOCR_Q8Z_UNROLL for (int i = 0; i < MX; ++i) {
        int32_t four;
        std::memcpy(&four, act[i].quants(b) + 4 * j, 4);
        const __m512i xb = _mm512_set1_epi32(four);
        LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g) sum[g][i] = q8z_acc(sum[g][i], line[g], xb);
      }
    }
    LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g) {
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp[g].scales(b))));
      LOCR_Q8Z_UNROLL for (int i = 0; i < MX; ++i)
        acc[g][i] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(act[i].scale(b))), _mm512_cvtepi32_ps(sum[g][i]),
                                    acc[g][i]);
    }
  }
  LOCR_Q8Z_UNROLL for (int g = 0; g < NG; ++g) {
    const __mmask16 keep = g + 1 < NG || last_rows >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << last_rows) - 1);
    LOCR_Q8Z_UNROLL for (int i = 0; i < MX; ++i) _mm512_mask_storeu_ps(c + i * ldc + 16 * g, keep, acc[g][i]);
  }
}

// The kernel_table.h gemm_q8_0 entry (quant_tiles.h's walk_group_tiles).
[[maybe_unused]] static void q8_0_gemm_zmm(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                                           int64_t n_blocks, float* c, int64_t ldc) {
  const int64_t g_stride = n_blocks * kQ8GroupBlockBytes, x_row = n_blocks * kQ8ActBlockBytes;
  const uint8_t* const w_end = w + groups * g_stride;
  walk_group_tiles(groups, rows, m, [&](auto ng, auto mx, int64_t g, int64_t i, int last_rows, bool prefetch) {
    q8_0_tile_zmm<decltype(ng)::value, decltype(mx)::value>(w + g * g_stride, g_stride, x + i * x_row, x_row, n_blocks,
                                                           c + i * ldc + 16 * g, ldc, last_rows,
                                                           prefetch ? w_end : nullptr);
  });
}

}  // namespace locr::kernels::cpu
