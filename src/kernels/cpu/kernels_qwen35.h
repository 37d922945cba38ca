// Leaf kernels of the Qwen3.5 family's ops (every ISA): LayerNorm rows, tanh-GELU, the sigmoid
// gate, the causal depthwise conv1d + SiLU of the Gated DeltaNet layers, and the gated delta rule.
// The oracles are the host defaults in kernels/ops_qwen35.cc.

#pragma once

#include "kernels/cpu/kernels_common.h"
#include "kernels/cpu/kernels_elementwise.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

// x / (1 + e^-z): the logistic gate of z applied to x, with no cancellation anywhere (e^-z
// saturates at e^88 or 0: then x / 1.65e38 or x itself).
inline vf vgate(vf z, vf x) { return vdiv(x, vadd(vset1(1.0f), vexp(vsub(vzero(), z)))); }

// ------------------------------------------------------------------------------------------------
// Element-wise.

void k_layer_norm_rows(const float* x, int64_t x_stride, const float* w, const float* b, float eps, int64_t rows,
                       int64_t dim, float* y, int64_t y_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    // Mean, then the biased variance around it (two passes: no cancellation), f32 lanes summed in f64.
    vf s0 = vzero(), s1 = vzero();
    int64_t i = 0;
    for (; i + 2 * W <= dim; i += 2 * W) {
      s0 = vadd(s0, vload(xr + i));
      s1 = vadd(s1, vload(xr + i + W));
    }
    double sum = static_cast<double>(vhsum(vadd(s0, s1)));
    for (; i < dim; ++i) sum += xr[i];
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const vf m = vset1(mean);
    s0 = vzero();
    s1 = vzero();
    i = 0;
    for (; i + 2 * W <= dim; i += 2 * W) {
      const vf d0 = vsub(vload(xr + i), m), d1 = vsub(vload(xr + i + W), m);
      s0 = vfma(d0, d0, s0);
      s1 = vfma(d1, d1, s1);
    }
    double ss = static_cast<double>(vhsum(vadd(s0, s1)));
    for (; i < dim; ++i) ss += static_cast<double>(xr[i] - mean) * (xr[i] - mean);
    const vf inv = vset1(static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps)));
    i = 0;
    for (; i + W <= dim; i += W)
      vstore(yr + i, vfma(vmul(vsub(vload(xr + i), m), inv), vload(w + i), vload(b + i)));
    if (i < dim) {
      const int n = static_cast<int>(dim - i);
      vstore_n(yr + i, vfma(vmul(vsub(vload_n(xr + i, n), m), inv), vload_n(w + i, n), vload_n(b + i, n)), n);
    }
  }
}

// gelu_pytorch_tanh: 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
// Below x = -10 the value is under 2e-37 in magnitude: 0 (vexp saturates at e^88 there, which
// would leave x / 1.65e38, and x^3 overflows for huge |x|).
inline vf vgelu_tanh(vf x) {
  const float c0 = 0.797884560802865356f;  // sqrt(2 / pi)
  const vf u2 = vmul(x, vfma(vmul(x, x), vset1(2.0f * c0 * 0.044715f), vset1(2.0f * c0)));
  return vblend(vlt(x, vset1(-10.0f)), vgate(u2, x), vzero());
}

void k_gelu_tanh(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(x + i, vgelu_tanh(vload(x + i)));
  if (i < n) vstore_n(x + i, vgelu_tanh(vload_n(x + i, static_cast<int>(n - i))), static_cast<int>(n - i));
}

void k_sigmoid_mul(const float* gate, const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) vstore(out + i, vgate(vload(gate + i), vload(x + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    vstore_n(out + i, vgate(vload_n(gate + i, r), vload_n(x + i, r)), r);
  }
}

// ------------------------------------------------------------------------------------------------
// Causal depthwise conv1d + SiLU: rows [t0, t1) of one sequence, every channel. Row u of its window
// is state row u (u < K-1), then row u - (K-1) of x; out row t = silu(sum_j wt[j] * window row t + j).
// The state is only read (the caller moves the window's last K-1 rows into it afterwards), so any
// split of the rows over threads gives the same bits.

void k_conv1d_silu_rows(const float* x, int64_t x_stride, const float* wt, int64_t C, int64_t K, const float* state,
                        int64_t t0, int64_t t1, float* out, int64_t out_stride) {
  const int64_t S = K - 1;
  auto row = [&](int64_t u) -> const float* { return u < S ? state + u * C : x + (u - S) * x_stride; };
  constexpr int64_t kCols = 1024;  // channels per pass: the window's rows stay in L1
  for (int64_t c0 = 0; c0 < C; c0 += kCols) {
    const int64_t c1 = min64(C, c0 + kCols);
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out + t * out_stride;
      int64_t c = c0;
      for (; c + W <= c1; c += W) {
        vf acc = vzero();
        for (int64_t j = 0; j < K; ++j) acc = vfma(vload(wt + j * C + c), vload(row(t + j) + c), acc);
        vstore(o + c, vgate(acc, acc));
      }
      if (c < c1) {
        const int m = static_cast<int>(c1 - c);
        vf acc = vzero();
        for (int64_t j = 0; j < K; ++j) acc = vfma(vload_n(wt + j * C + c, m), vload_n(row(t + j) + c, m), acc);
        vstore_n(o + c, vgate(acc, acc), m);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Gated delta rule (Ops::gated_delta_net). Per row and value head, with k' = ik k, q' = iq q:
//   S <- decay S + k' d^T,  d = (v - decay S^T k') beta,  out = S^T q' = decay iq S^T q + d (k'.q')
// over the previous S. S^T k and S^T q of a row's state are summed (rows of S ascending) while the
// previous row updates S, so each row passes over the state once; the first row of a call sums them
// over the stored state in the same order, so splitting a sequence over calls changes no bit.

constexpr int kGdnNV = 2;  // vectors of state columns per chunk

void k_gdn_prep(const GdnArgs& g, int64_t r0, int64_t r1) {
  const int64_t KD = g.k_dim;
  const double q_scale = 1.0 / std::sqrt(static_cast<double>(KD));
  for (int64_t r = r0; r < r1; ++r) {
    float* sc = g.scal + r * g.scal_stride;
    for (int64_t h = 0; h < g.n_v_heads; ++h) {
      const double x = static_cast<double>(g.a[r * g.a_stride + h]) + g.dt_bias[h];
      const double softplus = x > 20.0 ? x : std::log1p(std::exp(x));  // torch's: beta 1, threshold 20
      sc[2 * h] = static_cast<float>(std::exp(-std::exp(static_cast<double>(g.a_log[h])) * softplus));
      sc[2 * h + 1] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(g.b[r * g.b_stride + h]))));
    }
    for (int64_t kh = 0; kh < g.n_k_heads; ++kh) {
      const float* q = g.q + r * g.q_stride + kh * KD;
      const float* k = g.k + r * g.k_stride + kh * KD;
      vf aq = vzero(), ak = vzero(), akq = vzero();
      for (int64_t i = 0; i < KD; i += W) {
        const int m = static_cast<int>(min64(W, KD - i));
        const vf qv = vload_n(q + i, m), kv = vload_n(k + i, m);
        aq = vfma(qv, qv, aq);
        ak = vfma(kv, kv, ak);
        akq = vfma(kv, qv, akq);
      }
      const double ik = 1.0 / std::sqrt(static_cast<double>(vhsum(ak)) + g.l2_eps);
      const double iq = 1.0 / std::sqrt(static_cast<double>(vhsum(aq)) + g.l2_eps) * q_scale;
      float* s = sc + 2 * g.n_v_heads + 3 * kh;
      s[0] = static_cast<float>(ik);
      s[1] = static_cast<float>(iq);
      s[2] = static_cast<float>(static_cast<double>(vhsum(akq)) * ik * iq);
    }
  }
}

// Rows [r0, r0 + n) of value head h over the state columns at sc (row i of the chunk at sc + i *
// ld): `zero` starts from a zero state (written first). FULL: the chunk is gdn_cols wide; else
// cnt[v] lanes of vector v are columns (state, v and out accessed with masks).
template <bool FULL>
void gdn_rows(const GdnArgs& g, int64_t r0, int64_t n, float* sc, int64_t ld, bool zero, int64_t h, int64_t j0,
              const int* cnt) {
  constexpr int NV = kGdnNV;
  const int64_t KD = g.k_dim, VD = g.v_dim, kh = g.tiled ? h % g.n_k_heads : h / (g.n_v_heads / g.n_k_heads);
  auto ld_v = [&](const float* p, int v) { return FULL ? vload(p + v * W) : vload_n(p + v * W, cnt[v]); };
  auto st_v = [&](float* p, int v, vf x) {
    if (FULL) {
      vstore(p + v * W, x);
    } else if (cnt[v] > 0) {
      vstore_n(p + v * W, x, cnt[v]);
    }
  };
  vf sk[NV], sq[NV];  // S^T k, S^T q of the row to come (raw k and q)
  LOCR_UNROLL for (int v = 0; v < NV; ++v) sk[v] = sq[v] = vzero();
  if (zero) {
    for (int64_t i = 0; i < KD; ++i) LOCR_UNROLL for (int v = 0; v < NV; ++v) st_v(sc + i * ld, v, vzero());
  } else {
    const float* k = g.k + r0 * g.k_stride + kh * KD;
    const float* q = g.q + r0 * g.q_stride + kh * KD;
    for (int64_t i = 0; i < KD; ++i) {
      const vf kb = vset1(k[i]), qb = vset1(q[i]);
      LOCR_UNROLL for (int v = 0; v < NV; ++v) {
        const vf x = ld_v(sc + i * ld, v);
        sk[v] = vfma(x, kb, sk[v]);
        sq[v] = vfma(x, qb, sq[v]);
      }
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    const int64_t r = r0 + t;
    const float* scal = g.scal + r * g.scal_stride;
    const float decay = scal[2 * h], beta = scal[2 * h + 1];
    const float* kq = scal + 2 * g.n_v_heads + 3 * kh;
    const float ik = kq[0], iq = kq[1], dot = kq[2];
    const float* vt = g.v + r * g.v_stride + h * VD + j0;
    float* ot = g.out + r * g.out_stride + h * VD + j0;
    vf dd[NV];  // ik d: the update is S <- decay S + k dd^T with the raw k
    LOCR_UNROLL for (int v = 0; v < NV; ++v) {
      const vf d = vmul(vfnma(vset1(decay * ik), sk[v], ld_v(vt, v)), vset1(beta));
      st_v(ot, v, vfma(d, vset1(dot), vmul(vset1(decay * iq), sq[v])));
      dd[v] = vmul(d, vset1(ik));
    }
    const float* k = g.k + r * g.k_stride + kh * KD;
    const vf dec = vset1(decay);
    if (t + 2 < n) {  // the rows after next: rows are a page or more apart, beyond the prefetchers
      for (int64_t i = 0; i < KD; i += 16) {
        __builtin_prefetch(k + 2 * g.k_stride + i);
        __builtin_prefetch(g.q + (r + 2) * g.q_stride + kh * KD + i);
      }
      // This chunk's v and out columns: a v row missed in cache took ~30% of a prefill's delta rule.
      LOCR_UNROLL for (int v = 0; v < NV; ++v) {
        __builtin_prefetch(vt + 2 * g.v_stride + v * W);
        __builtin_prefetch(ot + 2 * g.out_stride + v * W, 1);
      }
    }
    if (t + 1 < n) {
      const float* kn = k + g.k_stride;
      const float* qn = g.q + (r + 1) * g.q_stride + kh * KD;
      LOCR_UNROLL for (int v = 0; v < NV; ++v) sk[v] = sq[v] = vzero();
      for (int64_t i = 0; i < KD; ++i) {
        const vf kb = vset1(k[i]), knb = vset1(kn[i]), qnb = vset1(qn[i]);
        LOCR_UNROLL for (int v = 0; v < NV; ++v) {
          const vf x = vfma(kb, dd[v], vmul(dec, ld_v(sc + i * ld, v)));
          st_v(sc + i * ld, v, x);
          sk[v] = vfma(x, knb, sk[v]);
          sq[v] = vfma(x, qnb, sq[v]);
        }
      }
    } else {
      for (int64_t i = 0; i < KD; ++i) {
        const vf kb = vset1(k[i]);
        LOCR_UNROLL for (int v = 0; v < NV; ++v)
          st_v(sc + i * ld, v, vfma(kb, dd[v], vmul(dec, ld_v(sc + i * ld, v))));
      }
    }
  }
}

// With `work` (k_dim x gdn_cols floats), a sequence of several rows runs on a contiguous copy of
// its chunk: the chunk's rows in the state are v_dim floats apart, a stride that maps them onto a
// few L1 sets. The same arithmetic either way: the same bits.
template <bool FULL>
void gdn_chunk_impl(const GdnArgs& g, int64_t r0, int64_t n, float* s, bool fresh, int64_t h, int64_t j0,
                    float* work) {
  constexpr int NV = kGdnNV, CW = kGdnNV * W;
  const int64_t KD = g.k_dim, VD = g.v_dim;
  int cnt[NV];
  LOCR_UNROLL for (int v = 0; v < NV; ++v) cnt[v] = static_cast<int>(max64(0, min64(W, VD - j0 - v * W)));
  float* sc = s + j0;
  if (work == nullptr || n < 2) return gdn_rows<FULL>(g, r0, n, sc, VD, fresh, h, j0, cnt);
  if (!fresh)
    for (int64_t i = 0; i < KD; ++i)
      LOCR_UNROLL for (int v = 0; v < NV; ++v)
        vstore(work + i * CW + v * W, FULL ? vload(sc + i * VD + v * W) : vload_n(sc + i * VD + v * W, cnt[v]));
  gdn_rows<FULL>(g, r0, n, work, CW, fresh, h, j0, cnt);
  for (int64_t i = 0; i < KD; ++i)
    LOCR_UNROLL for (int v = 0; v < NV; ++v) {
      const vf x = vload(work + i * CW + v * W);
      if (FULL) {
        vstore(sc + i * VD + v * W, x);
      } else if (cnt[v] > 0) {
        vstore_n(sc + i * VD + v * W, x, cnt[v]);
      }
    }
}

void k_gdn_chunk(const GdnArgs& g, int64_t r0, int64_t n, float* s, bool fresh, int64_t h, int64_t j0, float* work) {
  if (j0 + kGdnNV * W <= g.v_dim) {
    gdn_chunk_impl<true>(g, r0, n, s, fresh, h, j0, work);
  } else {
    gdn_chunk_impl<false>(g, r0, n, s, fresh, h, j0, work);
  }
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
