// The avx512-vnni table: avx512's (kernels_avx512.cc) with the quantized matmuls built for
// AVX512_VNNI (q8_0_avx512.h, q4_k_avx512.h, q6_k_avx512.h: vpdpbusd; all 512-bit). Same bits as
// every other path. The avx512-bf16 table takes these kernels too.
//
// Every function here may execute AVX512_VNNI instructions: callers must have checked the CPU first
// (cpu_ops.cc), including the table getter itself.
// GCC 12 warns about _mm512_undefined_* inside its own intrinsic headers (false positive).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/q4_k_avx512.h"
#include "kernels/cpu/q6_k_avx512.h"
#include "kernels/cpu/q8_0_avx512.h"

#if !defined(__AVX512VNNI__)
#error "kernels_avx512_vnni.cc must be built with -mavx512vnni (src/kernels/CMakeLists.txt)"
#endif

namespace locr::kernels::cpu {

const KernelTable* kernel_table_avx512_vnni() {
  static const KernelTable t = [] {
    KernelTable k = *kernel_table_avx512();
    k.isa = "avx512-vnni";
    k.gemm_q8_0 = q8_0_gemm_zmm;
    k.gemm_q4_k = q4_k_gemm_zmm;
    k.gemm_q6_k = q6_k_gemm_zmm;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
