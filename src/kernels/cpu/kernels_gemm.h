// GEMM leaf kernels of every ISA: activation packing and the f32 FMA microkernel over K-major B
// panels (f32, or bf16 upconverted exactly); blocking and threads live in cpu_ops.cc.

#pragma once

#include "kernels/cpu/kernels_common.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

// GEMM: f32 FMA microkernel over a K-major B panel (f32, or bf16 upconverted exactly).

// One k step of a panel (kNR = 2W columns) as two vectors. BF16 panels come as pairs (vload_bf16_pairs:
// even columns, odd columns; a shift and a mask instead of two widening loads), which
// in_column_order puts back before the store. Each column is still one FMA chain over k in
// order, so the bits do not change.
static_assert(kNV == 2, "a panel's k step is one pair load");
template <typename BT>
inline void load_b_step(const BT* p, vf (&bv)[kNV]);
template <>
inline void load_b_step<float>(const float* p, vf (&bv)[kNV]) {
  bv[0] = vload(p);
  bv[1] = vload(p + W);
}
template <>
inline void load_b_step<uint16_t>(const uint16_t* p, vf (&bv)[kNV]) {
  vload_bf16_pairs(p, bv[0], bv[1]);
}
template <typename BT, int M>
inline void in_column_order(vf (&acc)[M][kNV]) {
  if constexpr (std::is_same_v<BT, uint16_t>) {
    LOCR_UNROLL for (int r = 0; r < M; ++r) vinterleave(acc[r][0], acc[r][1], acc[r][0], acc[r][1]);
  }
}

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
    // AVX-512: B's slice (64 KB of f32) streams from L2, two lines per k; fetching them 16 k
    // ahead raised the median of repeated runs 2-6% on a Xeon core (AVX2's slice sits in L1).
    if constexpr (W == 16) {
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) __builtin_prefetch(b + (k + 16) * kNR + v * W, 0, 3);
    }
    load_b_step<BT>(b + k * kNR, bv);
    LOCR_UNROLL for (int r = 0; r < M; ++r) {
      const vf av = vset1(a[k * kMR + r]);
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vfma(av, bv[v], acc[r][v]);
    }
  }
  in_column_order<BT, M>(acc);
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
        load_b_step<BT>(b + p * b_stride + (k + u) * kNR, bv);
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
      load_b_step<BT>(b + p * b_stride + k * kNR, bv);
      LOCR_UNROLL for (int r = 0; r < M; ++r) {
        const vf av = vset1(a[k * kMR + r]);
        LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[p][r][v] = vfma(av, bv[v], acc[p][r][v]);
      }
    }
  }
  LOCR_UNROLL for (int p = 0; p < P; ++p) {
    in_column_order<BT, M>(acc[p]);
    store_c<M>(acc[p], c + p * kNR, ldc, p == P - 1 ? n_last : kNR, accumulate);
  }
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
  static_assert(kMR <= W, "a tile's rows fit one vector");
  for (int64_t t = 0; t * kMR < m; ++t) {
    const int64_t rows = min64(kMR, m - t * kMR);
    float* d = dst + t * kc * kMR;
    // W columns at a time: the tile's rows (zero past `rows`) as vectors, rounded, transposed
    // into W k-steps of kMR values each.
    int64_t k = 0;
    for (; k + W <= kc; k += W) {
      vf v[W];
      LOCR_UNROLL for (int r = 0; r < W; ++r) {
        v[r] = r < rows ? vload(x + (t * kMR + r) * ldx + k0 + k) : vzero();
        if (round_bf16) v[r] = vround_bf16(v[r]);
      }
      vtranspose(v);
      LOCR_UNROLL for (int j = 0; j < W; ++j) vstore_n(d + (k + j) * kMR, v[j], kMR);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + (t * kMR + r) * ldx + k0;
      if (round_bf16) {
        for (int64_t kk = k; kk < kc; ++kk) d[kk * kMR + r] = round_bf16_scalar(xr[kk]);
      } else {
        for (int64_t kk = k; kk < kc; ++kk) d[kk * kMR + r] = xr[kk];
      }
    }
  }
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
