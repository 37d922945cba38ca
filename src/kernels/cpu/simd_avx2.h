// AVX2 + FMA + F16C vector primitives for the per-ISA kernel templates (kernels_impl.h).
//
// Include ONLY from kernels_avx2.cc, inside its namespace (internal linkage, see simd_avx512.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

constexpr int W = 8;
using vf = __m256;
using vmask = __m256;

inline vf vzero() { return _mm256_setzero_ps(); }
inline vf vset1(float a) { return _mm256_set1_ps(a); }
inline vf vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
inline __m256i vfirst(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline vf vload_n(const float* p, int n) { return _mm256_maskload_ps(p, vfirst(n)); }
inline void vstore_n(float* p, vf v, int n) { _mm256_maskstore_ps(p, vfirst(n), v); }
inline vf vload_bf16(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)), 16));
}
inline vf vload_bf16_n(const uint16_t* p, int n) {
  uint16_t tmp[W] = {0};
  std::memcpy(tmp, p, sizeof(uint16_t) * (n < W ? n : W));
  return vload_bf16(tmp);
}
// f32 -> bf16 as core/dtype.h's f32_to_bf16: nearest, ties to even; a NaN keeps its top bits, made quiet.
inline __m128i vto_bf16(vf a) {
  const __m256i u = _mm256_castps_si256(a);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x400000)), nan);
  const __m256i h = _mm256_srli_epi32(r, 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
inline void vstore_bf16(uint16_t* p, vf a) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), vto_bf16(a)); }
inline void vstore_bf16_n(uint16_t* p, vf a, int n) {
  alignas(16) uint16_t tmp[W];
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), vto_bf16(a));
  std::memcpy(p, tmp, sizeof(uint16_t) * (n < W ? n : W));
}
inline vf vload_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
inline vf vload_f16_n(const uint16_t* p, int n) {
  uint16_t tmp[W] = {0};
  std::memcpy(tmp, p, sizeof(uint16_t) * (n < W ? n : W));
  return vload_f16(tmp);
}
// FP8 E4M3 (core/fp8.h) -> f32. The byte S.EEEE.MMM placed as the f16 S.0EEEE.MMM0000000 is the
// value times 2^-8, subnormals included (f16's exponent-0 step 2^-24 * 2^7 = E4M3's 2^-9 * 2^-8):
// the byte in the high half of a 16-bit lane, shifted right by one arithmetically (the sign
// fills bit 14) and bit 14 cleared, then one F16C conversion. vload_fp8_lo stops there (the
// attention kernels fold the 2^8 into their scales; a NaN code reads as 480 * 2^-8, which never
// matters there: a NaN key or value makes its head's scale NaN); vload_fp8 is exact, NaN too.
inline __m128i fp8_to_f16_bits(__m128i bytes) {  // the low 8 bytes
  const __m128i w = _mm_unpacklo_epi8(_mm_setzero_si128(), bytes);
  return _mm_and_si128(_mm_srai_epi16(w, 1), _mm_set1_epi16(static_cast<short>(0xbf80)));
}
// W signed bytes as f32 (exact).
inline vf vload_i8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline vf vload_fp8_lo(const uint8_t* p) {
  return _mm256_cvtph_ps(fp8_to_f16_bits(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline vf vload_fp8_lo_n(const uint8_t* p, int n) {
  uint8_t tmp[W] = {0};
  std::memcpy(tmp, p, n < W ? n : W);
  return vload_fp8_lo(tmp);
}
inline vf vload_fp8(const uint8_t* p) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i nan = _mm_cmpeq_epi16(_mm_cvtepu8_epi16(_mm_and_si128(bytes, _mm_set1_epi8(0x7f))), _mm_set1_epi16(0x7f));
  const __m128i h = _mm_or_si128(fp8_to_f16_bits(bytes), _mm_and_si128(nan, _mm_set1_epi16(0x7e00)));
  return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
}
inline vf vload_fp8_n(const uint8_t* p, int n) {
  uint8_t tmp[W] = {0};
  std::memcpy(tmp, p, n < W ? n : W);
  return vload_fp8(tmp);
}
inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf vfnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
inline vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
inline vf vmax(vf a, vf b) { return _mm256_max_ps(a, b); }
inline vf vmin(vf a, vf b) { return _mm256_min_ps(a, b); }
inline vf vabs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
inline vf vsqrt(vf a) { return _mm256_sqrt_ps(a); }
inline float vhsum(vf a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float vhmax(vf a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline vf vround(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline vf vscale2(vf a, vf n) {
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(a, _mm256_castsi256_ps(e));
}
inline vmask vlt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline vmask vge(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
inline vmask veq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
inline vf vblend(vmask m, vf a, vf b) { return _mm256_blendv_ps(a, b, m); }
inline vf vcopysign(vf mag, vf sgn) {
  const vf s = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sgn));
}
inline vf viota() { return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7); }
// r[i] lane j -> r[j] lane i (8 x 8).
inline void vtranspose(vf (&r)[W]) {
  vf t[W], u[W];
  for (int i = 0; i < W; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < W; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}
// 2W BF16 values as W pairs: even = p[0], p[2], ..., odd = p[1], p[3], ... (a shift and a mask of
// the 32-bit lanes: half the instructions of two vload_bf16).
inline void vload_bf16_pairs(const uint16_t* p, vf& even, vf& odd) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  even = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  odd = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}
// The inverse: lo = even[0], odd[0], even[1], ..., hi = even[W/2], odd[W/2], ...
inline void vinterleave(vf even, vf odd, vf& lo, vf& hi) {
  const vf l = _mm256_unpacklo_ps(even, odd), h = _mm256_unpackhi_ps(even, odd);
  lo = _mm256_permute2f128_ps(l, h, 0x20);
  hi = _mm256_permute2f128_ps(l, h, 0x31);
}
inline vf vround_bf16(vf a) {
  __m256i u = _mm256_castps_si256(a);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  u = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  return _mm256_castsi256_ps(_mm256_and_si256(u, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
