// Portable "vector" primitives (plain arrays of W floats) for the per-ISA kernel templates
// (kernels_impl.h). Compiled with baseline flags; the compiler auto-vectorises what it can.
//
// Include ONLY from kernels_generic.cc, inside its namespace.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/dtype.h"
#include "core/fp8.h"

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

constexpr int W = 8;
struct vf {
  float v[W];
};
struct vmask {
  bool m[W];
};

#define LOCR_VLOOP for (int i_ = 0; i_ < W; ++i_)
inline vf vzero() { vf r; LOCR_VLOOP r.v[i_] = 0.0f; return r; }
inline vf vset1(float a) { vf r; LOCR_VLOOP r.v[i_] = a; return r; }
inline vf vload(const float* p) { vf r; std::memcpy(r.v, p, sizeof(r.v)); return r; }
inline void vstore(float* p, vf v) { std::memcpy(p, v.v, sizeof(v.v)); }
inline vf vload_n(const float* p, int n) { vf r; LOCR_VLOOP r.v[i_] = i_ < n ? p[i_] : 0.0f; return r; }
inline void vstore_n(float* p, vf v, int n) { for (int i = 0; i < n && i < W; ++i) p[i] = v.v[i]; }
inline vf vload_bf16(const uint16_t* p) { vf r; LOCR_VLOOP r.v[i_] = bf16_to_f32(p[i_]); return r; }
inline vf vload_bf16_n(const uint16_t* p, int n) {
  vf r; LOCR_VLOOP r.v[i_] = i_ < n ? bf16_to_f32(p[i_]) : 0.0f; return r;
}
inline void vstore_bf16(uint16_t* p, vf a) { LOCR_VLOOP p[i_] = f32_to_bf16(a.v[i_]); }
inline void vstore_bf16_n(uint16_t* p, vf a, int n) { for (int i = 0; i < n && i < W; ++i) p[i] = f32_to_bf16(a.v[i]); }
inline vf vload_fp8(const uint8_t* p) { vf r; LOCR_VLOOP r.v[i_] = fp8_e4m3_to_f32(p[i_]); return r; }
inline vf vload_fp8_n(const uint8_t* p, int n) {
  vf r; LOCR_VLOOP r.v[i_] = i_ < n ? fp8_e4m3_to_f32(p[i_]) : 0.0f; return r;
}
// The value times 2^-8 (exact), as the vector paths' attention loads give it.
inline vf vload_i8(const int8_t* p) { vf r; LOCR_VLOOP r.v[i_] = static_cast<float>(p[i_]); return r; }
inline vf vload_fp8_lo(const uint8_t* p) { vf r; LOCR_VLOOP r.v[i_] = fp8_e4m3_to_f32(p[i_]) * 0.00390625f; return r; }
inline vf vload_fp8_lo_n(const uint8_t* p, int n) {
  vf r; LOCR_VLOOP r.v[i_] = i_ < n ? fp8_e4m3_to_f32(p[i_]) * 0.00390625f : 0.0f; return r;
}
inline vf vload_f16(const uint16_t* p) { vf r; LOCR_VLOOP r.v[i_] = f16_to_f32(p[i_]); return r; }
inline vf vload_f16_n(const uint16_t* p, int n) {
  vf r; LOCR_VLOOP r.v[i_] = i_ < n ? f16_to_f32(p[i_]) : 0.0f; return r;
}
inline vf vfma(vf a, vf b, vf c) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] * b.v[i_] + c.v[i_]; return r; }
inline vf vfnma(vf a, vf b, vf c) { vf r; LOCR_VLOOP r.v[i_] = c.v[i_] - a.v[i_] * b.v[i_]; return r; }
inline vf vadd(vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] + b.v[i_]; return r; }
inline vf vsub(vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] - b.v[i_]; return r; }
inline vf vmul(vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] * b.v[i_]; return r; }
inline vf vdiv(vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] / b.v[i_]; return r; }
inline vf vmax(vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] > b.v[i_] ? a.v[i_] : b.v[i_]; return r; }
inline vf vmin(vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = a.v[i_] < b.v[i_] ? a.v[i_] : b.v[i_]; return r; }
inline vf vabs(vf a) { vf r; LOCR_VLOOP r.v[i_] = std::fabs(a.v[i_]); return r; }
inline vf vsqrt(vf a) { vf r; LOCR_VLOOP r.v[i_] = std::sqrt(a.v[i_]); return r; }
inline float vhsum(vf a) { float s = 0; LOCR_VLOOP s += a.v[i_]; return s; }
inline float vhmax(vf a) { float s = a.v[0]; LOCR_VLOOP s = a.v[i_] > s ? a.v[i_] : s; return s; }
inline vf vround(vf a) { vf r; LOCR_VLOOP r.v[i_] = std::nearbyint(a.v[i_]); return r; }
inline vf vscale2(vf a, vf n) { vf r; LOCR_VLOOP r.v[i_] = std::ldexp(a.v[i_], static_cast<int>(n.v[i_])); return r; }
inline vmask vlt(vf a, vf b) { vmask m; LOCR_VLOOP m.m[i_] = a.v[i_] < b.v[i_]; return m; }
inline vmask vge(vf a, vf b) { vmask m; LOCR_VLOOP m.m[i_] = a.v[i_] >= b.v[i_]; return m; }
inline vmask veq(vf a, vf b) { vmask m; LOCR_VLOOP m.m[i_] = a.v[i_] == b.v[i_]; return m; }
inline vf vblend(vmask m, vf a, vf b) { vf r; LOCR_VLOOP r.v[i_] = m.m[i_] ? b.v[i_] : a.v[i_]; return r; }
inline vf vcopysign(vf mag, vf sgn) { vf r; LOCR_VLOOP r.v[i_] = std::copysign(mag.v[i_], sgn.v[i_]); return r; }
inline vf viota() { vf r; LOCR_VLOOP r.v[i_] = static_cast<float>(i_); return r; }
// r[i] lane j -> r[j] lane i.
inline void vtranspose(vf (&r)[W]) {
  for (int i = 0; i < W; ++i)
    for (int j = i + 1; j < W; ++j) std::swap(r[i].v[j], r[j].v[i]);
}
// 2W BF16 values as W pairs: even = p[0], p[2], ..., odd = p[1], p[3], ...; and the inverse.
inline void vload_bf16_pairs(const uint16_t* p, vf& even, vf& odd) {
  LOCR_VLOOP {
    even.v[i_] = bf16_to_f32(p[2 * i_]);
    odd.v[i_] = bf16_to_f32(p[2 * i_ + 1]);
  }
}
inline void vinterleave(vf even, vf odd, vf& lo, vf& hi) {
  vf t[2];
  LOCR_VLOOP {
    t[(2 * i_) / W].v[(2 * i_) % W] = even.v[i_];
    t[(2 * i_ + 1) / W].v[(2 * i_ + 1) % W] = odd.v[i_];
  }
  lo = t[0];
  hi = t[1];
}
inline vf vround_bf16(vf a) { vf r; LOCR_VLOOP r.v[i_] = bf16_to_f32(f32_to_bf16(a.v[i_])); return r; }
#undef LOCR_VLOOP

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
