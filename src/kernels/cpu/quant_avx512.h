// What the 512-bit K-quant matmul kernels (q4_k_avx512.h, q6_k_avx512.h) share:
// the int16-pairs multiply-accumulate (vpdpwssd where the file is built with AVX512_VNNI, else
// vpmaddwd + vpaddd: the same exact int32 lanes), horizontal sums of several int32 vectors, and
// the walk over an n x m output in register tiles. Included by kernels_avx512.cc and
// kernels_avx512_vnni.cc (the same code under each file's flags; `static`, one copy per file). Not
// the canonical dot products themselves: those are defined by the *_block.h headers.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/cpu/quant_tiles.h"

namespace locr::kernels::cpu {

#define LOCR_QZ_UNROLL _Pragma("GCC unroll 16")

// The f16 at p by F16C (exact, as core/dtype.h's f16_to_f32, without a call).
static inline float qz_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// vpermw indices: int16 lane t (0..31) takes word first + t / run (a scale broadcast per run of lanes).
static inline __m512i qz_word_index(int first, int run) {
  alignas(64) int16_t idx[32];
  for (int t = 0; t < 32; ++t) idx[t] = static_cast<int16_t>(first + t / run);
  return _mm512_load_si512(idx);
}

// acc + the int16 pairs of p times those of s, summed per int32 lane (exact while it fits in int32).
static inline __m512i qz_madd_acc(__m512i acc, __m512i p, __m512i s) {
#if defined(__AVX512VNNI__)
  return _mm512_dpwssd_epi32(acc, p, s);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(p, s));
#endif
}

// The 128-bit quarters of a and b halved: [a.q0 + a.q2, a.q1 + a.q3, b.q0 + b.q2, b.q1 + b.q3].
static inline __m512i qz_fold_halves(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

// Lane k = the sum of v[k]'s sixteen int32 lanes (k < 8), by a transposing tree (24 vector
// operations for all eight). Integer sums: exact in any order as long as each total fits.
static inline __m256i qz_hsum8_epi32(const __m512i v[8]) {
  const __m512i t01 = qz_fold_halves(v[0], v[1]), t23 = qz_fold_halves(v[2], v[3]);
  const __m512i t45 = qz_fold_halves(v[4], v[5]), t67 = qz_fold_halves(v[6], v[7]);
  // Quarters [v0, v1, v2, v3] (four partial lanes each), and [v4, v5, v6, v7].
  const __m512i u0 = _mm512_add_epi32(_mm512_shuffle_i64x2(t01, t23, _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_i64x2(t01, t23, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i u1 = _mm512_add_epi32(_mm512_shuffle_i64x2(t45, t67, _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_i64x2(t45, t67, _MM_SHUFFLE(3, 1, 3, 1)));
  // Per quarter k: [v_k l0+l2, v_k+4 l0+l2, v_k l1+l3, v_k+4 l1+l3], then the pairs added: the
  // totals of v_k and v_k+4 in lanes 4k and 4k + 1, gathered in order.
  __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi32(u0, u1), _mm512_unpackhi_epi32(u0, u1));
  s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, s));
}

// Lane k % 8 of out[k / 8] = the lane sum of v[k] for k < N (the last group padded with zeros).
template <int N>
static inline void qz_hsum_epi32(const __m512i* v, __m256i* out) {
  LOCR_QZ_UNROLL for (int g = 0; g < N; g += 8) {
    __m512i group[8];
    LOCR_QZ_UNROLL for (int k = 0; k < 8; ++k) group[k] = g + k < N ? v[g + k] : _mm512_setzero_si512();
    out[g / 8] = qz_hsum8_epi32(group);
  }
}

// The float side of a K-quant tile of NR weight rows x MX activation rows holds its N = NR * MX
// running sums in __m256 groups: pair p = r * MX + i in lane p % 8 of group p / 8, each lane its own
// chain of FMAs (vfmadd231ps lane by lane is std::fma: the scalar code's bits).
// Indices for vpermps: lane l of group g takes entry p / MX (rows) or p % MX (activations).
template <int NR, int MX>
static inline __m512i qz_pair_index(int g, bool rows) {
  alignas(64) int32_t idx[16];
  for (int l = 0; l < 16; ++l) {
    const int p = 8 * g + l % 8;
    idx[l] = p < NR * MX ? (rows ? p / MX : p % MX) : 0;
  }
  return _mm512_load_si512(idx);
}

// Per pair of group g: by_act[i] * by_row[r], one float product (as the scalar dx * d).
template <int NR, int MX>
static inline __m256 qz_pair_products(int g, __m512 by_act, __m512 by_row) {
  return _mm512_castps512_ps256(_mm512_mul_ps(_mm512_permutexvar_ps(qz_pair_index<NR, MX>(g, false), by_act),
                                              _mm512_permutexvar_ps(qz_pair_index<NR, MX>(g, true), by_row)));
}

// c[i * ldc + r] = the running sum of pair (r, i).
template <int NR, int MX>
static inline void qz_store_pairs(const __m256* acc, float* c, int64_t ldc) {
  alignas(32) float lanes[(NR * MX + 7) / 8 * 8];
  LOCR_QZ_UNROLL for (int g = 0; g < (NR * MX + 7) / 8; ++g) _mm256_store_ps(lanes + 8 * g, acc[g]);
  LOCR_QZ_UNROLL for (int r = 0; r < NR; ++r)
    LOCR_QZ_UNROLL for (int i = 0; i < MX; ++i) c[i * ldc + r] = lanes[r * MX + i];
}

// The sum of the four int32 lanes of each of a, b, c, d, in that order.
static inline __m128i qz_hsum4x_epi32(__m128i a, __m128i b, __m128i c, __m128i d) {
  return _mm_hadd_epi32(_mm_hadd_epi32(a, b), _mm_hadd_epi32(c, d));
}

// The tiles of an n x m output (weight rows r, activation rows i; c[i * ldc + r]): activation rows
// in chunks of MX (the last chunk 1..MX-1), and per chunk of mx rows, weight rows in tiles of
// NR = ACC / mx (at most NR_MAX) rounded down to a multiple of G (at least G): the tile's
// accumulators stay about ACC. The weight rows left over go in tiles of G. `tile(nr, mx, rows, r, i)`
// computes rows (<= nr, < nr only in the last tile when G > 1) weight rows from row r against mx
// activation rows from row i, nr and mx given as std::integral_constant. The order of the tiles
// does not change any element (each is one canonical dot product).
template <int MX, int ACC, int G, int NR_MAX, class Tile>
static inline void walk_quant_tiles_zmm(int64_t n, int64_t m, Tile tile) {
  static_assert(MX >= 1 && MX <= 8, "activation chunks of 1..8 rows");
  const auto chunk = [&](auto mx, int64_t i) {
    constexpr int kMx = decltype(mx)::value;
    constexpr int kAcc = ACC / kMx < NR_MAX ? ACC / kMx : NR_MAX;
    constexpr int kNr = kAcc / G * G > G ? kAcc / G * G : G;
    int64_t r = 0;
    for (; r + kNr <= n; r += kNr) tile(std::integral_constant<int, kNr>{}, mx, kNr, r, i);
    for (; r < n; r += G)
      tile(std::integral_constant<int, G>{}, mx, static_cast<int>(n - r < G ? n - r : G), r, i);
  };
  int64_t i = 0;
  for (; i + MX <= m; i += MX) chunk(std::integral_constant<int, MX>{}, i);
  const int64_t left = m - i;
  [&]<int... K>(std::integer_sequence<int, K...>) {
    ((left == K + 1 ? chunk(std::integral_constant<int, K + 1>{}, i) : void()), ...);
  }(std::make_integer_sequence<int, MX - 1>{});
}

// The walk of the K-quant kernels (q4_k_avx512.h, q6_k_avx512.h): tiles of 2 weight rows x 8
// activation rows (2 x 7, 2 x 6, 3 x 5, 4 x 4, 5 x 3, 8 x 2 and 8 x 1 for the last chunk), about
// sixteen integer accumulators; at most 8 weight rows (16 spill in the GEMV). tile(nr, mx, w, x, c)
// with the tile's first weight row, activation row and output.
template <class Tile>
static inline void walk_k_quant_tiles_zmm(const void* w, int64_t w_stride, int64_t n, const void* x, int64_t x_stride,
                                          int64_t m, float* c, int64_t ldc, Tile tile) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  // The GEMV and a decode batch of up to 8 rows (one activation chunk: one pass over the weights)
  // stream the weights from DRAM (quant_tiles.h).
  const uint8_t* w_end = m <= 8 ? wb + n * w_stride : nullptr;
  walk_quant_tiles_zmm<8, 16, 1, 8>(n, m, [&](auto nr, auto mx, int, int64_t r, int64_t i) {
    tile(nr, mx, wb + r * w_stride, xb + i * x_stride, c + i * ldc + r, w_end);
  });
}

}  // namespace locr::kernels::cpu
