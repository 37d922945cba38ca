// Leaf kernels written once against the vector primitives of simd_<isa>.h and compiled once per
// ISA (kernels_generic.cc, kernels_avx2.cc, kernels_avx512.cc), each inside its own namespace
// LOCR_CPU_NS with internal linkage. No std:: containers or std::function here (see
// kernel_table.h for why); threading and blocking live in cpu_ops.cc.
//
// Before including, a TU defines LOCR_CPU_NS and the tile constants LOCR_CPU_MR (GEMM rows per
// microkernel), LOCR_CPU_JR (keys per QK^T microkernel), LOCR_CPU_PV_IR / LOCR_CPU_PV_ND (query
// rows x vectors of head_dim per PV microkernel), and includes its simd_<isa>.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/kernel_table.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

#define LOCR_UNROLL _Pragma("GCC unroll 32")

constexpr int kNV = 2;          // vectors per GEMM microkernel row
constexpr int kNR = kNV * W;    // GEMM panel width (columns of W)
constexpr int kMR = LOCR_CPU_MR;
constexpr int kBQ = kNR;        // attention: query rows per tile (two vectors)
constexpr int kBKV = 64;        // attention: keys per block
constexpr int kJR = LOCR_CPU_JR;
constexpr int kPvIR = LOCR_CPU_PV_IR;
constexpr int kPvND = LOCR_CPU_PV_ND;
constexpr float kLog2e = 1.44269504088896341f;

inline float round_bf16_scalar(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t to_bf16_scalar(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// ------------------------------------------------------------------------------------------------
// Math: exp, exp2, erf, gelu. Polynomial coefficients were fitted for this project (Chebyshev
// interpolation with mpmath, see docs/numerics.md); max errors measured against std::erf/std::exp.

// e^x with Cody-Waite reduction x = n ln2 + r and a degree-7 Taylor polynomial of e^r on
// |r| <= ln2/2 (truncation error < 5e-9 relative): ~1 ulp. Returns 0 below -87.3; inputs are
// clamped at 88 (e^88 = 1.65e38), which is harmless for silu/softmax.
inline vf vexp(vf x) {
  const vmask under = vlt(x, vset1(-87.3f));
  x = vmin(vmax(x, vset1(-87.3f)), vset1(88.0f));
  const vf n = vround(vmul(x, vset1(kLog2e)));
  vf r = vfnma(n, vset1(0.693359375f), x);
  r = vfnma(n, vset1(-2.12194440e-4f), r);
  vf p = vset1(1.0f / 5040);
  p = vfma(p, r, vset1(1.0f / 720));
  p = vfma(p, r, vset1(1.0f / 120));
  p = vfma(p, r, vset1(1.0f / 24));
  p = vfma(p, r, vset1(1.0f / 6));
  p = vfma(p, r, vset1(0.5f));
  p = vfma(p, r, vset1(1.0f));
  p = vfma(p, r, vset1(1.0f));
  return vblend(under, vscale2(p, n), vzero());
}

// 2^x (softmax in the log2 domain). Exact split x = n + f, |f| <= 1/2; 2^f = e^(f ln2) by the
// same polynomial. Returns 0 below -126 (including -inf).
inline vf vexp2(vf x) {
  const vmask under = vlt(x, vset1(-126.0f));
  x = vmin(vmax(x, vset1(-126.0f)), vset1(127.0f));
  const vf n = vround(x);
  const vf r = vmul(vsub(x, n), vset1(0.693147180559945309f));
  vf p = vset1(1.0f / 5040);
  p = vfma(p, r, vset1(1.0f / 720));
  p = vfma(p, r, vset1(1.0f / 120));
  p = vfma(p, r, vset1(1.0f / 24));
  p = vfma(p, r, vset1(1.0f / 6));
  p = vfma(p, r, vset1(0.5f));
  p = vfma(p, r, vset1(1.0f));
  p = vfma(p, r, vset1(1.0f));
  return vblend(under, vscale2(p, n), vzero());
}

// erf on |x| < kErfT1: x * P(x^2), P of degree 7 (fit error 7e-12), evaluated as x + x (P - 1).
// erfc on [kErfT1, 6]: exp(G(x - kErfMid) - x^2), G of degree 13 (fit error 2.6e-9 absolute in
// log erfc, i.e. relative in erfc). Beyond 6, erfc < 2.2e-17 is returned as 0.
constexpr float kErfT1 = 0.875f;
constexpr float kErfMid = 3.4375f;
inline vf erf_small_poly(vf a) {  // erf(a) for 0 <= a < kErfT1
  const vf t = vmul(a, a);
  vf p = vset1(-1.068997517e-05f);
  p = vfma(p, t, vset1(1.155924547e-04f));
  p = vfma(p, t, vset1(-8.517123642e-04f));
  p = vfma(p, t, vset1(5.222876556e-03f));
  p = vfma(p, t, vset1(-2.686595730e-02f));
  p = vfma(p, t, vset1(1.128378958e-01f));
  p = vfma(p, t, vset1(-3.761263788e-01f));
  // Constant term minus 1 (exact in float): erf(a) = a + a (P - 1) with one final rounding keeps
  // the large part exact; ~0.9 ulp instead of ~2.4 for a * P.
  p = vfma(p, t, vset1(1.28379226e-01f));
  return vfma(a, p, a);
}
inline vf erfc_big_poly(vf a) {  // erfc(a) for kErfT1 <= a; 0 from 6 on
  const vf ac = vmin(a, vset1(6.0f));
  const vf u = vsub(ac, vset1(kErfMid));
  vf g = vset1(1.219727930e-10f);
  g = vfma(g, u, vset1(-4.928569219e-10f));
  g = vfma(g, u, vset1(-1.562526109e-09f));
  g = vfma(g, u, vset1(1.458847709e-08f));
  g = vfma(g, u, vset1(-8.300883536e-08f));
  g = vfma(g, u, vset1(6.111773700e-07f));
  g = vfma(g, u, vset1(-4.202929631e-06f));
  g = vfma(g, u, vset1(2.620487430e-05f));
  g = vfma(g, u, vset1(-1.567599975e-04f));
  g = vfma(g, u, vset1(9.211237193e-04f));
  g = vfma(g, u, vset1(-5.449959077e-03f));
  g = vfma(g, u, vset1(3.424762189e-02f));
  g = vfma(g, u, vset1(-2.703175545e-01f));
  g = vfma(g, u, vset1(-1.845674992e+00f));
  const vf e = vexp(vfnma(ac, ac, g));
  return vblend(vge(a, vset1(6.0f)), e, vzero());
}
inline vf verf(vf x) {
  const vf a = vabs(x);
  const vf small = erf_small_poly(a);
  const vf big = vsub(vset1(1.0f), erfc_big_poly(a));
  return vcopysign(vblend(vlt(a, vset1(kErfT1)), big, small), x);
}
// gelu(x) = x/2 (1 + erf(x/sqrt2)); for x < 0 the bracket is erfc(|x|/sqrt2), computed without
// cancellation so tiny negative outputs keep their relative accuracy.
inline vf vgelu(vf x) {
  const vf t = vmul(x, vset1(0.707106781186547524f));
  const vf a = vabs(t);
  const vf small = vadd(vset1(1.0f), vcopysign(erf_small_poly(a), x));
  const vf c = erfc_big_poly(a);
  const vf big = vblend(vlt(x, vzero()), vsub(vset1(2.0f), c), c);
  const vf bracket = vblend(vlt(a, vset1(kErfT1)), big, small);
  return vmul(vmul(vset1(0.5f), x), bracket);
}

// ------------------------------------------------------------------------------------------------
// Element-wise kernels.

void k_silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vf g = vload(gate + i);
    const vf s = vdiv(g, vadd(vset1(1.0f), vexp(vsub(vzero(), g))));
    vstore(out + i, vmul(s, vload(up + i)));
  }
  if (i < n) {
    const int r = static_cast<int>(n - i);
    const vf g = vload_n(gate + i, r);
    const vf s = vdiv(g, vadd(vset1(1.0f), vexp(vsub(vzero(), g))));
    vstore_n(out + i, vmul(s, vload_n(up + i, r)), r);
  }
}

void k_gelu(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(x + i, vgelu(vload(x + i)));
  if (i < n) vstore_n(x + i, vgelu(vload_n(x + i, static_cast<int>(n - i))), static_cast<int>(n - i));
}

void k_add(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vadd(vload(y + i), vload(x + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    vstore_n(y + i, vadd(vload_n(y + i, r), vload_n(x + i, r)), r);
  }
}

void k_exp(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vexp(vload(x + i)));
  if (i < n) vstore_n(y + i, vexp(vload_n(x + i, static_cast<int>(n - i))), static_cast<int>(n - i));
}

void k_erf(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, verf(vload(x + i)));
  if (i < n) vstore_n(y + i, verf(vload_n(x + i, static_cast<int>(n - i))), static_cast<int>(n - i));
}

void k_bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vload_bf16(x + i));
  if (i < n) vstore_n(y + i, vload_bf16_n(x + i, static_cast<int>(n - i)), static_cast<int>(n - i));
}

// FP8 E4M3 codes to f32 (exact; NaN codes to NaN), without any scale.
void k_fp8_to_f32(const uint8_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vload_fp8(x + i));
  if (i < n) vstore_n(y + i, vload_fp8_n(x + i, static_cast<int>(n - i)), static_cast<int>(n - i));
}

void k_f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vload_f16(x + i));
  if (i < n) vstore_n(y + i, vload_f16_n(x + i, static_cast<int>(n - i)), static_cast<int>(n - i));
}

void k_f32_to_bf16_round(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_bf16_scalar(x[i]);
}

void k_rms_norm_rows(const float* x, const float* w, float eps, int64_t rows, int64_t dim, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    vf s0 = vzero(), s1 = vzero();
    int64_t i = 0;
    for (; i + 2 * W <= dim; i += 2 * W) {
      const vf a = vload(xr + i), b = vload(xr + i + W);
      s0 = vfma(a, a, s0);
      s1 = vfma(b, b, s1);
    }
    for (; i < dim; i += W) {
      const vf a = vload_n(xr + i, static_cast<int>(min64(W, dim - i)));
      s0 = vfma(a, a, s0);
    }
    const double ss = static_cast<double>(vhsum(vadd(s0, s1)));
    const vf inv = vset1(static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps)));
    i = 0;
    for (; i + W <= dim; i += W) vstore(yr + i, vmul(vmul(vload(xr + i), inv), vload(w + i)));
    if (i < dim) {
      const int n = static_cast<int>(dim - i);
      vstore_n(yr + i, vmul(vmul(vload_n(xr + i, n), inv), vload_n(w + i, n)), n);
    }
  }
}

void k_rope_rows(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
                 const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* c = cos + r * half;
    const float* s = sin + r * half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* a = x + r * stride + h * head_dim;
      float* b = a + half;
      for (int64_t d = 0; d < half; d += W) {
        const int n = static_cast<int>(min64(W, half - d));
        const vf cv = vload_n(c + d, n), sv = vload_n(s + d, n);
        const vf av = vload_n(a + d, n), bv = vload_n(b + d, n);
        vstore_n(a + d, vfnma(bv, sv, vmul(av, cv)), n);
        vstore_n(b + d, vfma(av, sv, vmul(bv, cv)), n);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// GEMM: f32 FMA microkernel over a K-major B panel (f32, or bf16 upconverted exactly).

template <typename BT>
inline vf load_b(const BT* p);
template <>
inline vf load_b<float>(const float* p) { return vload(p); }
template <>
inline vf load_b<uint16_t>(const uint16_t* p) { return vload_bf16(p); }

template <int M>
inline void store_c(vf (&acc)[M][kNV], float* c, int64_t ldc, int n, bool accumulate) {
  LOCR_UNROLL for (int r = 0; r < M; ++r) {
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
      const int cnt = n - v * W;
      float* cp = c + r * ldc + v * W;
      if (cnt >= W) {
        vstore(cp, accumulate ? vadd(acc[r][v], vload(cp)) : acc[r][v]);
      } else if (cnt > 0) {
        vstore_n(cp, accumulate ? vadd(acc[r][v], vload_n(cp, cnt)) : acc[r][v], cnt);
      }
    }
  }
}

template <int M, typename BT>
void ukernel_f32(int64_t kc, const float* a, const BT* b, float* c, int64_t ldc, int n, bool accumulate) {
  vf acc[M][kNV];
  LOCR_UNROLL for (int r = 0; r < M; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vzero();
  for (int64_t k = 0; k < kc; ++k) {
    vf bv[kNV];
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) bv[v] = load_b<BT>(b + k * kNR + v * W);
    LOCR_UNROLL for (int r = 0; r < M; ++r) {
      const vf av = vset1(a[k * kMR + r]);
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vfma(av, bv[v], acc[r][v]);
    }
  }
  store_c<M>(acc, c, ldc, n, accumulate);
}

// Decode (up to four rows): bandwidth-bound, so the FMA latency chain must not pace the loads.
// Independent chains come from several weight panels side by side (P panels x M rows x kNV
// vectors of accumulators), never from splitting K: every output element is one FMA chain over
// k = 0 .. kc-1 in order, exactly as in ukernel_f32. So a row's result does not depend on how many
// rows share its tile or its step (batch invariance), on every ISA. The panel streams are
// prefetched a few cache lines ahead of use.
constexpr int kVecRegs = W == 16 ? 32 : 16;

template <int M>
constexpr int gemv_panels_fit() {
  constexpr int fit = (kVecRegs - 4) / (M * kNV);
  return fit < 1 ? 1 : (fit > 4 ? 4 : fit);
}

template <int M, int P, typename BT>
void ukernel_gemv(int64_t kc, const float* a, const BT* b, int64_t b_stride, float* c, int64_t ldc, int n_last,
                  bool accumulate) {
  constexpr int64_t kAhead = 8192 / sizeof(BT);  // elements; 8 KB measured best (2-16 KB tried)
  constexpr int kU = 4;                           // k steps per prefetch round (order unchanged)
  constexpr int kLines = static_cast<int>(kU * kNR * sizeof(BT) / 64);
  vf acc[P][M][kNV];
  LOCR_UNROLL for (int p = 0; p < P; ++p) LOCR_UNROLL for (int r = 0; r < M; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v)
      acc[p][r][v] = vzero();
  int64_t k = 0;
  for (; k + kU <= kc; k += kU) {
    LOCR_UNROLL for (int p = 0; p < P; ++p) LOCR_UNROLL for (int l = 0; l < (kLines > 0 ? kLines : 1); ++l)
        __builtin_prefetch(reinterpret_cast<const char*>(b + p * b_stride + k * kNR + kAhead) + 64 * l, 0, 3);
    LOCR_UNROLL for (int u = 0; u < kU; ++u) {
      LOCR_UNROLL for (int p = 0; p < P; ++p) {
        vf bv[kNV];
        LOCR_UNROLL for (int v = 0; v < kNV; ++v) bv[v] = load_b<BT>(b + p * b_stride + (k + u) * kNR + v * W);
        LOCR_UNROLL for (int r = 0; r < M; ++r) {
          const vf av = vset1(a[(k + u) * kMR + r]);
          LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[p][r][v] = vfma(av, bv[v], acc[p][r][v]);
        }
      }
    }
  }
  for (; k < kc; ++k) {
    LOCR_UNROLL for (int p = 0; p < P; ++p) {
      vf bv[kNV];
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) bv[v] = load_b<BT>(b + p * b_stride + k * kNR + v * W);
      LOCR_UNROLL for (int r = 0; r < M; ++r) {
        const vf av = vset1(a[k * kMR + r]);
        LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[p][r][v] = vfma(av, bv[v], acc[p][r][v]);
      }
    }
  }
  LOCR_UNROLL for (int p = 0; p < P; ++p) store_c<M>(acc[p], c + p * kNR, ldc, p == P - 1 ? n_last : kNR, accumulate);
}

// np panels (b_stride elements apart) with M rows, P at a time; n_last: columns of the last one.
template <int M, typename BT>
void gemv_run(int64_t kc, const float* a, const BT* b, int64_t b_stride, int np, float* c, int64_t ldc, int n_last,
              bool accumulate) {
  constexpr int P = gemv_panels_fit<M>();
  int p = 0;
  for (; p + P <= np; p += P)
    ukernel_gemv<M, P, BT>(kc, a, b + p * b_stride, b_stride, c + p * kNR, ldc, p + P == np ? n_last : kNR, accumulate);
  for (; p < np; ++p)
    ukernel_gemv<M, 1, BT>(kc, a, b + p * b_stride, b_stride, c + p * kNR, ldc, p + 1 == np ? n_last : kNR, accumulate);
}

// m rows against np consecutive panels: the decode path's entry (gemm_panels in the table) and,
// with one panel, gemm_tile's.
template <typename BT, int M = kMR>
inline void dispatch_panels(int m, int64_t kc, const float* a, const BT* b, int64_t b_stride, int np, float* c,
                            int64_t ldc, int n_last, bool acc) {
  if constexpr (M >= 1) {
    if (m == M) {
      if constexpr (M <= 4) {
        return gemv_run<M, BT>(kc, a, b, b_stride, np, c, ldc, n_last, acc);
      } else {
        for (int p = 0; p < np; ++p)
          ukernel_f32<M, BT>(kc, a, b + p * b_stride, c + p * kNR, ldc, p + 1 == np ? n_last : kNR, acc);
        return;
      }
    }
    dispatch_panels<BT, M - 1>(m, kc, a, b, b_stride, np, c, ldc, n_last, acc);
  }
}

void k_gemm_panels_f32(BFormat fmt, int64_t kc, const void* a, const void* b, int64_t b_stride, int np, float* c,
                       int64_t ldc, int m, int n_last, bool accumulate) {
  if (fmt == BFormat::kKMajorF32) {
    dispatch_panels<float>(m, kc, static_cast<const float*>(a), static_cast<const float*>(b), b_stride, np, c, ldc,
                           n_last, accumulate);
  } else if (fmt == BFormat::kKMajorBf16) {
    dispatch_panels<uint16_t>(m, kc, static_cast<const float*>(a), static_cast<const uint16_t*>(b), b_stride, np, c,
                              ldc, n_last, accumulate);
  } else {
    __builtin_trap();  // pair panels need the bf16-dot table
  }
}

void k_gemm_tile_f32(BFormat fmt, int64_t kc, const void* a, const void* b, float* c, int64_t ldc, int m, int n,
                     bool accumulate) {
  k_gemm_panels_f32(fmt, kc, a, b, 0, 1, c, ldc, m, n, accumulate);
}


void k_pack_a_f32(const float* x, int64_t ldx, int64_t m, int64_t k0, int64_t kc, int64_t k_total, float* dst,
                  bool round_bf16) {
  (void)k_total;
  for (int64_t t = 0; t * kMR < m; ++t) {
    const int64_t rows = min64(kMR, m - t * kMR);
    float* d = dst + t * kc * kMR;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + (t * kMR + r) * ldx + k0;
      if (round_bf16) {
        for (int64_t k = 0; k < kc; ++k) d[k * kMR + r] = round_bf16_scalar(xr[k]);
      } else {
        for (int64_t k = 0; k < kc; ++k) d[k * kMR + r] = xr[k];
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Attention, f32. Layout per tile: QT [hd][kBQ] (pre-scaled by scale*log2e), S [kBKV][kBQ]
// (scores transposed: one row per key, one column per query, so softmax statistics are plain
// vector max/add down the rows), O [kBQ][hd] accumulated with the online-softmax rescale.

template <int JR>
inline void qk_rows(const float* kb, int64_t kv_stride, int64_t hd, const float* qt, float* s) {
  vf acc[JR][kNV];
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vzero();
  for (int64_t d = 0; d < hd; ++d) {
    vf qv[kNV];
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) qv[v] = vload(qt + d * kBQ + v * W);
    LOCR_UNROLL for (int r = 0; r < JR; ++r) {
      const vf kv = vset1(kb[r * kv_stride + d]);
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vfma(kv, qv[v], acc[r][v]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) vstore(s + r * kBQ + v * W, acc[r][v]);
}

template <int JR = kJR>
inline void qk_dispatch(int jr, const float* kb, int64_t kv_stride, int64_t hd, const float* qt, float* s) {
  if constexpr (JR >= 1) {
    if (jr == JR) return qk_rows<JR>(kb, kv_stride, hd, qt, s);
    qk_dispatch<JR - 1>(jr, kb, kv_stride, hd, qt, s);
  }
}

// O[ii .. ii+IR)[d0 .. d0+dn) += P[ii.., 0..jn) · V[0..jn)[d0..]; P read transposed from S.
template <int IR>
inline void pv_rows(int64_t jn, const float* vb, int64_t kv_stride, const float* s, int ii, float* o, int64_t hd,
                    int64_t d0, int dn) {
  vf acc[IR][kPvND];
  int cnt[kPvND];
  LOCR_UNROLL for (int c = 0; c < kPvND; ++c) {
    const int left = dn - c * W;
    cnt[c] = left >= W ? W : (left > 0 ? left : 0);
  }
  LOCR_UNROLL for (int r = 0; r < IR; ++r) LOCR_UNROLL for (int c = 0; c < kPvND; ++c) {
    float* op = o + (ii + r) * hd + d0 + c * W;
    acc[r][c] = cnt[c] == W ? vload(op) : vload_n(op, cnt[c]);
  }
  for (int64_t j = 0; j < jn; ++j) {
    vf vv[kPvND];
    const float* vr = vb + j * kv_stride + d0;
    LOCR_UNROLL for (int c = 0; c < kPvND; ++c) vv[c] = cnt[c] == W ? vload(vr + c * W) : vload_n(vr + c * W, cnt[c]);
    LOCR_UNROLL for (int r = 0; r < IR; ++r) {
      const vf p = vset1(s[j * kBQ + ii + r]);
      LOCR_UNROLL for (int c = 0; c < kPvND; ++c) acc[r][c] = vfma(p, vv[c], acc[r][c]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < IR; ++r) LOCR_UNROLL for (int c = 0; c < kPvND; ++c) {
    float* op = o + (ii + r) * hd + d0 + c * W;
    if (cnt[c] == W) {
      vstore(op, acc[r][c]);
    } else if (cnt[c] > 0) {
      vstore_n(op, acc[r][c], cnt[c]);
    }
  }
}

template <int IR = kPvIR>
inline void pv_dispatch(int ir, int64_t jn, const float* vb, int64_t kv_stride, const float* s, int ii, float* o,
                        int64_t hd, int64_t d0, int dn) {
  if constexpr (IR >= 1) {
    if (ir == IR) return pv_rows<IR>(jn, vb, kv_stride, s, ii, o, hd, d0, dn);
    pv_dispatch<IR - 1>(ir, jn, vb, kv_stride, s, ii, o, hd, d0, dn);
  }
}

// Online softmax over one key block for all kBQ query columns of S (in the log2 domain).
// m, l: running max and sum per query column; alpha_out: the rescale factor of O rows.
inline void softmax_block(float* s, int64_t jn, vf (&m)[kNV], vf (&l)[kNV], float* alpha_out) {
  const vf ninf = vset1(-INFINITY);
  LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
    vf mx = m[v];
    for (int64_t j = 0; j < jn; ++j) mx = vmax(mx, vload(s + j * kBQ + v * W));
    const vf ms = vblend(veq(mx, ninf), mx, vzero());  // all masked so far: avoid inf - inf
    const vf alpha = vexp2(vsub(m[v], ms));
    vf sum = vzero();
    for (int64_t j = 0; j < jn; ++j) {
      const vf p = vexp2(vsub(vload(s + j * kBQ + v * W), ms));
      vstore(s + j * kBQ + v * W, p);
      sum = vadd(sum, p);
    }
    l[v] = vfma(l[v], alpha, sum);
    m[v] = mx;
    vstore(alpha_out + v * W, alpha);
  }
}

inline void mask_causal(float* s, int64_t jn, int64_t first_thr) {
  // Key row j is visible to query column i iff i >= first_thr + j.
  const vf ninf = vset1(-INFINITY);
  for (int64_t j = 0; j < jn; ++j) {
    const int64_t thr = first_thr + j;
    if (thr <= 0) continue;
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
      const vf idx = vadd(viota(), vset1(static_cast<float>(v * W)));
      float* sp = s + j * kBQ + v * W;
      vstore(sp, vblend(vlt(idx, vset1(static_cast<float>(thr))), vload(sp), ninf));
    }
  }
}

void k_attn_tile(const AttnArgs& a, int64_t h, int64_t q0, float* scratch) {
  const int64_t hd = a.head_dim, group = a.n_heads / a.n_kv_heads, kh = h / group;
  const int nq = static_cast<int>(min64(kBQ, a.n_q - q0));
  float* qt = scratch;          // [hd][kBQ]
  float* s = qt + hd * kBQ;     // [kBKV][kBQ]
  float* o = s + kBKV * kBQ;    // [kBQ][hd]
  float* alpha = o + kBQ * hd;  // [kBQ]
  float* lsum = alpha + kBQ;    // [kBQ]
  const float qs = a.scale * kLog2e;
  for (int i = 0; i < kBQ; ++i) {
    const float* qi = a.q + (q0 + i) * a.q_stride + h * hd;
    for (int64_t d = 0; d < hd; ++d) qt[d * kBQ + i] = i < nq ? qi[d] * qs : 0.0f;
  }
  for (int64_t e = 0; e < kBQ * hd; ++e) o[e] = 0.0f;
  vf m[kNV], l[kNV];
  LOCR_UNROLL for (int v = 0; v < kNV; ++v) {
    m[v] = vset1(-INFINITY);
    l[v] = vzero();
  }
  const int64_t kv_end = a.causal ? min64(a.n_kv, a.q_offset + q0 + nq) : a.n_kv;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kBKV) {
    const int64_t jn = min64(kBKV, kv_end - j0);
    const float* kb = a.k + j0 * a.kv_stride + kh * a.kv_head_stride;
    for (int64_t jj = 0; jj < jn; jj += kJR)
      qk_dispatch(static_cast<int>(min64(kJR, jn - jj)), kb + jj * a.kv_stride, a.kv_stride, hd, qt, s + jj * kBQ);
    if (a.causal) mask_causal(s, jn, j0 - a.q_offset - q0);
    softmax_block(s, jn, m, l, alpha);
    if (j0 > 0) {
      for (int i = 0; i < nq; ++i) {
        const vf al = vset1(alpha[i]);
        float* oi = o + i * hd;
        int64_t d = 0;
        for (; d + W <= hd; d += W) vstore(oi + d, vmul(vload(oi + d), al));
        if (d < hd) vstore_n(oi + d, vmul(vload_n(oi + d, static_cast<int>(hd - d)), al), static_cast<int>(hd - d));
      }
    }
    const float* vb = a.v + j0 * a.kv_stride + kh * a.kv_head_stride;
    for (int64_t d0 = 0; d0 < hd; d0 += kPvND * W) {
      const int dn = static_cast<int>(min64(kPvND * W, hd - d0));
      for (int ii = 0; ii < nq; ii += kPvIR)
        pv_dispatch(static_cast<int>(min64(kPvIR, nq - ii)), jn, vb, a.kv_stride, s, ii, o, hd, d0, dn);
    }
  }
  LOCR_UNROLL for (int v = 0; v < kNV; ++v) vstore(lsum + v * W, l[v]);
  for (int i = 0; i < nq; ++i) {
    const vf inv = vset1(lsum[i] > 0 ? 1.0f / lsum[i] : 0.0f);
    const float* oi = o + i * hd;
    float* out = a.out + (q0 + i) * a.out_stride + h * hd;
    int64_t d = 0;
    for (; d + W <= hd; d += W) vstore(out + d, vmul(vload(oi + d), inv));
    if (d < hd) vstore_n(out + d, vmul(vload_n(oi + d, static_cast<int>(hd - d)), inv), static_cast<int>(hd - d));
  }
}

// Keys/values are F32, BF16 (a BF16 KV cache) or FP8 E4M3 (an FP8 one, scaled per row and kv
// head); these load any of them as f32 vectors (FP8 as its value times 2^-8, without its scale:
// key_factor / value_factor put the 2^8 back, exactly).
inline vf vload_kv(const float* p) { return vload(p); }
inline vf vload_kv(const uint16_t* p) { return vload_bf16(p); }
inline vf vload_kv(const uint8_t* p) { return vload_fp8_lo(p); }
inline vf vload_kv_n(const float* p, int n) { return vload_n(p, n); }
inline vf vload_kv_n(const uint16_t* p, int n) { return vload_bf16_n(p, n); }
inline vf vload_kv_n(const uint8_t* p, int n) { return vload_fp8_lo_n(p, n); }

// Pool row of logical key j (through the block table when the cache is paged).
inline int64_t kv_row(const AttnArgs& a, int64_t j) {
  return a.block_table ? static_cast<int64_t>(a.block_table[j / a.block_size]) * a.block_size + j % a.block_size : j;
}

// The score scale of key head kh of pool row `row`: scale alone, or times the FP8 key scale and
// 2^8 (the dot product runs on the unscaled E4M3 values times 2^-8). Likewise the weight of a
// value row.
template <class T>
inline float key_factor(const AttnArgs& a, int64_t row, int64_t kh) {
  if constexpr (std::is_same_v<T, uint8_t>) return a.k_scale[row * a.n_kv_heads + kh] * 256.0f * a.scale;
  else return a.scale;
}
template <class T>
inline float value_factor(const AttnArgs& a, int64_t row, int64_t kh, float p) {
  if constexpr (std::is_same_v<T, uint8_t>) return p * (a.v_scale[row * a.n_kv_heads + kh] * 256.0f);
  else return p;
}

template <class T>
float dot_hd(const float* x, const T* y, int64_t hd) {
  vf acc0 = vzero(), acc1 = vzero();
  int64_t d = 0;
  for (; d + 2 * W <= hd; d += 2 * W) {
    acc0 = vfma(vload(x + d), vload_kv(y + d), acc0);
    acc1 = vfma(vload(x + d + W), vload_kv(y + d + W), acc1);
  }
  for (; d < hd; d += W) {
    const int n = static_cast<int>(min64(W, hd - d));
    acc0 = vfma(vload_n(x + d, n), vload_kv_n(y + d, n), acc0);
  }
  return vhsum(vadd(acc0, acc1));
}

// Any head_dim: s[h][j - j0] = q_h . k_j * scale, then o_h += p_hj v_j.
template <class T>
void chunk_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const T* k = reinterpret_cast<const T*>(a.k);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* kr = k + row * a.kv_stride;
    for (int64_t h = 0; h < a.n_heads; ++h)
      s[h * jn + (j - j0)] = dot_hd(qi + h * hd, kr + (h / group) * a.kv_head_stride, hd) * key_factor<T>(a, row, h / group);
  }
}

template <class T>
void chunk_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const T* v = reinterpret_cast<const T*>(a.v);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* vr = v + row * a.kv_stride;
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const vf p = vset1(value_factor<T>(a, row, h / group, s[h * jn + (j - j0)]));
      const T* vh = vr + (h / group) * a.kv_head_stride;
      float* oh = o + h * hd;
      int64_t d = 0;
      for (; d + W <= hd; d += W) vstore(oh + d, vfma(p, vload_kv(vh + d), vload(oh + d)));
      if (d < hd) {
        const int n = static_cast<int>(hd - d);
        vstore_n(oh + d, vfma(p, vload_kv_n(vh + d, n), vload_n(oh + d, n)), n);
      }
    }
  }
}

// BF16 or FP8 keys/values with head_dim = NV vectors: each key (value) head is widened once into
// registers and used by every query head of its GQA group.
template <class T, int NV>
void narrow_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = NV * W, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* kn = reinterpret_cast<const T*>(a.k);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* krow = kn + row * a.kv_stride;
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      const T* kr = krow + kh * a.kv_head_stride;
      vf kv[NV];
      LOCR_UNROLL for (int v = 0; v < NV; ++v) kv[v] = vload_kv(kr + v * W);
      const float f = key_factor<T>(a, row, kh);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const float* qh = qi + h * hd;
        vf acc0 = vmul(vload(qh), kv[0]);
        vf acc1 = vmul(vload(qh + W), kv[1]);
        LOCR_UNROLL for (int v = 2; v < NV; v += 2) {
          acc0 = vfma(vload(qh + v * W), kv[v], acc0);
          acc1 = vfma(vload(qh + (v + 1) * W), kv[v + 1], acc1);
        }
        s[h * jn + (j - j0)] = vhsum(vadd(acc0, acc1)) * f;
      }
    }
  }
}

template <class T, int NV>
void narrow_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = NV * W, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* vn = reinterpret_cast<const T*>(a.v);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    const T* vrow = vn + row * a.kv_stride;
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      const T* vr = vrow + kh * a.kv_head_stride;
      vf vv[NV];
      LOCR_UNROLL for (int v = 0; v < NV; ++v) vv[v] = vload_kv(vr + v * W);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const vf p = vset1(value_factor<T>(a, row, kh, s[h * jn + (j - j0)]));
        float* oh = o + h * hd;
        LOCR_UNROLL for (int v = 0; v < NV; ++v) vstore(oh + v * W, vfma(p, vv[v], vload(oh + v * W)));
      }
    }
  }
}

// FP8 keys/values of other head dims (up to kFp8WidenMax): each key (value) head is widened once
// into an f32 buffer on the stack and used by every query head of its GQA group, so the
// conversion is paid once per kv head, not once per query head.
constexpr int64_t kFp8WidenMax = 512;

inline void widen_fp8(const uint8_t* x, float* y, int64_t hd) {
  int64_t d = 0;
  for (; d + W <= hd; d += W) vstore(y + d, vload_fp8_lo(x + d));
  if (d < hd) vstore_n(y + d, vload_fp8_lo_n(x + d, static_cast<int>(hd - d)), static_cast<int>(hd - d));
}

void fp8_scores_widened(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* k8 = reinterpret_cast<const uint8_t*>(a.k);
  alignas(64) float kb[kFp8WidenMax];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      widen_fp8(k8 + row * a.kv_stride + kh * a.kv_head_stride, kb, hd);
      const float f = key_factor<uint8_t>(a, row, kh);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        s[h * jn + (j - j0)] = dot_hd(qi + h * hd, static_cast<const float*>(kb), hd) * f;
      }
    }
  }
}

void fp8_values_widened(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t hd = a.head_dim, jn = j1 - j0, group = a.n_heads / a.n_kv_heads;
  const auto* v8 = reinterpret_cast<const uint8_t*>(a.v);
  alignas(64) float vb[kFp8WidenMax];
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t row = kv_row(a, j);
    for (int64_t kh = 0; kh < a.n_kv_heads; ++kh) {
      widen_fp8(v8 + row * a.kv_stride + kh * a.kv_head_stride, vb, hd);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const vf p = vset1(value_factor<uint8_t>(a, row, kh, s[h * jn + (j - j0)]));
        float* oh = o + h * hd;
        int64_t d = 0;
        for (; d + W <= hd; d += W) vstore(oh + d, vfma(p, vload(vb + d), vload(oh + d)));
        if (d < hd) {
          const int n = static_cast<int>(hd - d);
          vstore_n(oh + d, vfma(p, vload_n(vb + d, n), vload_n(oh + d, n)), n);
        }
      }
    }
  }
}

// Scores (values) of keys [j0, j1) for one element type: the register paths for head_dim of 4 or
// 8 vectors (64 / 128 with AVX-512, 32 / 64 with AVX2) of a BF16 or FP8 cache, FP8 of other head
// dims widened once per kv head, else the generic loops.
template <class T>
void kv_scores(const AttnArgs& a, const float* qi, int64_t j0, int64_t j1, float* s) {
  const int64_t nv = a.head_dim % W == 0 ? a.head_dim / W : 0;
  if constexpr (!std::is_same_v<T, float>) {
    if (nv == 8) return narrow_scores<T, 8>(a, qi, j0, j1, s);
    if (nv == 4) return narrow_scores<T, 4>(a, qi, j0, j1, s);
  }
  if constexpr (std::is_same_v<T, uint8_t>)
    if (a.head_dim <= kFp8WidenMax) return fp8_scores_widened(a, qi, j0, j1, s);
  chunk_scores<T>(a, qi, j0, j1, s);
}
template <class T>
void kv_values(const AttnArgs& a, int64_t j0, int64_t j1, const float* s, float* o) {
  const int64_t nv = a.head_dim % W == 0 ? a.head_dim / W : 0;
  if constexpr (!std::is_same_v<T, float>) {
    if (nv == 8) return narrow_values<T, 8>(a, j0, j1, s, o);
    if (nv == 4) return narrow_values<T, 4>(a, j0, j1, s, o);
  }
  if constexpr (std::is_same_v<T, uint8_t>)
    if (a.head_dim <= kFp8WidenMax) return fp8_values_widened(a, j0, j1, s, o);
  chunk_values<T>(a, j0, j1, s, o);
}

// Few queries (decode), flash-decoding style: one query row i against keys [j0, j1) for every
// head at once, so each K and V row (all kv heads, contiguous) is streamed from memory exactly
// once. Writes per-head partial results: o [n_heads][head_dim] (unnormalised), ml [n_heads][2]
// (max score, sum of exp). Scratch: n_heads * (j1 - j0) floats. f32 arithmetic in every mode (K/V
// widened from BF16 or FP8 when the cache is): this path is bound by reading K and V, not by arithmetic.
void k_attn_chunk(const AttnArgs& a, int64_t i, int64_t j0, int64_t j1, float* o, float* ml, float* s) {
  const int64_t hd = a.head_dim, nh = a.n_heads;
  const int64_t n_vis = a.causal ? min64(a.n_kv, a.q_offset + i + 1) : a.n_kv;
  j1 = min64(j1, n_vis);
  const int64_t jn = j1 - j0;
  for (int64_t e = 0; e < nh * hd; ++e) o[e] = 0.0f;
  if (jn <= 0) {
    for (int64_t h = 0; h < nh; ++h) {
      ml[2 * h] = -INFINITY;
      ml[2 * h + 1] = 0.0f;
    }
    return;
  }
  const float* qi = a.q + i * a.q_stride;
  if (a.kv_fp8) kv_scores<uint8_t>(a, qi, j0, j1, s);
  else if (a.kv_bf16) kv_scores<uint16_t>(a, qi, j0, j1, s);
  else kv_scores<float>(a, qi, j0, j1, s);
  for (int64_t h = 0; h < nh; ++h) {
    float* sh = s + h * jn;
    float mx = -INFINITY;
    for (int64_t j = 0; j < jn; ++j) mx = sh[j] > mx ? sh[j] : mx;
    const vf mv = vset1(mx);
    vf sum = vzero();
    int64_t j = 0;
    for (; j + W <= jn; j += W) {
      const vf p = vexp(vsub(vload(sh + j), mv));
      vstore(sh + j, p);
      sum = vadd(sum, p);
    }
    if (j < jn) {
      const int n = static_cast<int>(jn - j);
      const vf p = vexp(vsub(vload_n(sh + j, n), mv));
      vstore_n(sh + j, p, n);
      sum = vadd(sum, vblend(vlt(viota(), vset1(static_cast<float>(n))), vzero(), p));
    }
    ml[2 * h] = mx;
    ml[2 * h + 1] = vhsum(sum);
  }
  if (a.kv_fp8) kv_values<uint8_t>(a, j0, j1, s, o);
  else if (a.kv_bf16) kv_values<uint16_t>(a, j0, j1, s, o);
  else kv_values<float>(a, j0, j1, s, o);
}

// Merges the chunk partials of query row i: out_h = sum_c e^(m_c - M) o_c / sum_c e^(m_c - M) l_c.
void k_attn_combine(const AttnArgs& a, int64_t i, int64_t n_chunks, const float* part_o, const float* part_ml) {
  const int64_t hd = a.head_dim, nh = a.n_heads;
  for (int64_t h = 0; h < nh; ++h) {
    float mx = -INFINITY;
    for (int64_t c = 0; c < n_chunks; ++c) mx = part_ml[(c * nh + h) * 2] > mx ? part_ml[(c * nh + h) * 2] : mx;
    float* out = a.out + i * a.out_stride + h * hd;
    for (int64_t d = 0; d < hd; ++d) out[d] = 0.0f;
    if (mx == -INFINITY) continue;
    float l = 0.0f;
    for (int64_t c = 0; c < n_chunks; ++c) {
      const float mc = part_ml[(c * nh + h) * 2];
      if (mc == -INFINITY) continue;
      const float wgt = std::exp(mc - mx);
      l += wgt * part_ml[(c * nh + h) * 2 + 1];
      const vf wv = vset1(wgt);
      const float* oc = part_o + (c * nh + h) * hd;
      int64_t d = 0;
      for (; d + W <= hd; d += W) vstore(out + d, vfma(wv, vload(oc + d), vload(out + d)));
      if (d < hd) {
        const int n = static_cast<int>(hd - d);
        vstore_n(out + d, vfma(wv, vload_n(oc + d, n), vload_n(out + d, n)), n);
      }
    }
    const vf inv = vset1(1.0f / l);
    int64_t d = 0;
    for (; d + W <= hd; d += W) vstore(out + d, vmul(vload(out + d), inv));
    if (d < hd) vstore_n(out + d, vmul(vload_n(out + d, static_cast<int>(hd - d)), inv), static_cast<int>(hd - d));
  }
}

// The table entries shared by every ISA.
inline KernelTable base_table(const char* isa) {
  KernelTable t{};
  t.isa = isa;
  t.w = W;
  t.mr = kMR;
  t.nr = kNR;
  t.attn_bq = kBQ;
  t.bf16_dot = false;
  t.pack_a_f32 = k_pack_a_f32;
  t.pack_a_pairs = nullptr;
  t.gemm_tile = k_gemm_tile_f32;
  t.gemm_panels = k_gemm_panels_f32;
  t.rms_norm_rows = k_rms_norm_rows;
  t.rope_rows = k_rope_rows;
  t.silu_mul = k_silu_mul;
  t.gelu = k_gelu;
  t.add = k_add;
  t.exp = k_exp;
  t.erf = k_erf;
  t.bf16_to_f32 = k_bf16_to_f32;
  t.f16_to_f32 = k_f16_to_f32;
  t.fp8_to_f32 = k_fp8_to_f32;
  t.f32_to_bf16_round = k_f32_to_bf16_round;
  t.attn_tile = k_attn_tile;
  t.attn_tile_bf16 = nullptr;
  t.attn_chunk = k_attn_chunk;
  t.attn_combine = k_attn_combine;
  t.dot_vs_fma_speed = nullptr;
  return t;
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
