// Portable kernels (baseline x86-64 flags, any CPU): kernels_impl.h over simd_generic.h.
#define LOCR_CPU_NS generic
#define LOCR_CPU_MR 4
#define LOCR_CPU_JR 4
#define LOCR_CPU_PV_IR 4
#define LOCR_CPU_PV_ND 2
#include "kernels/cpu/simd_generic.h"
#include "kernels/cpu/kernels_impl.h"
#include "kernels/cpu/q8_0_block.h"
#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/q6_k_block.h"

namespace locr::kernels::cpu {

namespace {

// The generic kernel-table entries on packed groups of 16 rows: every output one call of the
// canonical dot product written out, dot(group_base, row, activation_row_base).
template <class Dot>
void gemm_groups_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, float* c,
                         int64_t ldc, int64_t g_stride, int64_t x_row, Dot dot) {
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < m; ++i)
      for (int r = 0; r < 16 && g * 16 + r < rows; ++r) c[i * ldc + g * 16 + r] = dot(w + g * g_stride, r, x + i * x_row);
}

void gemm_q8_0_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                       float* c, int64_t ldc) {
  gemm_groups_generic(w, groups, rows, x, m, c, ldc, n_blocks * kQ8GroupBlockBytes, n_blocks * kQ8ActBlockBytes,
                      [&](const uint8_t* g, int r, const uint8_t* a) {
                        return q8_0_dot_packed(Q8Group{g, n_blocks}, r, Q8Act{a, n_blocks});
                      });
}

void gemm_q4_k_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                       float* c, int64_t ldc) {
  gemm_groups_generic(w, groups, rows, x, m, c, ldc, n_blocks * kQ4KGroupBlockBytes, n_blocks * kQ4KActBlockBytes,
                      [&](const uint8_t* g, int r, const uint8_t* a) {
                        return q4_k_dot_packed(Q4KGroup{g}, r, Q4KAct{a, n_blocks});
                      });
}

void gemm_q6_k_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                       float* c, int64_t ldc) {
  gemm_groups_generic(w, groups, rows, x, m, c, ldc, n_blocks * kQ6KGroupBlockBytes, n_blocks * kQ6KActBlockBytes,
                      [&](const uint8_t* g, int r, const uint8_t* a) {
                        return q6_k_dot_packed(Q6KGroup{g}, r, Q6KAct{a, n_blocks});
                      });
}

}  // namespace

const KernelTable* kernel_table_generic() {
  static const KernelTable t = [] {
    KernelTable k = generic::base_table("generic");
    k.gemm_q8_0 = gemm_q8_0_generic;
    k.gemm_q4_k = gemm_q4_k_generic;
    k.gemm_q6_k = gemm_q6_k_generic;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
