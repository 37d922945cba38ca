// Portable kernels (baseline x86-64 flags, any CPU): kernels_impl.h over simd_generic.h.
#define LOCR_CPU_NS generic
#define LOCR_CPU_MR 4
#define LOCR_CPU_JR 4
#define LOCR_CPU_PV_IR 4
#define LOCR_CPU_PV_ND 2
#include "kernels/cpu/simd_generic.h"
#include "kernels/cpu/kernels_impl.h"
#include "kernels/cpu/q8_0_block.h"

namespace locr::kernels::cpu {

namespace {

float dot_q8_0_generic(const void* a, const void* b, int64_t n_blocks) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  float acc = 0;
  for (int64_t k = 0; k < n_blocks; ++k, pa += kQ8BlockBytes, pb += kQ8BlockBytes) {
    const auto* qa = reinterpret_cast<const int8_t*>(pa + 2);
    const auto* qb = reinterpret_cast<const int8_t*>(pb + 2);
    int32_t s = 0;
    for (int i = 0; i < kQ8Block; ++i) s += int32_t{qa[i]} * int32_t{qb[i]};
    acc = q8_0_accumulate(acc, pa, pb, s);
  }
  return acc;
}

}  // namespace

const KernelTable* kernel_table_generic() {
  static const KernelTable t = [] {
    KernelTable k = generic::base_table("generic");
    k.dot_q8_0 = dot_q8_0_generic;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
