// Portable kernels (baseline x86-64 flags, any CPU): kernels_impl.h over simd_generic.h.
#define LOCR_CPU_NS generic
#define LOCR_CPU_MR 4
#define LOCR_CPU_JR 4
#define LOCR_CPU_PV_IR 4
#define LOCR_CPU_PV_ND 2
#include "kernels/cpu/simd_generic.h"
#include "kernels/cpu/kernels_impl.h"

namespace locr::kernels::cpu {

const KernelTable* kernel_table_generic() {
  static const KernelTable t = generic::base_table("generic");
  return &t;
}

}  // namespace locr::kernels::cpu
