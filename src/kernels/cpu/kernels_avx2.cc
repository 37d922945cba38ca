// AVX2 + FMA + F16C kernels: kernels_impl.h over simd_avx2.h (8 floats per vector, 16 registers:
// GEMM tile 6 x 16, attention tiles of 24 queries: QK^T 4 keys x 24 queries, PV on O transposed,
// 4 dims x 24 queries).
#define LOCR_CPU_NS avx2
#define LOCR_CPU_MR 6
#define LOCR_CPU_ATTN_QV 3
#define LOCR_CPU_JR 4
#define LOCR_CPU_PV_IR 6
#define LOCR_CPU_PV_ND 2
#define LOCR_CPU_PV_DR 4
#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/kernels_impl.h"
#include "kernels/cpu/q8_0_simd.h"
#include "kernels/cpu/q4_k_simd.h"
#include "kernels/cpu/q6_k_simd.h"

namespace locr::kernels::cpu {

const KernelTable* kernel_table_avx2() {
  static const KernelTable t = [] {
    KernelTable k = avx2::base_table("avx2");
    k.gemm_q8_0 = q8_0_gemm_simd;
    k.gemm_q4_k = q4_k_gemm_simd;
    k.gemm_q6_k = q6_k_gemm_simd;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
