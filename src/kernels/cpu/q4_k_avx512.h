// The Q4_K x Q8_K dot products of q4_k_block.h on 512-bit vectors, included by kernels_avx512.cc
// (AVX-512BW: vpmaddubsw, vpmaddwd) and kernels_avx512_vnni.cc (vpmaddubsw, vpdpwssd): the same code
// under each file's flags (quant_avx512.h's qz_madd_acc), `static`, one copy per file.
//
// Per 64 bytes of quants (two 32-byte groups), the low and the high nibbles regrouped by 256-bit
// halves (vshufi64x2) give two zmm of 64 consecutive weights each, sub-blocks 2g | 2g + 1, in the
// order of the activations. vpmaddubsw (nibbles 0..15 x activations: int16 pairs, |.| <= 2 * 15 *
// 128) then the sub-block's 6-bit scale (vpermw: the first 256 bits sc[2g], the others sc[2g+1])
// into int32 lanes; imin is vpmaddwd of the eight per-sub-block bsum pairs against the mins. The
// lanes of several (row, activation) pairs are summed together into the exact isums and imins
// (qz_hsum_epi32), then q4_k_accumulate's two float steps for eight pairs at a time (one lane
// each): the generic path's bits.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/q4_k_simd.h"
#include "kernels/cpu/quant_avx512.h"

namespace locr::kernels::cpu {

// NR weight rows against MX activation rows: c[i * ldc + r] for r < NR, i < MX.
template <int NR, int MX>
static inline void q4_k_tile_zmm(const uint8_t* w, int64_t w_stride, const uint8_t* x, int64_t x_stride,
                                 int64_t n_blocks, float* c, int64_t ldc,
                                 const uint8_t* w_end) {
  WeightStream stream(w + NR * w_stride, w_end, NR * kQ4KBlockBytes);
  constexpr int N = NR * MX, G = (N + 7) / 8;
  __m256 acc[G];
  LOCR_QZ_UNROLL for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
  alignas(64) float dx[16] = {}, d[16] = {}, dmin[16] = {};  // per activation row, per weight row
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i sidx[4];
  // int16 lanes 0..15 take scale 2g, lanes 16..31 scale 2g + 1.
  LOCR_QZ_UNROLL for (int g = 0; g < 4; ++g) sidx[g] = qz_word_index(2 * g, 16);
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const uint8_t* xb[MX];
    __m128i bs2[MX];
    LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) {
      xb[i] = x + i * x_stride + b * kQ8KBlockBytes;
      bs2[i] = q4_k_bsum_pairs(xb[i]);
      dx[i] = q8_k_scale(xb[i]);
    }
    __m512i sum[N];
    __m128i mins_sum[G * 8];
    LOCR_QZ_UNROLL for (int r = 0; r < NR; ++r) {
      const uint8_t* wb = w + r * w_stride + b * kQ4KBlockBytes;
      d[r] = qz_f16(wb);
      dmin[r] = qz_f16(wb + 2);
      const __m256i sm = _mm256_cvtepu8_epi16(q4_k_scales_mins16(wb + 4));  // scales, then mins (int16)
      const __m128i mins = _mm256_extracti128_si256(sm, 1);
      const __m512i sc = _mm512_castsi256_si512(sm);
      __m512i q[4], s[4];
      LOCR_QZ_UNROLL for (int j = 0; j < 2; ++j) {
        const __m512i raw = _mm512_loadu_si512(wb + 16 + 64 * j);
        const __m512i lo = _mm512_and_si512(raw, m4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
        q[2 * j] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
        q[2 * j + 1] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
      }
      LOCR_QZ_UNROLL for (int g = 0; g < 4; ++g) s[g] = _mm512_permutexvar_epi16(sidx[g], sc);
      LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) {
        __m512i t = _mm512_setzero_si512();
        LOCR_QZ_UNROLL for (int g = 0; g < 4; ++g)
          t = qz_madd_acc(t, _mm512_maddubs_epi16(q[g], _mm512_loadu_si512(xb[i] + kQ8KQs + 64 * g)), s[g]);
        sum[r * MX + i] = t;
        mins_sum[r * MX + i] = _mm_madd_epi16(bs2[i], mins);
      }
    }
    LOCR_QZ_UNROLL for (int k = N; k < G * 8; ++k) mins_sum[k] = _mm_setzero_si128();
    __m256i isum[G];
    qz_hsum_epi32<N>(sum, isum);
    const __m512 dxv = _mm512_load_ps(dx), dv = _mm512_load_ps(d), dminv = _mm512_load_ps(dmin);
    LOCR_QZ_UNROLL for (int g = 0; g < G; ++g) {
      const __m128i* mg = mins_sum + 8 * g;
      const __m256i imin = _mm256_set_m128i(qz_hsum4x_epi32(mg[4], mg[5], mg[6], mg[7]),
                                            qz_hsum4x_epi32(mg[0], mg[1], mg[2], mg[3]));
      // q4_k_accumulate's two steps: fma(dx * d, isum, acc), then fma(-(dx * dmin), imin, acc).
      acc[g] = _mm256_fmadd_ps(qz_pair_products<NR, MX>(g, dxv, dv), _mm256_cvtepi32_ps(isum[g]), acc[g]);
      acc[g] = _mm256_fmadd_ps(_mm256_xor_ps(qz_pair_products<NR, MX>(g, dxv, dminv), sign),
                               _mm256_cvtepi32_ps(imin), acc[g]);
    }
  }
  qz_store_pairs<NR, MX>(acc, c, ldc);
}

// The kernel_table.h gemm_q4_k entry (tiles: walk_k_quant_tiles_zmm, which prefetches a GEMV's weight
// stream). With the prefetch the GEMV is faster here than on 256 bits (one Zen 5 thread, from DRAM:
// 25-28 against 19-21 GB/s; Q6_K 31-33 against 27-29).
static void q4_k_gemm_zmm(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride, int64_t m,
                          int64_t n_blocks, float* c, int64_t ldc) {
  walk_k_quant_tiles_zmm(w, w_stride, n, x, x_stride, m, c, ldc,
                         [&](auto nr, auto mx, const uint8_t* wt, const uint8_t* xt, float* ct, const uint8_t* w_end) {
                           q4_k_tile_zmm<decltype(nr)::value, decltype(mx)::value>(wt, w_stride, xt, x_stride,
                                                                                   n_blocks, ct, ldc, w_end);
                         });
}

}  // namespace locr::kernels::cpu
