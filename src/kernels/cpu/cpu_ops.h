// The fast CPU backends: "cpu-f32", "cpu-bf16" and "cpu" (= cpu-bf16), see ops.h.
//
// One Ops implementation (cpu_ops.cc) drives per-ISA leaf kernels (kernel_table.h) chosen once at
// construction: AVX-512 with AVX512_BF16 (and VNNI), AVX-512 with AVX512_VNNI, AVX-512, AVX2+FMA
// with AVX-VNNI, AVX2+FMA, or portable C++. Tests and benchmarks may force a path with
// make_cpu_ops(precision, isa); the environment variable LOCR_CPU_ISA (generic, avx2, avx2-vnni,
// avx512, avx512-vnni, avx512-bf16) caps the automatic choice.
//
// Call prepare() on every matmul weight once at load: it packs the weight into the microkernel's
// panel layout (bf16 in cpu-bf16, and for BF16 weights in cpu-f32 too), after which matmul never
// reads the original. matmul on an unprepared weight still works but packs a temporary copy on
// every call. An Ops instance may be used by one thread at a time (scratch is per calling thread).
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/ops.h"

namespace locr::kernels {

enum class CpuPrecision : uint8_t {
  kF32,   // FP32 math everywhere; bf16/f16 weights upconverted exactly
  kBF16,  // matmul/attention products with bf16 inputs and f32 accumulation, the rest f32
};

// The kernel paths, narrowest first. The VNNI paths differ from the one below them only in the
// quantized matmuls (int8 dot products by vpdpbusd / vpdpwssd; the same bits, kernel_table.h);
// avx512-bf16 includes avx512-vnni's. avx2-vnni is AVX-VNNI (the VEX encoding, 256-bit: Alder Lake,
// Zen 5), which some AVX-512 VNNI CPUs lack (Cascade Lake, Ice Lake, Zen 4).
enum class CpuIsa : uint8_t { kAuto, kGeneric, kAvx2, kAvx2Vnni, kAvx512, kAvx512Vnni, kAvx512Bf16 };

// Every path above but kAuto, narrowest first (the tests instantiate each; those this CPU lacks skip).
inline constexpr CpuIsa kAllCpuIsas[] = {CpuIsa::kGeneric, CpuIsa::kAvx2,       CpuIsa::kAvx2Vnni,
                                         CpuIsa::kAvx512,  CpuIsa::kAvx512Vnni, CpuIsa::kAvx512Bf16};

const char* cpu_isa_name(CpuIsa isa);
// Whether this machine (CPU and OS) can run `isa`. kAuto and kGeneric are always supported.
bool cpu_isa_supported(CpuIsa isa);
// The best supported path, capped by LOCR_CPU_ISA if set (the widest supported path not after the
// named one in kAllCpuIsas' order). Detected once.
CpuIsa cpu_best_isa();

// Fails with ErrorKind::kInvalidArgument if `isa` is not supported here.
std::unique_ptr<Ops> make_cpu_ops(CpuPrecision precision, CpuIsa isa = CpuIsa::kAuto);

namespace cpu {
struct KernelTable;
}
// The leaf kernels of `isa` (kAuto: the best path), failing as make_cpu_ops does when this CPU
// lacks it; for the kernel files beside cpu_ops.cc (quant_q8_0.cc).
const cpu::KernelTable* cpu_kernel_table(CpuIsa isa);

// Test hooks: the vectorised math of one ISA path, applied to n floats.
void cpu_exp_for_testing(CpuIsa isa, const float* x, float* y, int64_t n);
void cpu_erf_for_testing(CpuIsa isa, const float* x, float* y, int64_t n);

}  // namespace locr::kernels
