// The Q6_K x Q8_K dot products of q6_k_block.h on 512-bit vectors, included by kernels_avx512.cc
// (AVX-512BW: vpmaddubsw, vpmaddwd) and kernels_avx512_vnni.cc (vpmaddubsw, vpdpwssd): the same code
// under each file's flags (quant_avx512.h's qz_madd_acc), `static`, one copy per file.
//
// Per 128-weight half h of a super-block, one zmm of ql (64 bytes: the nibbles of quadrants k = 0
// and 1 low, 2 and 3 high) and the 32 bytes of qh broadcast to both 256-bit halves give two zmm of
// 6-bit quants, weights 128h + 0..63 (quadrants 0 | 1: low nibbles, qh bits shifted by 4 | 2 to
// bits 4-5) and 128h + 64..127 (quadrants 2 | 3: high nibbles, qh bits shifted by 0 | -2), each in
// the order of 64 consecutive activations. vpmaddubsw (unsigned quants 0..63 x activations: int16
// pairs, |.| <= 2 * 63 * 128) then the int16 scale of each group of 16 (one per 128-bit quarter,
// vpermw) into int32 lanes; the -32 offset is the Q8_K bsums against -32 x the scales, one more
// vpmaddwd / vpdpwssd. The lanes of several (row, activation) pairs are summed together
// (qz_hsum_epi32) into the exact isums, then q6_k_accumulate's float step for eight pairs at a
// time (one lane each): the generic path's bits.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_avx512.h"

namespace locr::kernels::cpu {

// NR weight rows against MX activation rows: c[i * ldc + r] for r < NR, i < MX.
template <int NR, int MX>
static inline void q6_k_tile_zmm(const uint8_t* w, int64_t w_stride, const uint8_t* x, int64_t x_stride,
                                 int64_t n_blocks, float* c, int64_t ldc,
                                 const uint8_t* w_end) {
  WeightStream stream(w + NR * w_stride, w_end, NR * kQ6KBlockBytes);
  constexpr int N = NR * MX, G = (N + 7) / 8;
  __m256 acc[G];
  LOCR_QZ_UNROLL for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
  alignas(64) float dx[16] = {}, d[16] = {};  // per activation row, per weight row
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  // Per 16-bit word: the low 256-bit half shifted by the first count, the high one by the second.
  const __m512i sh_k01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);  // left
  const __m512i sh_k23 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);  // right
  __m512i sidx[4];
  // Half h, quadrants 0 | 1 (k = 2h) or 2 | 3 (k = 2h + 1): scale 4k + t / 8 for int16 lane t.
  LOCR_QZ_UNROLL for (int k = 0; k < 4; ++k) sidx[k] = qz_word_index(4 * k, 8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const uint8_t* xb[MX];
    __m512i bs[MX];
    LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) {
      xb[i] = x + i * x_stride + b * kQ8KBlockBytes;
      bs[i] = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[i] + kQ8KBsums)));
      dx[i] = q8_k_scale(xb[i]);
    }
    __m512i sum[NR][MX];
    LOCR_QZ_UNROLL for (int r = 0; r < NR; ++r) {
      const uint8_t* wb = w + r * w_stride + b * kQ6KBlockBytes;
      d[r] = qz_f16(wb + kQ6KD);
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + kQ6KScales)));
      const __m512i sc = _mm512_castsi256_si512(sc16);
      // -32 x the scales (|.| <= 4096) against the bsums: the offset of the quants.
      const __m512i off = _mm512_zextsi256_si512(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5)));
      LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) sum[r][i] = qz_madd_acc(_mm512_setzero_si512(), bs[i], off);
      LOCR_QZ_UNROLL for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(wb + 64 * h);
        const __m512i qh =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + kQ6KQh + 32 * h)));
        const __m512i hi01 = _mm512_and_si512(_mm512_sllv_epi16(qh, sh_k01), m30);
        const __m512i hi23 = _mm512_and_si512(_mm512_srlv_epi16(qh, sh_k23), m30);
        // (a & 0x0F) | b: ternary-logic truth table 0xEA is (A & B) | C with A = a, B = m4, C = b.
        const __m512i q01 = _mm512_ternarylogic_epi32(ql, m4, hi01, 0xEA);
        const __m512i q23 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), m4, hi23, 0xEA);
        const __m512i s01 = _mm512_permutexvar_epi16(sidx[2 * h], sc);
        const __m512i s23 = _mm512_permutexvar_epi16(sidx[2 * h + 1], sc);
        LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) {
          const uint8_t* qx = xb[i] + kQ8KQs + 128 * h;
          sum[r][i] = qz_madd_acc(sum[r][i], _mm512_maddubs_epi16(q01, _mm512_loadu_si512(qx)), s01);
          sum[r][i] = qz_madd_acc(sum[r][i], _mm512_maddubs_epi16(q23, _mm512_loadu_si512(qx + 64)), s23);
        }
      }
    }
    __m256i isum[G];
    qz_hsum_epi32<N>(&sum[0][0], isum);
    const __m512 dxv = _mm512_load_ps(dx), dv = _mm512_load_ps(d);
    LOCR_QZ_UNROLL for (int g = 0; g < G; ++g)  // q6_k_accumulate's step
      acc[g] = _mm256_fmadd_ps(qz_pair_products<NR, MX>(g, dxv, dv), _mm256_cvtepi32_ps(isum[g]), acc[g]);
  }
  qz_store_pairs<NR, MX>(acc, c, ldc);
}

// The kernel_table.h gemm_q6_k entry (tiles: walk_k_quant_tiles_zmm, which prefetches a GEMV's weight
// stream).
static void q6_k_gemm_zmm(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride, int64_t m,
                          int64_t n_blocks, float* c, int64_t ldc) {
  walk_k_quant_tiles_zmm(w, w_stride, n, x, x_stride, m, c, ldc,
                         [&](auto nr, auto mx, const uint8_t* wt, const uint8_t* xt, float* ct, const uint8_t* w_end) {
                           q6_k_tile_zmm<decltype(nr)::value, decltype(mx)::value>(wt, w_stride, xt, x_stride,
                                                                                   n_blocks, ct, ldc, w_end);
                         });
}

}  // namespace locr::kernels::cpu
