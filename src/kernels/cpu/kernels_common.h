// What every per-ISA leaf kernel header shares (kernels_elementwise.h, kernels_gemm.h,
// kernels_attention.h, kernels_attention_decode.h, gathered by kernels_impl.h): the tile
// constants of the including TU's ISA and scalar helpers, in that TU's namespace LOCR_CPU_NS with
// internal linkage.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/kernel_table.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

#define LOCR_UNROLL _Pragma("GCC unroll 32")

constexpr int kNV = 2;          // vectors per GEMM microkernel row
constexpr int kNR = kNV * W;    // GEMM panel width (columns of W)
constexpr int kMR = LOCR_CPU_MR;
#ifndef LOCR_CPU_ATTN_QV
#define LOCR_CPU_ATTN_QV 2
#endif
constexpr int kAttnQV = LOCR_CPU_ATTN_QV;  // f32 attention tile: query vectors per tile
constexpr int kBQ = kAttnQV * W;           // f32 attention tile: query rows per tile
constexpr int kBQdp = kNV * W;             // the vdpbf16ps attention tile's query rows (two vectors)
#ifndef LOCR_CPU_ATTN_BKV
#define LOCR_CPU_ATTN_BKV 64
#endif
constexpr int kBKV = LOCR_CPU_ATTN_BKV;    // attention: keys per block
constexpr int kJR = LOCR_CPU_JR;
constexpr int kPvIR = LOCR_CPU_PV_IR;
constexpr int kPvND = LOCR_CPU_PV_ND;
#ifndef LOCR_CPU_PV_DR
#define LOCR_CPU_PV_DR 0
#endif
constexpr int kPvDR = LOCR_CPU_PV_DR;  // > 0: PV on O transposed, kPvDR dims x kAttnQV query vectors
constexpr float kLog2e = 1.44269504088896341f;

inline float round_bf16_scalar(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t to_bf16_scalar(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
