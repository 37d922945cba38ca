// The Q6_K x Q8_K dot products of q6_k_block.h on 256-bit vectors, included by kernels_avx2.cc (AVX2)
// and kernels_avx2_vnni.cc (AVX-VNNI: vpdpwssd for vpmaddwd + vpaddd, quant_simd256.h's qy_madd_acc): the
// same code under each file's flags (`static`, one copy per file).
//
// Per 32 weights (one quadrant k of a 128-weight half): the 6-bit quants q (0..63, unsigned: the
// nibble of ql and two bits of qh) times the activations by vpmaddubsw give sixteen exact int16
// pair sums (|sum| <= 2 * 63 * 127), vpmaddwd against the group's int8 scale (the low 128-bit lane
// holds group 2k of the half, the high lane 2k + 1: vpshufb) eight int32 sums. The -32 offset is
// one vpmaddwd of the sixteen Q8_K bsums against the sixteen scales, times 32, subtracted. All of
// it is exact, so the float step (q6_k_accumulate's) sees the generic path's integer.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q4_k_simd.h"
#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

// A byte shuffle broadcasting int16 element 2k of the low 128-bit half and 2k + 1 of the high one.
static inline __m256i q6_k_scale_shuffle(int k) {
  const char a = static_cast<char>(4 * k), b = static_cast<char>(4 * k + 1);
  const char c = static_cast<char>(4 * k + 2), d = static_cast<char>(4 * k + 3);
  return _mm256_setr_epi8(a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, c, d, c, d, c, d, c, d, c, d, c, d, c, d, c,
                          d);
}

static inline int32_t q6_k_hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_hadd_epi32(s, s);
  s = _mm_hadd_epi32(s, s);
  return _mm_cvtsi128_si32(s);
}

// NR weight rows against MX activation rows: c[i * ldc + r] for r < NR, i < MX.
template <int NR, int MX>
static inline void q6_k_tile(const uint8_t* w, int64_t w_stride, const uint8_t* x, int64_t x_stride,
                             int64_t n_blocks, float* c, int64_t ldc,
                             const uint8_t* w_end = nullptr) {
  WeightStream stream(w + NR * w_stride, w_end, NR * kQ6KBlockBytes);
  float acc[NR][MX];
  LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) acc[r][i] = 0.0f;
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  __m256i shuf[4];
  LOCR_Q4K_UNROLL for (int k = 0; k < 4; ++k) shuf[k] = q6_k_scale_shuffle(k);
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const uint8_t* xb[MX];
    __m256i bs[MX];
    float dx[MX];
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
      xb[i] = x + i * x_stride + b * kQ8KBlockBytes;
      bs[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[i] + kQ8KBsums));
      dx[i] = q8_k_scale(xb[i]);
    }
    LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r) {
      const uint8_t* wb = w + r * w_stride + b * kQ6KBlockBytes;
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + kQ6KScales)));
      __m256i sum[MX];
      LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) sum[i] = _mm256_setzero_si256();
      LOCR_Q4K_UNROLL for (int h = 0; h < 2; ++h) {
        const __m256i sch = _mm256_broadcastsi128_si256(h == 0 ? _mm256_castsi256_si128(sc16)
                                                               : _mm256_extracti128_si256(sc16, 1));
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + kQ6KQh + 32 * h));
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
        LOCR_Q4K_UNROLL for (int k = 0; k < 4; ++k) {
          const __m256i s = _mm256_shuffle_epi8(sch, shuf[k]);
          LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
            const auto* qx = reinterpret_cast<const __m256i*>(xb[i] + kQ8KQs + 128 * h + 32 * k);
            sum[i] = qy_madd_acc(sum[i], _mm256_maddubs_epi16(q[k], _mm256_loadu_si256(qx)), s);
          }
        }
      }
      const float d = q4_k_f16c(wb + kQ6KD);
      LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) {
        const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs[i], sc16), 5);  // 32 * sum_g sc[g] * bsums[g]
        const int32_t isum = q6_k_hsum(_mm256_sub_epi32(sum[i], off));
        acc[r][i] = std::fma(dx[i] * d, static_cast<float>(isum), acc[r][i]);  // q6_k_accumulate's step
      }
    }
  }
  LOCR_Q4K_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q4K_UNROLL for (int i = 0; i < MX; ++i) c[i * ldc + r] = acc[r][i];
}

// The kernel_table.h gemm_q6_k entry (tiling: quant_tiles.h).
[[maybe_unused]] static void q6_k_gemm_simd(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride,
                           int64_t m, int64_t n_blocks, float* c, int64_t ldc) {
  walk_quant_tiles(static_cast<const uint8_t*>(w), w_stride, n, static_cast<const uint8_t*>(x), x_stride, m, c, ldc,
                   [&](auto nr, auto mx, const uint8_t* wt, const uint8_t* xt, float* ct, const uint8_t* w_end) {
                     q6_k_tile<decltype(nr)::value, decltype(mx)::value>(wt, w_stride, xt, x_stride, n_blocks, ct, ldc, w_end);
                   });
}

}  // namespace locr::kernels::cpu
