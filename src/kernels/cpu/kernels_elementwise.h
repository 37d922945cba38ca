// Element-wise leaf kernels of every ISA: exp, exp2, erf and GELU (polynomials fitted for this
// project, docs/numerics.md), RMSNorm rows, RoPE rows, SiLU-gated product, add, dtype widening.

#pragma once

#include "kernels/cpu/kernels_common.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

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

// 2^x for the online softmax, whose arguments are <= 0 (a score minus its running maximum; -inf
// where masked): x clamped at -126 (so -inf gives 2^-126 rather than 0, nothing beside the row's
// largest term, 1), x = n + f with |f| <= 1/2, and 2^f by a degree-6 fit of 2^f itself on [-1/2, 1/2]
// (1.6 ulp with the rounding of its float evaluation). Ten vector operations where the earlier
// exp-based form took fifteen: the softmax is the part of an attention tile that is not a product.
inline vf vexp2_softmax(vf x) {
  x = vmax(x, vset1(-126.0f));
  const vf n = vround(x);
  const vf f = vsub(x, n);
  vf p = vset1(1.5345811e-04f);
  p = vfma(p, f, vset1(1.3399931e-03f));
  p = vfma(p, f, vset1(9.6184891e-03f));
  p = vfma(p, f, vset1(5.5503286e-02f));
  p = vfma(p, f, vset1(2.4022646e-01f));
  p = vfma(p, f, vset1(6.9314718e-01f));
  p = vfma(p, f, vset1(1.0f));
  return vscale2(p, n);
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

void k_exp2_softmax(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(y + i, vexp2_softmax(vload(x + i)));
  if (i < n) vstore_n(y + i, vexp2_softmax(vload_n(x + i, static_cast<int>(n - i))), static_cast<int>(n - i));
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
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore_bf16(y + i, vload(x + i));
  if (i < n) vstore_bf16_n(y + i, vload_n(x + i, static_cast<int>(n - i)), static_cast<int>(n - i));
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

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
