// AVX-512 kernels: kernels_impl.h over simd_avx512.h (16 floats per vector, 32 registers: GEMM tile
// 14 x 32 = 28 accumulators), plus the AVX512_BF16 kernels (vdpbf16ps: bf16 pairs multiplied and
// summed into f32 lanes) used by the "cpu-bf16" backend.
//
// Every function here may execute AVX-512 instructions: callers must have checked the CPU first
// (cpu_ops.cc), including the table getters themselves.
// GCC 12 warns about _mm512_undefined_* inside its own intrinsic headers (false positive).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#define LOCR_CPU_NS avx512
#define LOCR_CPU_MR 14
// f32 attention tile: 64 queries (4 vectors) per tile, QK^T 6 keys x 4 vectors = 24 accumulators,
// PV 6 queries x 4 vectors (docs/benchmarks.md: a little faster than 32 queries with 8 x 2).
#define LOCR_CPU_JR 6
#define LOCR_CPU_ATTN_QV 4
#define LOCR_CPU_PV_IR 6
#define LOCR_CPU_PV_ND 4
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/kernels_impl.h"
#include "kernels/cpu/q8_0_avx512.h"
#include "kernels/cpu/q4_k_avx512.h"
#include "kernels/cpu/q6_k_avx512.h"

#include <time.h>

#include <cstring>

namespace locr::kernels::cpu::avx512 {
namespace {

// ---- GEMM on bf16 pair panels: B [kc/2][kNR][2], A tile [kc/2][kMR] u32 pairs. ----

inline __m512bh as_bh(__m512i v) { return (__m512bh)v; }

template <int M>
void ukernel_dp(int64_t kc, const uint32_t* a, const uint16_t* b, float* c, int64_t ldc, int n, bool accumulate) {
  vf acc[M][kNV];
  LOCR_UNROLL for (int r = 0; r < M; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vzero();
  const int64_t kp_n = kc / 2;
  for (int64_t kp = 0; kp < kp_n; ++kp) {
    __m512bh bv[kNV];
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) bv[v] = as_bh(_mm512_loadu_si512(b + (kp * kNR + v * W) * 2));
    LOCR_UNROLL for (int r = 0; r < M; ++r) {
      const __m512bh av = as_bh(_mm512_set1_epi32(static_cast<int>(a[kp * kMR + r])));
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  store_c<M>(acc, c, ldc, n, accumulate);
}

template <int M = kMR>
inline void dispatch_dp(int m, int64_t kc, const uint32_t* a, const uint16_t* b, float* c, int64_t ldc, int n,
                        bool acc) {
  if constexpr (M >= 1) {
    if (m == M) return ukernel_dp<M>(kc, a, b, c, ldc, n, acc);
    dispatch_dp<M - 1>(m, kc, a, b, c, ldc, n, acc);
  }
}

void k_gemm_tile_bf16(BFormat fmt, int64_t kc, const void* a, const void* b, float* c, int64_t ldc, int m, int n,
                      bool accumulate) {
  if (fmt == BFormat::kPairsBf16) {
    dispatch_dp(m, kc, static_cast<const uint32_t*>(a), static_cast<const uint16_t*>(b), c, ldc, n, accumulate);
  } else {
    k_gemm_tile_f32(fmt, kc, a, b, c, ldc, m, n, accumulate);
  }
}

void k_gemm_panels_bf16(BFormat fmt, int64_t kc, const void* a, const void* b, int64_t b_stride, int np, float* c,
                        int64_t ldc, int m, int n_last, bool accumulate) {
  if (fmt != BFormat::kPairsBf16) return k_gemm_panels_f32(fmt, kc, a, b, b_stride, np, c, ldc, m, n_last, accumulate);
  const auto* bp = static_cast<const uint16_t*>(b);
  for (int p = 0; p < np; ++p)
    dispatch_dp(m, kc, static_cast<const uint32_t*>(a), bp + p * b_stride, c + p * kNR, ldc, p + 1 == np ? n_last : kNR,
                accumulate);
}

// Converts kc (even) values of one row starting at xr to bf16 pairs and writes pair kp to
// d[kp * kMR]. Values at or past `valid` are zero.
inline void pack_row_pairs(const float* xr, int64_t kc, int64_t valid, uint32_t* d) {
  int64_t k = 0;
  alignas(64) uint32_t tmp[16];
  for (; k + 32 <= valid; k += 32) {
    const __m512 lo = _mm512_loadu_ps(xr + k), hi = _mm512_loadu_ps(xr + k + 16);
    _mm512_store_si512(tmp, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    uint32_t* dp = d + (k / 2) * kMR;
    LOCR_UNROLL for (int i = 0; i < 16; ++i) dp[i * kMR] = tmp[i];
  }
  for (; k < kc; k += 2) {
    const uint32_t lo = k < valid ? to_bf16_scalar(xr[k]) : 0u;
    const uint32_t hi = k + 1 < valid ? to_bf16_scalar(xr[k + 1]) : 0u;
    d[(k / 2) * kMR] = lo | (hi << 16);
  }
}

void k_pack_a_pairs(const float* x, int64_t ldx, int64_t m, int64_t k0, int64_t kc, int64_t k_total, uint32_t* dst) {
  const int64_t valid = min64(kc, k_total - k0);
  for (int64_t t = 0; t * kMR < m; ++t) {
    const int64_t rows = min64(kMR, m - t * kMR);
    uint32_t* d = dst + t * (kc / 2) * kMR;
    for (int64_t r = 0; r < rows; ++r) pack_row_pairs(x + (t * kMR + r) * ldx + k0, kc, valid, d + r);
  }
}

// ---- Attention on vdpbf16ps (cpu-bf16 where the dot product beats 512-bit FMA) ----
// k_attn_tile's algorithm (S [kBKVdp][kBQdp] in f32, online softmax in the log2 domain) with both
// products on bf16 pairs: QK^T on the pre-scaled query and the keys rounded to bf16, PV on the
// probabilities and the values rounded to bf16 (the row sums l stay f32, from the unrounded p).
// Products of bf16 are exact in f32; only the roundings of q, k, p, v and the summation order
// differ from the f32 tile. The caller packs each kv head once (k_attn_pack_bf16): K rows
// [n_kv_pad][hd_pad] and V row pairs [n_kv_pad / 2][hd_pad][2], zero-padded.

// lo and hi rounded to bf16 and interleaved: lo0 hi0 lo1 hi1 ... lo15 hi15 (a pair per f32 lane).
inline __m512i interleave_bf16(vf lo, vf hi) {
  alignas(64) static const uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

inline uint32_t load_u32(const uint16_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  return x;
}

// Rows [j0, j1) (j0 even) of one kv head: k and v point at its row 0, rows `stride` floats apart,
// n_kv of them valid (the rest, and columns from head_dim to hd_pad, are zeros).
void k_attn_pack_bf16(const float* k, const float* v, int64_t stride, int64_t head_dim, int64_t hd_pad, int64_t j0,
                      int64_t j1, int64_t n_kv, uint16_t* kb, uint16_t* vb) {
  auto row = [&](const float* base, int64_t j, int64_t d) {
    if (j >= n_kv || d >= head_dim) return vzero();
    const int64_t n = min64(W, head_dim - d);
    return n == W ? vload(base + j * stride + d) : vload_n(base + j * stride + d, static_cast<int>(n));
  };
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t d = 0; d < hd_pad; d += W)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(kb + j * hd_pad + d), (__m256i)_mm512_cvtneps_pbh(row(k, j, d)));
  for (int64_t j = j0; j < j1; j += 2)
    for (int64_t d = 0; d < hd_pad; d += W)
      _mm512_storeu_si512(vb + ((j / 2) * hd_pad + d) * 2, interleave_bf16(row(v, j, d), row(v, j + 1, d)));
}

// Keys per block of the vdpbf16ps tile: twice the f32 tile's. Each block reloads and stores the O
// tile, and pays the softmax's per-block steps, once per PV pass: 128 measured 2-4% faster than 64
// on Zen 4 (docs/benchmarks.md), 192 and 256 no faster. attn_tile_scratch sizes S and P for 128.
constexpr int kBKVdp = 128;
static_assert(kBKVdp % 2 == 0 && kBKVdp <= 128, "attn_tile_scratch holds S and P of at most 128 keys");
constexpr int kJRdp = 12;  // keys per QK^T microkernel: 12 x 2 accumulators

template <int JR>
inline void qk_rows_dp(const uint16_t* kb, int64_t hd_pad, const uint32_t* qt, float* s) {
  vf acc[JR][kNV];
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vzero();
  for (int64_t p = 0; p < hd_pad / 2; ++p) {
    __m512bh qv[kNV];
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) qv[v] = as_bh(_mm512_loadu_si512(qt + p * kBQdp + v * W));
    LOCR_UNROLL for (int r = 0; r < JR; ++r) {
      const __m512bh kp = as_bh(_mm512_set1_epi32(static_cast<int>(load_u32(kb + r * hd_pad + 2 * p))));
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], kp, qv[v]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) vstore(s + r * kBQdp + v * W, acc[r][v]);
}

template <int JR = kJRdp>
inline void qk_dispatch_dp(int jr, const uint16_t* kb, int64_t hd_pad, const uint32_t* qt, float* s) {
  if constexpr (JR >= 1) {
    if (jr == JR) return qk_rows_dp<JR>(kb, hd_pad, qt, s);
    qk_dispatch_dp<JR - 1>(jr, kb, hd_pad, qt, s);
  }
}

constexpr int kPvIRdp = 6;  // query rows x 4 vectors of head_dim per PV microkernel

// O[ii .. ii+IR)[d0 .. d0 + ND*W) = O * alpha (the online softmax's rescale of each row, when alpha
// is given) + P · V over np key pairs.
template <int IR, int ND>
inline void pv_rows_dp(int64_t np, const uint16_t* vb, int64_t hd_pad, const uint32_t* pb, const float* alpha, int ii,
                       float* o, int64_t d0) {
  vf acc[IR][ND];
  LOCR_UNROLL for (int r = 0; r < IR; ++r) LOCR_UNROLL for (int c = 0; c < ND; ++c) {
    acc[r][c] = vload(o + (ii + r) * hd_pad + d0 + c * W);
    if (alpha) acc[r][c] = vmul(acc[r][c], vset1(alpha[ii + r]));
  }
  for (int64_t p = 0; p < np; ++p) {
    __m512bh vv[ND];
    LOCR_UNROLL for (int c = 0; c < ND; ++c) vv[c] = as_bh(_mm512_loadu_si512(vb + (p * hd_pad + d0 + c * W) * 2));
    LOCR_UNROLL for (int r = 0; r < IR; ++r) {
      const __m512bh pr = as_bh(_mm512_set1_epi32(static_cast<int>(pb[p * kBQdp + ii + r])));
      LOCR_UNROLL for (int c = 0; c < ND; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], pr, vv[c]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < IR; ++r) LOCR_UNROLL for (int c = 0; c < ND; ++c)
      vstore(o + (ii + r) * hd_pad + d0 + c * W, acc[r][c]);
}

template <int ND, int IR = kPvIRdp>
inline void pv_dispatch_dp(int ir, int64_t np, const uint16_t* vb, int64_t hd_pad, const uint32_t* pb,
                           const float* alpha, int ii, float* o, int64_t d0) {
  if constexpr (IR >= 1) {
    if (ir == IR) return pv_rows_dp<IR, ND>(np, vb, hd_pad, pb, alpha, ii, o, d0);
    pv_dispatch_dp<ND, IR - 1>(ir, np, vb, hd_pad, pb, alpha, ii, o, d0);
  }
}

// softmax_block (kernels_attention.h) for the vdpbf16ps tile: the same statistics and
// probabilities, summed in the same order, written straight to P as bf16 pairs [jn / 2][kBQdp]
// (an odd last key pairs with a zero probability) instead of back to S and packed in a second pass.
template <bool Masked>
inline void softmax_pairs(const float* s, int64_t jn, vf (&m)[kNV], vf (&l)[kNV], float* alpha_out, uint32_t* pb) {
  BlockMax bm[kNV];
  block_max<kNV>(s, jn, kBQdp, m, bm);
  auto prob = [&](int64_t j, int v) { return block_prob<Masked>(vload(s + j * kBQdp + v * W), bm[v].ms); };
  vf sum[kNV];
  LOCR_UNROLL for (int v = 0; v < kNV; ++v) sum[v] = vzero();
  int64_t j = 0;
  for (; j + 1 < jn; j += 2)
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
      const vf lo = prob(j, v), hi = prob(j + 1, v);
      sum[v] = vadd(vadd(sum[v], lo), hi);
      _mm512_storeu_si512(pb + (j / 2) * kBQdp + v * W, interleave_bf16(lo, hi));
    }
  if (j < jn)
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
      const vf lo = prob(j, v);
      sum[v] = vadd(sum[v], lo);
      _mm512_storeu_si512(pb + (j / 2) * kBQdp + v * W, interleave_bf16(lo, vzero()));
    }
  LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
    l[v] = vfma(l[v], bm[v].alpha, sum[v]);
    m[v] = bm[v].mx;
    vstore(alpha_out + v * W, bm[v].alpha);
  }
}

// qt [hp / 2][kBQdp]: query rows q (q_stride floats apart, nq of them) times qs, rounded to bf16
// pairs and transposed (pair p of row i at qt[p * kBQdp + i]); rows past nq and dims past hd are
// zeros. Blocks of 16 rows x 16 pairs go through registers (a scalar loop took 13% of a causal
// prefill tile, docs/benchmarks.md).
static_assert(kBQdp % 16 == 0, "load_q_pairs transposes blocks of 16 query rows");
void load_q_pairs(const float* q, int64_t q_stride, int nq, int64_t hd, int64_t hp, float qs, uint32_t* qt) {
  const vf scale = vset1(qs);
  for (int g = 0; g < kBQdp; g += 16)
    for (int64_t d0 = 0; d0 < hp; d0 += 2 * W) {
      const int64_t n = min64(2 * W, max64(0, hd - d0));  // dims of this block inside the head
      __m512i r[16];
      LOCR_UNROLL for (int i = 0; i < 16; ++i) {
        if (g + i >= nq || n == 0) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        const float* x = q + (g + i) * q_stride + d0;
        const vf lo = n >= W ? vload(x) : vload_n(x, static_cast<int>(n));
        const vf hi = n >= 2 * W ? vload(x + W) : n > W ? vload_n(x + W, static_cast<int>(n - W)) : vzero();
        r[i] = (__m512i)_mm512_cvtne2ps_pbh(vmul(hi, scale), vmul(lo, scale));
      }
      vtranspose_epi32(r);
      LOCR_UNROLL for (int p = 0; p < 16; ++p) _mm512_storeu_si512(qt + (d0 / 2 + p) * kBQdp + g, r[p]);
    }
}

void k_attn_tile_bf16(const AttnArgs& a, int64_t h, int64_t q0, float* scratch) {
  const int64_t hd = a.head_dim, hp = a.hd_pad, group = a.n_heads / a.n_kv_heads, kh = h / group;
  const int nq = static_cast<int>(min64(kBQdp, a.n_q - q0));
  auto* qt = reinterpret_cast<uint32_t*>(scratch);                // [hp / 2][kBQdp] pairs
  float* s = scratch + hp / 2 * kBQdp;                              // [kBKVdp][kBQdp]
  auto* pb = reinterpret_cast<uint32_t*>(s + kBKVdp * kBQdp);       // [kBKVdp / 2][kBQdp] pairs
  float* o = reinterpret_cast<float*>(pb + kBKVdp / 2 * kBQdp);     // [kBQdp][hp]
  float* alpha = o + kBQdp * hp;                                    // [kBQdp]
  float* lsum = alpha + kBQdp;                                      // [kBQdp]
  load_q_pairs(a.q + q0 * a.q_stride + h * hd, a.q_stride, nq, hd, hp, a.scale * kLog2e, qt);
  for (int64_t e = 0; e < kBQdp * hp; ++e) o[e] = 0.0f;
  vf m[kNV], l[kNV];
  LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
    m[v] = vset1(-INFINITY);
    l[v] = vzero();
  }
  const uint16_t* kbh = a.kb + kh * a.n_kv_pad * hp;
  const uint16_t* vbh = a.vb + kh * a.n_kv_pad * hp;
  const int64_t kv_end = a.causal ? min64(a.n_kv, a.q_offset + q0 + nq) : a.n_kv;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kBKVdp) {
    const int64_t jn = min64(kBKVdp, kv_end - j0);
    for (int64_t jj = 0; jj < jn; jj += kJRdp)
      qk_dispatch_dp(static_cast<int>(min64(kJRdp, jn - jj)), kbh + (j0 + jj) * hp, hp, qt, s + jj * kBQdp);
    // The causal mask where the block reaches past the tile's first query, then the online
    // softmax straight into P; O's rescale by alpha rides on the PV kernel's load of O (none
    // before the first block).
    if (a.causal && j0 + jn - 1 > a.q_offset + q0) {
      mask_causal<kNV>(s, jn, j0 - a.q_offset - q0);
      softmax_pairs<true>(s, jn, m, l, alpha, pb);
    } else {
      softmax_pairs<false>(s, jn, m, l, alpha, pb);
    }
    const int64_t np = (jn + 1) / 2;
    const float* al = j0 > 0 ? alpha : nullptr;
    const uint16_t* vbj = vbh + (j0 / 2) * hp * 2;
    int64_t d0 = 0;
    for (; d0 + 4 * W <= hp; d0 += 4 * W)
      for (int ii = 0; ii < nq; ii += kPvIRdp)
        pv_dispatch_dp<4>(static_cast<int>(min64(kPvIRdp, nq - ii)), np, vbj, hp, pb, al, ii, o, d0);
    if (d0 < hp)  // hp is a multiple of 2 vectors
      for (int ii = 0; ii < nq; ii += kPvIRdp)
        pv_dispatch_dp<2>(static_cast<int>(min64(kPvIRdp, nq - ii)), np, vbj, hp, pb, al, ii, o, d0);
  }
  store_tile_output(a, h, q0, nq, o, hp, l, lsum);
}

// ---- Calibration: is vdpbf16ps actually faster than FMA here? ----
// Some AVX512_BF16 parts issue one vdpbf16ps per ~2 cycles (half the FLOP rate of two 512-bit
// FMAs per cycle), others two per cycle. 16 independent chains, thread CPU time, best of 5.

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

__attribute__((noinline)) float chains_dot(int64_t iters) {
  vf acc[16];
  LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = vset1(static_cast<float>(j));
  const __m512bh x = as_bh(_mm512_set1_epi32(0x3f803f80)), y = as_bh(_mm512_set1_epi32(0x3a833a83));
  for (int64_t i = 0; i < iters; ++i) {
    LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], x, y);
  }
  vf s = acc[0];
  LOCR_UNROLL for (int j = 1; j < 16; ++j) s = vadd(s, acc[j]);
  return vhsum(s);
}

__attribute__((noinline)) float chains_fma(int64_t iters) {
  vf acc[16];
  LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = vset1(static_cast<float>(j));
  const vf x = vset1(1.0f), y = vset1(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
    LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = vfma(x, y, acc[j]);
  }
  vf s = acc[0];
  LOCR_UNROLL for (int j = 1; j < 16; ++j) s = vadd(s, acc[j]);
  return vhsum(s);
}

double k_dot_vs_fma_speed() {
  constexpr int64_t kIters = 4096;
  double best_dot = 1e30, best_fma = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = thread_seconds();
    sink = sink + chains_dot(kIters);
    double t1 = thread_seconds();
    sink = sink + chains_fma(kIters);
    double t2 = thread_seconds();
    best_dot = t1 - t0 < best_dot ? t1 - t0 : best_dot;
    best_fma = t2 - t1 < best_fma ? t2 - t1 : best_fma;
  }
  // vdpbf16ps does 64 FLOP per instruction, a 512-bit FMA 32.
  const double dot_rate = 64.0 / (best_dot > 0 ? best_dot : 1e-12);
  const double fma_rate = 32.0 / (best_fma > 0 ? best_fma : 1e-12);
  return dot_rate / fma_rate;
}

}  // namespace
}  // namespace locr::kernels::cpu::avx512

namespace locr::kernels::cpu {

const KernelTable* kernel_table_avx512() {
  static const KernelTable t = [] {
    KernelTable k = avx512::base_table("avx512");
    k.gemm_q8_0 = q8_0_gemm_zmm;
    k.gemm_q4_k = q4_k_gemm_zmm;
    k.gemm_q6_k = q6_k_gemm_zmm;
    add_attention_f16(k);  // the avx512-vnni and avx512-bf16 tables copy it
    return k;
  }();
  return &t;
}

const KernelTable* kernel_table_avx512_bf16() {
  static const KernelTable t = [] {
    KernelTable k = *kernel_table_avx512_vnni();  // its quantized kernels (every AVX512_BF16 CPU has VNNI)
    k.isa = "avx512-bf16";
    k.bf16_dot = true;
    k.pack_a_pairs = avx512::k_pack_a_pairs;
    k.gemm_tile = avx512::k_gemm_tile_bf16;
    k.gemm_panels = avx512::k_gemm_panels_bf16;
    k.dot_vs_fma_speed = avx512::k_dot_vs_fma_speed;
    k.attn_tile_bf16 = avx512::k_attn_tile_bf16;
    k.attn_bq_dot = avx512::kBQdp;
    k.attn_pack_bf16 = avx512::k_attn_pack_bf16;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
