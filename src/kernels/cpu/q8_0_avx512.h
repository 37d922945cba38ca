// The Q8_0 dot products of q8_0_block.h on 512-bit vectors, included by kernels_avx512.cc (AVX-512BW)
// and kernels_avx512_vnni.cc (AVX512_VNNI): the same code under each file's flags, `static`.
//
// One zmm holds one block of two weight rows (rows 2p and 2p + 1 in its 256-bit halves) against one
// block of an activation row broadcast to both halves, so each half computes exactly the eight
// int32 lane sums of the canonical order, and each float lane its own FMA chain over the blocks:
// acc = fma(d_w * d_x, float(lane sum), acc), with d_w * d_x one float product per half. The halves
// are reduced apart at the end (q8_0_hsum), so the bits are the generic path's.
//
// Lane sums, AVX512_VNNI: vpdpbusd takes unsigned x signed bytes, so the activation goes in offset
// by 128 (x ^ 0x80 read as unsigned is x + 128) and the accumulator starts at -128 * (the sum of
// w's four bytes of the lane), itself one vpdpbusd of 0x80 bytes against w: sum (x + 128) w -
// 128 sum w = sum x w, every step exact in int32 (|.| < 2^17). Any int8 on either side.
// AVX-512BW (no vpsignb on 512 bits): |w| (vpabsb; -128 becomes 128 unsigned) times x negated where
// w < 0 (a masked subtract) by vpmaddubsw, then vpmaddwd against ones: exact int16 pair sums (|w|
// <= 128, |x| <= 127) as in q8_0_simd.h; x must not be -128 (quantize_row_q8_0 never writes it).
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q8_0_block.h"
#include "kernels/cpu/q8_0_simd.h"
#include "kernels/cpu/quant_avx512.h"

namespace locr::kernels::cpu {

#if defined(__AVX512VNNI__)
struct Q8Zw {
  __m512i w, neg_corr;
};
static inline __m512i q8_0_zmm_prep_x(__m512i x) {
  return _mm512_xor_si512(x, _mm512_set1_epi8(static_cast<char>(0x80)));
}
static inline Q8Zw q8_0_zmm_prep_w(__m512i w) {
  const __m512i corr = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), w);
  return {w, _mm512_sub_epi32(_mm512_setzero_si512(), corr)};
}
static inline __m512i q8_0_zmm_lane_sums(const Q8Zw& w, __m512i xu) { return _mm512_dpbusd_epi32(w.neg_corr, xu, w.w); }
#else
struct Q8Zw {
  __m512i abs_w;
  __mmask64 negative;
};
static inline __m512i q8_0_zmm_prep_x(__m512i x) { return x; }
static inline Q8Zw q8_0_zmm_prep_w(__m512i w) { return {_mm512_abs_epi8(w), _mm512_movepi8_mask(w)}; }
static inline __m512i q8_0_zmm_lane_sums(const Q8Zw& w, __m512i x) {
  const __m512i signed_x = _mm512_mask_sub_epi8(x, w.negative, _mm512_setzero_si512(), x);
  return _mm512_madd_epi16(_mm512_maddubs_epi16(w.abs_w, signed_x), _mm512_set1_epi16(1));
}
#endif

static inline __m256i q8_0_zmm_load256(const uint8_t* block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
}

// NR weight rows (NR even; the first `rows` of them are real, the last one repeated when `rows` is
// odd) against MX activation rows: c[i * ldc + r] for r < rows, i < MX. dw, dx: the blocks' scales
// as float, n_blocks per row (q8_0_gemm_zmm converts them once for all its tiles).
template <int NR, int MX>
static inline void q8_0_tile_zmm(const uint8_t* w, int64_t w_stride, int rows, const float* dw, const uint8_t* x,
                                 int64_t x_stride, const float* dx, int64_t n_blocks, float* c, int64_t ldc) {
  constexpr int NP = NR / 2;
  static_assert(NR % 2 == 0, "rows in pairs");
  const uint8_t* wr[NR];
  const float* dwr[NR];
  LOCR_QZ_UNROLL for (int r = 0; r < NR; ++r) {
    const int rr = r < rows ? r : rows - 1;
    wr[r] = w + rr * w_stride;
    dwr[r] = dw + rr * n_blocks;
  }
  __m512 acc[NP][MX];
  LOCR_QZ_UNROLL for (int p = 0; p < NP; ++p)
    LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) acc[p][i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t off = b * kQ8BlockBytes;
    __m512i xv[MX];
    LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i)
      xv[i] = q8_0_zmm_prep_x(_mm512_broadcast_i64x4(q8_0_zmm_load256(x + i * x_stride + off)));
    LOCR_QZ_UNROLL for (int p = 0; p < NP; ++p) {
      const __m256i w0 = q8_0_zmm_load256(wr[2 * p] + off), w1 = q8_0_zmm_load256(wr[2 * p + 1] + off);
      const Q8Zw pw = q8_0_zmm_prep_w(_mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1));
      const __m512 dwv = _mm512_insertf32x8(_mm512_set1_ps(dwr[2 * p][b]), _mm256_set1_ps(dwr[2 * p + 1][b]), 1);
      LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i)
        acc[p][i] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, _mm512_set1_ps(dx[i * n_blocks + b])),
                                    _mm512_cvtepi32_ps(q8_0_zmm_lane_sums(pw, xv[i])), acc[p][i]);
    }
  }
  LOCR_QZ_UNROLL for (int p = 0; p < NP; ++p)
    LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc[p][i]);
      c[i * ldc + 2 * p] = q8_0_hsum(lanes);
      if (2 * p + 1 < rows) c[i * ldc + 2 * p + 1] = q8_0_hsum(lanes + 8);
    }
}

// The kernel_table.h gemm_q8_0 entry: the scales converted once (every tile reads them many times),
// then tiles of 8 weight rows x 4 activation rows (10 x 3, 16 x 2, 16 x 1), about sixteen
// accumulators each. Up to 8 activation rows (the GEMV, a decode batch) go to the 256-bit kernel
// (q8_0_simd.h), which streams the weights faster there: no scale pass, one weight row per vector,
// the next tile prefetched (2.4x at 2 rows, 1.5x at 8 on Zen 4, docs/benchmarks.md); the same bits.
static void q8_0_gemm_zmm(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride, int64_t m,
                          int64_t n_blocks, float* c, int64_t ldc) {
  if (m <= 8) return q8_0_gemm_simd(w, w_stride, n, x, x_stride, m, n_blocks, c, ldc);
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  float* dw = qz_scratch((n + m) * n_blocks);
  float* dx = dw + n * n_blocks;
  for (int64_t r = 0; r < n; ++r) qz_f16_strided(wb + r * w_stride, kQ8BlockBytes, n_blocks, dw + r * n_blocks);
  for (int64_t i = 0; i < m; ++i) qz_f16_strided(xb + i * x_stride, kQ8BlockBytes, n_blocks, dx + i * n_blocks);
  walk_quant_tiles_zmm<4, 32, 2, 16>(n, m, [&](auto nr, auto mx, int rows, int64_t r, int64_t i) {
    q8_0_tile_zmm<decltype(nr)::value, decltype(mx)::value>(wb + r * w_stride, w_stride, rows, dw + r * n_blocks,
                                                            xb + i * x_stride, x_stride, dx + i * n_blocks, n_blocks,
                                                            c + i * ldc + r, ldc);
  });
}

}  // namespace locr::kernels::cpu
