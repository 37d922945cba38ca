// The Q8_0 dot products of q8_0_block.h on 256-bit vectors, included by kernels_avx2.cc (AVX2) and
// kernels_avx2_vnni.cc (AVX-VNNI): the same code under each file's flags (`static`, one copy per file).
// q8_0_avx512.h runs it for single activation rows (the GEMV, where it is faster than 512 bits).
//
// Per block, the eight int32 lane sums (exact), then one FMA per lane. AVX2: |w| (vpsignb w, w:
// -128 becomes 128 as an unsigned byte) times x with w's sign (vpsignb x, w) by vpmaddubsw gives
// sixteen exact int16 pair sums (|w| <= 128, |x| <= 127: at most 32512, no saturation), vpmaddwd
// against ones the eight lane sums; x must be an activation row from quantize_row_q8_0 (never -128:
// vpsignb cannot negate it), w may hold any int8. AVX-VNNI: the same |w| and x with w's sign into
// one vpdpbusd (unsigned x signed bytes, four products per int32 lane, exact) from zero. (An offset
// of 128 on x with a correction term, as q8_0_avx512.h does, measured slower here: 62 against 75
// GFLOP/s.) The activation side is prepared once per block (q8_0_prep_x) and the weight side once
// per row (q8_0_prep_w), each shared by the other rows of the tile.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/q8_0_block.h"
#include "kernels/cpu/quant_simd256.h"
#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#if defined(LOCR_QY_VNNI)
struct Q8W {
  __m256i w, abs_w;
};
static inline __m256i q8_0_prep_x(__m256i x) { return x; }
static inline Q8W q8_0_prep_w(__m256i w) { return {w, _mm256_sign_epi8(w, w)}; }
static inline __m256i q8_0_lane_sums(const Q8W& w, __m256i x) {
  return qy_dpbusd(_mm256_setzero_si256(), w.abs_w, _mm256_sign_epi8(x, w.w));
}
#else
struct Q8W {
  __m256i w, abs_w;
};
static inline __m256i q8_0_prep_x(__m256i x) { return x; }
static inline Q8W q8_0_prep_w(__m256i w) { return {w, _mm256_sign_epi8(w, w)}; }
static inline __m256i q8_0_lane_sums(const Q8W& w, __m256i x) {
  const __m256i p16 = _mm256_maddubs_epi16(w.abs_w, _mm256_sign_epi8(x, w.w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}
#endif

static inline float q8_0_reduce(__m256 acc) {
  alignas(32) float a[8];
  _mm256_store_ps(a, acc);
  return q8_0_hsum(a);
}

// The block's f16 scale by F16C (exact, as core/dtype.h's f16_to_f32, without a call per block).
static inline float q8_0_scale_f16c(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return _cvtsh_ss(h);
}

static inline __m256i q8_0_load(const uint8_t* block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
}

// NR weight rows against MX activation rows: c[i * ldc + r] for r < NR, i < MX.
// The accumulators must stay in registers: GCC keeps acc[NR][MX] on the stack unless the small
// loops are unrolled.
#define LOCR_Q8_UNROLL _Pragma("GCC unroll 8")

template <int NR, int MX>
static inline void q8_0_tile(const uint8_t* w, int64_t w_stride, const uint8_t* x, int64_t x_stride,
                             int64_t n_blocks, float* c, int64_t ldc,
                             const uint8_t* w_end = nullptr) {
  WeightStream stream(w + NR * w_stride, w_end, NR * kQ8BlockBytes);
  __m256 acc[NR][MX];
  LOCR_Q8_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) acc[r][i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    stream.block();
    const int64_t off = b * kQ8BlockBytes;
    __m256i xv[MX];
    float dx[MX];
    LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) {
      xv[i] = q8_0_prep_x(q8_0_load(x + i * x_stride + off));
      dx[i] = q8_0_scale_f16c(x + i * x_stride + off);
    }
    LOCR_Q8_UNROLL for (int r = 0; r < NR; ++r) {
      const uint8_t* wb = w + r * w_stride + off;
      const Q8W wv = q8_0_prep_w(q8_0_load(wb));
      const float dw = q8_0_scale_f16c(wb);
      LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i)
        acc[r][i] = _mm256_fmadd_ps(_mm256_set1_ps(dw * dx[i]), _mm256_cvtepi32_ps(q8_0_lane_sums(wv, xv[i])),
                                    acc[r][i]);
    }
  }
  LOCR_Q8_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_Q8_UNROLL for (int i = 0; i < MX; ++i) c[i * ldc + r] = q8_0_reduce(acc[r][i]);
}

// The kernel_table.h gemm_q8_0 entry (tiling: quant_tiles.h).
[[maybe_unused]] static void q8_0_gemm_simd(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride,
                           int64_t m, int64_t n_blocks, float* c, int64_t ldc) {
  walk_quant_tiles(static_cast<const uint8_t*>(w), w_stride, n, static_cast<const uint8_t*>(x), x_stride, m, c, ldc,
                   [&](auto nr, auto mx, const uint8_t* wt, const uint8_t* xt, float* ct, const uint8_t* w_end) {
                     q8_0_tile<decltype(nr)::value, decltype(mx)::value>(wt, w_stride, xt, x_stride, n_blocks, ct, ldc, w_end);
                   });
}

}  // namespace locr::kernels::cpu
