// The greedy head's screen (greedy_screen.h, ScreenArgs in kernel_table.h): an 8-bit copy of the
// head's rows scored against f32 activations, with each row's error bound beside its score.
// Bandwidth-bound like the decode GEMV: the int8 rows are half the bytes of the BF16 ones.
#pragma once

#include "kernels/cpu/kernels_common.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

constexpr int kScreenV = kScreenRows / W;  // vectors per k step (1 with AVX-512, 2 with AVX2)
static_assert(kScreenRows % W == 0, "a screen group is whole vectors");

// Activation rows [m0, m0 + MB) against one group.
template <int MB>
inline void screen_group(const ScreenArgs& a, int64_t g, int64_t m0) {
  const int64_t K = a.k, nb = K / kScreenBlock;
  const int8_t* q = a.q + g * K * kScreenRows;
  const uint16_t* dc = a.dc + g * nb * 2 * kScreenRows;
  vf tot[MB][kScreenV], bnd[MB][kScreenV];
  LOCR_UNROLL for (int m = 0; m < MB; ++m) LOCR_UNROLL for (int v = 0; v < kScreenV; ++v) {
    tot[m][v] = vzero();
    bnd[m][v] = vzero();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* qb = q + b * kScreenBlock * kScreenRows;
    // The next groups' rows, ~8 KB ahead (as the GEMV): as many lines as this block has.
    for (int l = 0; l < kScreenBlock * kScreenRows / 64; ++l) __builtin_prefetch(qb + 8192 + 64 * l, 0, 3);
    vf acc[MB][kScreenV];
    LOCR_UNROLL for (int m = 0; m < MB; ++m) LOCR_UNROLL for (int v = 0; v < kScreenV; ++v) acc[m][v] = vzero();
    for (int kk = 0; kk < kScreenBlock; ++kk) {
      vf w[kScreenV];
      LOCR_UNROLL for (int v = 0; v < kScreenV; ++v) w[v] = vload_i8(qb + kk * kScreenRows + v * W);
      LOCR_UNROLL for (int m = 0; m < MB; ++m) {
        const vf hv = vset1(a.h[(m0 + m) * K + b * kScreenBlock + kk]);
        LOCR_UNROLL for (int v = 0; v < kScreenV; ++v) acc[m][v] = vfma(hv, w[v], acc[m][v]);
      }
    }
    LOCR_UNROLL for (int v = 0; v < kScreenV; ++v) {
      const vf d = vload_bf16(dc + b * 2 * kScreenRows + v * W);
      const vf c = vload_bf16(dc + b * 2 * kScreenRows + kScreenRows + v * W);
      LOCR_UNROLL for (int m = 0; m < MB; ++m) {
        tot[m][v] = vfma(acc[m][v], d, tot[m][v]);
        bnd[m][v] = vfma(c, vset1(a.l1[(m0 + m) * nb + b]), bnd[m][v]);
      }
    }
  }
  LOCR_UNROLL for (int m = 0; m < MB; ++m) LOCR_UNROLL for (int v = 0; v < kScreenV; ++v) {
    vstore(a.s + (m0 + m) * a.ld + g * kScreenRows + v * W, tot[m][v]);
    vstore(a.e + (m0 + m) * a.ld + g * kScreenRows + v * W, bnd[m][v]);
  }
}

// Activation rows per pass: their accumulators (3 per row and vector) stay in registers; later
// passes over a group read its rows from L1.
constexpr int kScreenMB = kScreenV == 1 ? 4 : 2;

void k_screen_rows(const ScreenArgs& a, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    int64_t m = 0;
    for (; m + kScreenMB <= a.m; m += kScreenMB) screen_group<kScreenMB>(a, g, m);
    for (; m < a.m; ++m) screen_group<1>(a, g, m);
  }
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
