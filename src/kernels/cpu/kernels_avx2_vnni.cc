// The avx2-vnni table: avx2's (kernels_avx2.cc) with the quantized matmuls built for AVX-VNNI (the
// VEX vpdpbusd / vpdpwssd on 256 bits: q8_0_simd.h, q4_k_simd.h, q6_k_simd.h under __AVXVNNI__).
// Same bits as every other path. Nothing else here: the rest of the table is avx2's own code.
//
// Every function here may execute AVX-VNNI instructions: callers must have checked the CPU first
// (cpu_ops.cc), including the table getter itself.
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/q4_k_simd.h"
#include "kernels/cpu/q6_k_simd.h"
#include "kernels/cpu/q8_0_simd.h"

#if !defined(__AVXVNNI__)
#error "kernels_avx2_vnni.cc must be built with -mavxvnni (src/kernels/CMakeLists.txt)"
#endif

namespace locr::kernels::cpu {

const KernelTable* kernel_table_avx2_vnni() {
  static const KernelTable t = [] {
    KernelTable k = *kernel_table_avx2();
    k.isa = "avx2-vnni";
    k.gemm_q8_0 = q8_0_gemm_simd;
    k.gemm_q4_k = q4_k_gemm_simd;
    k.gemm_q6_k = q6_k_gemm_simd;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
