// Leaf kernels written once against the vector primitives of simd_<isa>.h and compiled once per
// ISA (kernels_generic.cc, kernels_avx2.cc, kernels_avx512.cc), each inside its own namespace
// LOCR_CPU_NS with internal linkage. No std:: containers or std::function here (see
// kernel_table.h for why); threading and blocking live in cpu_ops.cc. The kernels live by concern
// in kernels_elementwise.h, kernels_gemm.h, kernels_attention.h, kernels_attention_decode.h,
// kernels_qwen35.h and kernels_screen.h; this header gathers them and fills the table entries
// every ISA shares.
//
// Before including, a TU defines LOCR_CPU_NS and the tile constants LOCR_CPU_MR (GEMM rows per
// microkernel), LOCR_CPU_JR (keys per QK^T microkernel), LOCR_CPU_PV_IR / LOCR_CPU_PV_ND (query
// rows x vectors of head_dim per PV microkernel; LOCR_CPU_PV_DR > 0 instead: dims per PV microkernel
// on O transposed), and includes its simd_<isa>.h.
#pragma once

#include "kernels/cpu/kernels_common.h"
#include "kernels/cpu/kernels_elementwise.h"
#include "kernels/cpu/kernels_gemm.h"
#include "kernels/cpu/kernels_attention.h"
#include "kernels/cpu/kernels_attention_decode.h"
#include "kernels/cpu/kernels_qwen35.h"
#include "kernels/cpu/kernels_screen.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

// The table entries shared by every ISA.
inline KernelTable base_table(const char* isa) {
  KernelTable t{};
  t.isa = isa;
  t.w = W;
  t.mr = kMR;
  t.nr = kNR;
  t.attn_bq = kBQ;
  t.bf16_dot = false;
  t.pack_a_f32 = k_pack_a_f32;
  t.pack_a_pairs = nullptr;
  t.gemm_tile = k_gemm_tile_f32;
  t.gemm_panels = k_gemm_panels_f32;
  t.rms_norm_rows = k_rms_norm_rows;
  t.rope_rows = k_rope_rows;
  t.silu_mul = k_silu_mul;
  t.gelu = k_gelu;
  t.add = k_add;
  t.exp = k_exp;
  t.exp2_softmax = k_exp2_softmax;
  t.erf = k_erf;
  t.bf16_to_f32 = k_bf16_to_f32;
  t.f16_to_f32 = k_f16_to_f32;
  t.fp8_to_f32 = k_fp8_to_f32;
  t.f32_to_bf16_round = k_f32_to_bf16_round;
  t.layer_norm_rows = k_layer_norm_rows;
  t.gelu_tanh = k_gelu_tanh;
  t.sigmoid_mul = k_sigmoid_mul;
  t.conv1d_silu_rows = k_conv1d_silu_rows;
  t.gdn_cols = kGdnNV * W;
  t.gdn_prep = k_gdn_prep;
  t.gdn_chunk = k_gdn_chunk;
  t.attn_tile = k_attn_tile;
  t.attn_tile_bf16 = nullptr;
  t.attn_pack_bf16 = nullptr;
  t.attn_chunk = k_attn_chunk;
  t.attn_combine = k_attn_combine;
  t.dot_vs_fma_speed = nullptr;
  t.screen_rows = k_screen_rows;
  return t;
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
