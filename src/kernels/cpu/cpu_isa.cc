// Which CPU kernel path this machine can run (CPUID, detected once), LOCR_CPU_ISA's cap, and the
// leaf-kernel table of each path (kernel_table.h); make_cpu_ops (cpu_ops.cc) builds on these.
#include <cpuid.h>

#include <array>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/kernel_table.h"

namespace locr::kernels {

using cpu::KernelTable;

namespace {

// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 has no "f16c" for __builtin_cpu_supports.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c(); }
bool has_avx512() {
  return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
// AVX-VNNI (VEX vpdpbusd / vpdpwssd on 256 bits): CPUID leaf 7 sub-leaf 1, EAX bit 4 (GCC 12's
// __builtin_cpu_supports has no name for it).
bool has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}
bool has_avx2_vnni() { return has_avx2() && has_avx_vnni(); }
bool has_avx512_vnni() { return has_avx512() && __builtin_cpu_supports("avx512vnni"); }
// The avx512-bf16 table runs avx512-vnni's quantized kernels (every AVX512_BF16 CPU has VNNI).
bool has_avx512_bf16() { return has_avx512_vnni() && __builtin_cpu_supports("avx512bf16"); }

CpuIsa parse_isa(const std::string& s) {
  for (CpuIsa isa : kAllCpuIsas)
    if (s == cpu_isa_name(isa)) return isa;
  return CpuIsa::kAuto;
}

const KernelTable* table_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric:
      return cpu::kernel_table_generic();
    case CpuIsa::kAvx2:
      return cpu::kernel_table_avx2();
    case CpuIsa::kAvx2Vnni:
      return cpu::kernel_table_avx2_vnni();
    case CpuIsa::kAvx512:
      return cpu::kernel_table_avx512();
    case CpuIsa::kAvx512Vnni:
      return cpu::kernel_table_avx512_vnni();
    case CpuIsa::kAvx512Bf16:
      return cpu::kernel_table_avx512_bf16();
    default:
      return nullptr;
  }
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto:
      return "auto";
    case CpuIsa::kGeneric:
      return "generic";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx2Vnni:
      return "avx2-vnni";
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx512Vnni:
      return "avx512-vnni";
    case CpuIsa::kAvx512Bf16:
      return "avx512-bf16";
  }
  return "?";
}

namespace {

bool detect_isa(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto:
    case CpuIsa::kGeneric:
      return true;
    case CpuIsa::kAvx2:
      return has_avx2();
    case CpuIsa::kAvx2Vnni:
      return has_avx2_vnni();
    case CpuIsa::kAvx512:
      return has_avx512();
    case CpuIsa::kAvx512Vnni:
      return has_avx512_vnni();
    case CpuIsa::kAvx512Bf16:
      return has_avx512_bf16();
  }
  return false;
}

}  // namespace

// Detected once: CPUID (has_f16c, has_avx_vnni) traps to the hypervisor in a VM, microseconds per
// call, and the quantized matmuls look their table up on every call (4.6% of a Q8_0 decode step
// on a KVM guest, perf).
bool cpu_isa_supported(CpuIsa isa) {
  static const auto supported = [] {
    std::array<bool, 8> s{};
    for (CpuIsa i : kAllCpuIsas) s[static_cast<size_t>(i)] = detect_isa(i);
    s[static_cast<size_t>(CpuIsa::kAuto)] = true;
    return s;
  }();
  const auto i = static_cast<size_t>(isa);
  return i < supported.size() && supported[i];
}

CpuIsa cpu_best_isa() {
  static const CpuIsa best = [] {
    // The widest supported path, or the widest supported one up to LOCR_CPU_ISA's (the order is not
    // one of inclusion: avx2-vnni may be missing where avx512-vnni is not).
    const char* env = std::getenv("LOCR_CPU_ISA");
    const CpuIsa cap = env ? parse_isa(env) : CpuIsa::kAuto;
    CpuIsa b = CpuIsa::kGeneric;
    for (CpuIsa isa : kAllCpuIsas) {
      if (cap != CpuIsa::kAuto && static_cast<int>(isa) > static_cast<int>(cap)) break;
      if (cpu_isa_supported(isa)) b = isa;
    }
    return b;
  }();
  return best;
}

const cpu::KernelTable* cpu_kernel_table(CpuIsa isa) {
  if (isa == CpuIsa::kAuto) isa = cpu_best_isa();
  if (!cpu_isa_supported(isa))
    fail(ErrorKind::kInvalidArgument, "CPU kernel path '", cpu_isa_name(isa), "' is not supported by this CPU");
  return table_for(isa);
}

void cpu_exp_for_testing(CpuIsa isa, const float* x, float* y, int64_t n) { cpu_kernel_table(isa)->exp(x, y, n); }
void cpu_erf_for_testing(CpuIsa isa, const float* x, float* y, int64_t n) { cpu_kernel_table(isa)->erf(x, y, n); }

}  // namespace locr::kernels
