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

void gemm_q8_0_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                       float* c, int64_t ldc) {
  for (int64_t g = 0; g < groups; ++g) {
    const Q8Group grp{w + g * n_blocks * kQ8GroupBlockBytes, n_blocks};
    for (int64_t i = 0; i < m; ++i) {
      const Q8Act act{x + i * n_blocks * kQ8ActBlockBytes, n_blocks};
      for (int r = 0; r < kQ8GroupRows && g * kQ8GroupRows + r < rows; ++r)
        c[i * ldc + g * kQ8GroupRows + r] = q8_0_dot_packed(grp, r, act);
    }
  }
}

void gemm_q4_k_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                       float* c, int64_t ldc) {
  for (int64_t g = 0; g < groups; ++g) {
    const Q4KGroup grp{w + g * n_blocks * kQ4KGroupBlockBytes};
    for (int64_t i = 0; i < m; ++i) {
      const Q4KAct act{x + i * n_blocks * kQ4KActBlockBytes, n_blocks};
      for (int r = 0; r < kQ4KGroupRows && g * kQ4KGroupRows + r < rows; ++r)
        c[i * ldc + g * kQ4KGroupRows + r] = q4_k_dot_packed(grp, r, act);
    }
  }
}

void gemm_q6_k_generic(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m, int64_t n_blocks,
                       float* c, int64_t ldc) {
  for (int64_t g = 0; g < groups; ++g) {
    const Q6KGroup grp{w + g * n_blocks * kQ6KGroupBlockBytes};
    for (int64_t i = 0; i < m; ++i) {
      const Q6KAct act{x + i * n_blocks * kQ6KActBlockBytes, n_blocks};
      for (int r = 0; r < kQ6KGroupRows && g * kQ6KGroupRows + r < rows; ++r)
        c[i * ldc + g * kQ6KGroupRows + r] = q6_k_dot_packed(grp, r, act);
    }
  }
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
