// Attention leaf kernels of every ISA: the f32 tiled kernel (QT, S and O tiles with an online
// softmax). The few-query (decode) path is in kernels_attention_decode.h.

#pragma once

#include "kernels/cpu/kernels_common.h"
#include "kernels/cpu/kernels_elementwise.h"  // vexp2_softmax

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

// Attention, f32. Layout per tile: QT [hd][kBQ] (pre-scaled by scale*log2e), S [kBKV][kBQ]
// (scores transposed: one row per key, one column per query, so softmax statistics are plain
// vector max/add down the rows), O [kBQ][hd] accumulated with the online-softmax rescale.

template <int JR>
inline void qk_rows(const float* kb, int64_t kv_stride, int64_t hd, const float* qt, float* s) {
  vf acc[JR][kAttnQV];
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) acc[r][v] = vzero();
  for (int64_t d = 0; d < hd; ++d) {
    vf qv[kAttnQV];
    LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) qv[v] = vload(qt + d * kBQ + v * W);
    LOCR_UNROLL for (int r = 0; r < JR; ++r) {
      const vf kv = vset1(kb[r * kv_stride + d]);
      LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) acc[r][v] = vfma(kv, qv[v], acc[r][v]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < JR; ++r) LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) vstore(s + r * kBQ + v * W, acc[r][v]);
}

template <int JR = kJR>
inline void qk_dispatch(int jr, const float* kb, int64_t kv_stride, int64_t hd, const float* qt, float* s) {
  if constexpr (JR >= 1) {
    if (jr == JR) return qk_rows<JR>(kb, kv_stride, hd, qt, s);
    qk_dispatch<JR - 1>(jr, kb, kv_stride, hd, qt, s);
  }
}

// O[ii .. ii+IR)[d0 .. d0+dn) = O * alpha (the online softmax's rescale of each row, when alpha is
// given) + P[ii.., 0..jn) · V[0..jn)[d0..]; P read transposed from S.
template <int IR>
inline void pv_rows(int64_t jn, const float* vb, int64_t kv_stride, const float* s, const float* alpha, int ii,
                    float* o, int64_t hd, int64_t d0, int dn) {
  vf acc[IR][kPvND];
  int cnt[kPvND];
  LOCR_UNROLL for (int c = 0; c < kPvND; ++c) {
    const int left = dn - c * W;
    cnt[c] = left >= W ? W : (left > 0 ? left : 0);
  }
  LOCR_UNROLL for (int r = 0; r < IR; ++r) LOCR_UNROLL for (int c = 0; c < kPvND; ++c) {
    float* op = o + (ii + r) * hd + d0 + c * W;
    acc[r][c] = cnt[c] == W ? vload(op) : vload_n(op, cnt[c]);
    if (alpha) acc[r][c] = vmul(acc[r][c], vset1(alpha[ii + r]));
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
inline void pv_dispatch(int ir, int64_t jn, const float* vb, int64_t kv_stride, const float* s, const float* alpha,
                        int ii, float* o, int64_t hd, int64_t d0, int dn) {
  if constexpr (IR >= 1) {
    if (ir == IR) return pv_rows<IR>(jn, vb, kv_stride, s, alpha, ii, o, hd, d0, dn);
    pv_dispatch<IR - 1>(ir, jn, vb, kv_stride, s, alpha, ii, o, hd, d0, dn);
  }
}

// The same product on O transposed (ot [hd][kBQ], one row per dim, queries across the lanes, the
// layout of S): OT[d0 .. d0+DR) = OT * alpha + V[0..jn)[d0 .. d0+DR)ᵀ · P. Each key broadcasts DR
// values of V against the QV query vectors of its S row; each output is formed as in pv_rows (the
// same rescale, the same fused products in key order), so the bits are the same. On AVX2 this is
// the 4 x 3 register tile, which one Zen 3 core runs nearer its FMA peak than pv_rows' 6 x 2.
template <int DR>
inline void pvt_rows(int64_t jn, const float* vb, int64_t kv_stride, const float* s, const float* alpha, float* ot,
                     int64_t d0) {
  vf acc[DR][kAttnQV];
  LOCR_UNROLL for (int r = 0; r < DR; ++r) LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) {
    acc[r][v] = vload(ot + (d0 + r) * kBQ + v * W);
    if (alpha) acc[r][v] = vmul(acc[r][v], vload(alpha + v * W));
  }
  const float* vr = vb + d0;
  for (int64_t j = 0; j < jn; ++j, vr += kv_stride) {
    vf p[kAttnQV];
    LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) p[v] = vload(s + j * kBQ + v * W);
    LOCR_UNROLL for (int r = 0; r < DR; ++r) {
      const vf x = vset1(vr[r]);
      LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) acc[r][v] = vfma(x, p[v], acc[r][v]);
    }
  }
  LOCR_UNROLL for (int r = 0; r < DR; ++r) LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v)
    vstore(ot + (d0 + r) * kBQ + v * W, acc[r][v]);
}

template <int DR = kPvDR>
inline void pvt_dispatch(int dr, int64_t jn, const float* vb, int64_t kv_stride, const float* s, const float* alpha,
                         float* ot, int64_t d0) {
  if constexpr (DR >= 1) {
    if (dr == DR) return pvt_rows<DR>(jn, vb, kv_stride, s, alpha, ot, d0);
    pvt_dispatch<DR - 1>(dr, jn, vb, kv_stride, s, alpha, ot, d0);
  }
}

// The new running max of each of QV query vectors over scores s[0 .. jn) (rows ld floats apart,
// vector v at s + v * W) from the old max m[v]; the shift ms its exponentials take (0 while every
// score so far is masked: no inf - inf) and alpha, the rescale of its earlier sum and output. The
// QV max chains run side by side: one chain alone waits out a max latency per key (4 cycles on an
// Emerald Rapids Xeon: ~4% of a 64-dim vision tile there).
struct BlockMax {
  vf mx, ms, alpha;
};
template <int QV>
inline void block_max(const float* s, int64_t jn, int64_t ld, const vf (&m)[QV], BlockMax (&bm)[QV]) {
  vf mx[QV];
  LOCR_UNROLL for (int v = 0; v < QV; ++v) mx[v] = m[v];
  for (int64_t j = 0; j < jn; ++j)
    LOCR_UNROLL for (int v = 0; v < QV; ++v) mx[v] = vmax(mx[v], vload(s + j * ld + v * W));
  const vf ninf = vset1(-INFINITY);
  LOCR_UNROLL for (int v = 0; v < QV; ++v) {
    const vf ms = vblend(veq(mx[v], ninf), mx[v], vzero());
    bm[v] = {mx[v], ms, vexp2_softmax(vsub(m[v], ms))};
  }
}
// The probability of score sj under shift ms; masked (-inf) scores give exactly 0.
template <bool Masked>
inline vf block_prob(vf sj, vf ms) {
  const vf p = vexp2_softmax(vsub(sj, ms));
  return Masked ? vblend(veq(sj, vset1(-INFINITY)), p, vzero()) : p;
}

// Online softmax over one key block for all QV * W query columns of S (in the log2 domain).
// m, l: running max and sum per query column; alpha_out: the rescale factor of O rows. Masked:
// the block holds masked (-inf) scores, whose probabilities are then exactly 0 (exp2 alone would
// give 2^-126), so a query row's result depends only on the keys it sees and not on which other
// rows share its tile (a prompt's rows give the same bits however the prompt is split).
// Each query vector's probabilities are summed over the keys in order, as one vector alone would
// be; the vectors only share the loop.
template <int QV, bool Masked = false>
inline void softmax_block(float* s, int64_t jn, vf (&m)[QV], vf (&l)[QV], float* alpha_out) {
  constexpr int BQ = QV * W;
  BlockMax bm[QV];
  block_max<QV>(s, jn, BQ, m, bm);
  vf sum[QV];
  LOCR_UNROLL for (int v = 0; v < QV; ++v) sum[v] = vzero();
  for (int64_t j = 0; j < jn; ++j)
    LOCR_UNROLL for (int v = 0; v < QV; ++v) {
      const vf p = block_prob<Masked>(vload(s + j * BQ + v * W), bm[v].ms);
      vstore(s + j * BQ + v * W, p);
      sum[v] = vadd(sum[v], p);
    }
  LOCR_UNROLL for (int v = 0; v < QV; ++v) {
    l[v] = vfma(l[v], bm[v].alpha, sum[v]);
    m[v] = bm[v].mx;
    vstore(alpha_out + v * W, bm[v].alpha);
  }
}

template <int QV>
inline void mask_causal(float* s, int64_t jn, int64_t first_thr) {
  // Key row j is visible to query column i iff i >= first_thr + j.
  const vf ninf = vset1(-INFINITY);
  for (int64_t j = 0; j < jn; ++j) {
    const int64_t thr = first_thr + j;
    if (thr <= 0) continue;
    LOCR_UNROLL for (int v = 0; v < QV; ++v) {
      const vf idx = vadd(viota(), vset1(static_cast<float>(v * W)));
      float* sp = s + j * QV * W + v * W;
      vstore(sp, vblend(vlt(idx, vset1(static_cast<float>(thr))), vload(sp), ninf));
    }
  }
}

// One key block [j0, j0 + jn) of the tile whose first query is q0: its causal mask where the block
// reaches past that query, then the online softmax (masked probabilities exactly 0).
template <int QV>
inline void mask_softmax_block(const AttnArgs& a, int64_t q0, int64_t j0, float* s, int64_t jn, vf (&m)[QV],
                               vf (&l)[QV], float* alpha_out) {
  if (a.causal && j0 + jn - 1 > a.q_offset + q0) {
    mask_causal<QV>(s, jn, j0 - a.q_offset - q0);
    softmax_block<QV, true>(s, jn, m, l, alpha_out);
  } else {
    softmax_block<QV>(s, jn, m, l, alpha_out);
  }
}

// The tile's output rows: O row i (o_ld floats apart) divided by its softmax sum (l, spilled to
// lsum [QV * W]), written to query row q0 + i of head h.
template <int QV>
inline void store_tile_output(const AttnArgs& a, int64_t h, int64_t q0, int nq, const float* o, int64_t o_ld,
                              const vf (&l)[QV], float* lsum) {
  const int64_t hd = a.head_dim;
  LOCR_UNROLL for (int v = 0; v < QV; ++v) vstore(lsum + v * W, l[v]);
  for (int i = 0; i < nq; ++i) {
    const vf inv = vset1(lsum[i] > 0 ? 1.0f / lsum[i] : 0.0f);
    const float* oi = o + i * o_ld;
    float* out = a.out + (q0 + i) * a.out_stride + h * hd;
    int64_t d = 0;
    for (; d + W <= hd; d += W) vstore(out + d, vmul(vload(oi + d), inv));
    if (d < hd) vstore_n(out + d, vmul(vload_n(oi + d, static_cast<int>(hd - d)), inv), static_cast<int>(hd - d));
  }
}

// store_tile_output for O transposed (ot [hd][kBQ]: one row per dim, queries across the lanes):
// W x W blocks transposed back to query rows, each times the same reciprocal of its sum.
template <int QV>
inline void store_tile_output_t(const AttnArgs& a, int64_t h, int64_t q0, int nq, const float* ot,
                                const vf (&l)[QV], float* lsum) {
  const int64_t hd = a.head_dim;
  LOCR_UNROLL for (int v = 0; v < QV; ++v) vstore(lsum + v * W, l[v]);
  for (int g = 0; g < nq; g += W)
    for (int64_t d0 = 0; d0 < hd; d0 += W) {
      const int n = static_cast<int>(min64(W, hd - d0));
      vf r[W];
      LOCR_UNROLL for (int k = 0; k < W; ++k) r[k] = k < n ? vload(ot + (d0 + k) * QV * W + g) : vzero();
      vtranspose(r);  // r[i]: dims d0 .. d0 + n of query g + i
      for (int i = 0; i < W && g + i < nq; ++i) {
        const float sum = lsum[g + i];
        const vf y = vmul(r[i], vset1(sum > 0 ? 1.0f / sum : 0.0f));
        float* out = a.out + (q0 + g + i) * a.out_stride + h * hd + d0;
        if (n == W) {
          vstore(out, y);
        } else {
          vstore_n(out, y, n);
        }
      }
    }
}

// qt [hd][kBQ]: query rows q (q_stride floats apart, nq of them) times qs, transposed; rows past
// nq are zeros. Blocks of W rows x W dims go through registers (a scalar loop took ~5% of an AVX2
// causal prefill tile).
static_assert(kBQ % W == 0, "load_q_transposed moves whole blocks of W query rows");
inline void load_q_transposed(const float* q, int64_t q_stride, int nq, int64_t hd, float qs, float* qt) {
  const vf scale = vset1(qs);
  for (int g = 0; g < kBQ; g += W)
    for (int64_t d0 = 0; d0 < hd; d0 += W) {
      const int n = static_cast<int>(min64(W, hd - d0));
      vf r[W];
      LOCR_UNROLL for (int i = 0; i < W; ++i) {
        const float* x = q + (g + i) * q_stride + d0;
        r[i] = g + i >= nq ? vzero() : vmul(n == W ? vload(x) : vload_n(x, n), scale);
      }
      vtranspose(r);
      for (int k = 0; k < n; ++k) vstore(qt + (d0 + k) * kBQ + g, r[k]);
    }
}

void k_attn_tile(const AttnArgs& a, int64_t h, int64_t q0, float* scratch) {
  const int64_t hd = a.head_dim, group = a.n_heads / a.n_kv_heads, kh = h / group;
  const int nq = static_cast<int>(min64(kBQ, a.n_q - q0));
  float* qt = scratch;          // [hd][kBQ]
  float* s = qt + hd * kBQ;     // [kBKV][kBQ]
  float* o = s + kBKV * kBQ;    // [kBQ][hd] ([hd][kBQ] when kPvDR > 0)
  float* alpha = o + kBQ * hd;  // [kBQ]
  float* lsum = alpha + kBQ;    // [kBQ]
  load_q_transposed(a.q + q0 * a.q_stride + h * hd, a.q_stride, nq, hd, a.scale * kLog2e, qt);
  for (int64_t e = 0; e < kBQ * hd; ++e) o[e] = 0.0f;
  vf m[kAttnQV], l[kAttnQV];
  LOCR_UNROLL for (int v = 0; v < kAttnQV; ++v) {
    m[v] = vset1(-INFINITY);
    l[v] = vzero();
  }
  const int64_t kv_end = a.causal ? min64(a.n_kv, a.q_offset + q0 + nq) : a.n_kv;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kBKV) {
    const int64_t jn = min64(kBKV, kv_end - j0);
    const float* kb = a.k + j0 * a.kv_stride + kh * a.kv_head_stride;
    for (int64_t jj = 0; jj < jn; jj += kJR)
      qk_dispatch(static_cast<int>(min64(kJR, jn - jj)), kb + jj * a.kv_stride, a.kv_stride, hd, qt, s + jj * kBQ);
    mask_softmax_block(a, q0, j0, s, jn, m, l, alpha);
    // O's rescale by alpha rides on the PV kernel's load of O (none before the first block).
    const float* vb = a.v + j0 * a.kv_stride + kh * a.kv_head_stride;
    const float* al = j0 > 0 ? alpha : nullptr;
    if constexpr (kPvDR > 0) {
      for (int64_t d0 = 0; d0 < hd; d0 += kPvDR)
        pvt_dispatch(static_cast<int>(min64(kPvDR, hd - d0)), jn, vb, a.kv_stride, s, al, o, d0);
    } else {
      for (int64_t d0 = 0; d0 < hd; d0 += kPvND * W) {
        const int dn = static_cast<int>(min64(kPvND * W, hd - d0));
        for (int ii = 0; ii < nq; ii += kPvIR)
          pv_dispatch(static_cast<int>(min64(kPvIR, nq - ii)), jn, vb, a.kv_stride, s, al, ii, o, hd, d0, dn);
      }
    }
  }
  if constexpr (kPvDR > 0) {
    store_tile_output_t(a, h, q0, nq, o, l, lsum);
  } else {
    store_tile_output(a, h, q0, nq, o, hd, l, lsum);
  }
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
