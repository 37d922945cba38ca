// AVX-512 vector primitives for the per-ISA kernel templates (kernels_impl.h).
//
// Include ONLY from kernels_avx512.cc, inside its namespace: everything here has internal linkage
// so that no AVX-512 code can leak into baseline translation units through the linker.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace locr::kernels::cpu::LOCR_CPU_NS {
namespace {

constexpr int W = 16;  // floats per vector
using vf = __m512;
using vmask = __mmask16;

inline vf vzero() { return _mm512_setzero_ps(); }
inline vf vset1(float a) { return _mm512_set1_ps(a); }
inline vf vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
inline vmask vfirst(int n) { return static_cast<vmask>(n >= W ? 0xffffu : ((1u << n) - 1u)); }
inline vf vload_n(const float* p, int n) { return _mm512_maskz_loadu_ps(vfirst(n), p); }
inline void vstore_n(float* p, vf v, int n) { _mm512_mask_storeu_ps(p, vfirst(n), v); }
inline vf vload_bf16(const uint16_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p)), 16));
}
inline vf vload_bf16_n(const uint16_t* p, int n) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(vfirst(n), p)), 16));
}
// f32 -> bf16 as core/dtype.h's f32_to_bf16: nearest, ties to even; a NaN keeps its top bits, made quiet.
inline __m256i vto_bf16(vf a) {
  const __m512i u = _mm512_castps_si512(a);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
inline void vstore_bf16(uint16_t* p, vf a) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), vto_bf16(a)); }
inline void vstore_bf16_n(uint16_t* p, vf a, int n) { _mm256_mask_storeu_epi16(p, vfirst(n), vto_bf16(a)); }
inline vf vload_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }
inline vf vload_f16_n(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(vfirst(n), p)); }
// FP8 E4M3 (core/fp8.h) -> f32 as simd_avx2.h explains, on 16 lanes: vload_fp8_lo gives the
// value times 2^-8 (NaN codes not special), vload_fp8 the exact value.
inline __m256i fp8_to_f16_bits(__m128i bytes) {  // 16 bytes
  const __m256i w = _mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8);
  return _mm256_and_si256(_mm256_srai_epi16(w, 1), _mm256_set1_epi16(static_cast<short>(0xbf80)));
}
// W signed bytes as f32 (exact).
inline vf vload_i8(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline vf vload_fp8_lo(const uint8_t* p) {
  return _mm512_cvtph_ps(fp8_to_f16_bits(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline vf vload_fp8_lo_n(const uint8_t* p, int n) { return _mm512_cvtph_ps(fp8_to_f16_bits(_mm_maskz_loadu_epi8(vfirst(n), p))); }
inline vf vload_fp8_bits(__m128i bytes) {
  const __m256i nan = _mm256_cmpeq_epi16(_mm256_cvtepu8_epi16(_mm_and_si128(bytes, _mm_set1_epi8(0x7f))),
                                         _mm256_set1_epi16(0x7f));
  const __m256i h = _mm256_or_si256(fp8_to_f16_bits(bytes), _mm256_and_si256(nan, _mm256_set1_epi16(0x7e00)));
  return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
}
inline vf vload_fp8(const uint8_t* p) { return vload_fp8_bits(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline vf vload_fp8_n(const uint8_t* p, int n) { return vload_fp8_bits(_mm_maskz_loadu_epi8(vfirst(n), p)); }
inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf vfnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a*b
inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
inline vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }
inline vf vmax(vf a, vf b) { return _mm512_max_ps(a, b); }
inline vf vmin(vf a, vf b) { return _mm512_min_ps(a, b); }
inline vf vabs(vf a) { return _mm512_abs_ps(a); }
inline vf vsqrt(vf a) { return _mm512_sqrt_ps(a); }
inline float vhsum(vf a) { return _mm512_reduce_add_ps(a); }
inline float vhmax(vf a) { return _mm512_reduce_max_ps(a); }
inline vf vround(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// a * 2^n for integral n in [-126, 127].
inline vf vscale2(vf a, vf n) { return _mm512_scalef_ps(a, n); }
inline vmask vlt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline vmask vge(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
inline vmask veq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
inline vf vblend(vmask m, vf a, vf b) { return _mm512_mask_blend_ps(m, a, b); }  // m ? b : a
inline vf vcopysign(vf mag, vf sgn) {
  const __m512i s = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(mag), _mm512_castps_si512(sgn), s, 0xd8));  // mask ? sgn : mag, bitwise
}
inline vf viota() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
// r[i] lane j -> r[j] lane i, for 16 vectors of 16 32-bit lanes: pairs within 128-bit lanes,
// then quads, then the 128-bit lanes across four vectors.
inline void vtranspose_epi32(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // r[4g + c], 128-bit lane k: column 4k + c of rows 4g .. 4g + 3.
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    r[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    r[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    r[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i t0 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88), t1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xdd);
    const __m512i t2 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88);
    const __m512i t3 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xdd);
    t[c] = _mm512_shuffle_i32x4(t0, t2, 0x88);
    t[8 + c] = _mm512_shuffle_i32x4(t0, t2, 0xdd);
    t[4 + c] = _mm512_shuffle_i32x4(t1, t3, 0x88);
    t[12 + c] = _mm512_shuffle_i32x4(t1, t3, 0xdd);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}
inline void vtranspose(vf (&r)[W]) {
  __m512i x[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm512_castps_si512(r[i]);
  vtranspose_epi32(x);
  for (int i = 0; i < 16; ++i) r[i] = _mm512_castsi512_ps(x[i]);
}
// 2W BF16 values as W pairs: even = p[0], p[2], ..., odd = p[1], p[3], ... (a shift and a mask of
// the 32-bit lanes: half the instructions of two vload_bf16).
inline void vload_bf16_pairs(const uint16_t* p, vf& even, vf& odd) {
  const __m512i x = _mm512_loadu_si512(p);
  even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
// The inverse: lo = even[0], odd[0], even[1], ..., hi = even[W/2], odd[W/2], ...
inline void vinterleave(vf even, vf odd, vf& lo, vf& hi) {
  lo = _mm512_permutex2var_ps(even, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), odd);
  hi = _mm512_permutex2var_ps(even, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), odd);
}
// Round each lane to the nearest bf16 value (ties to even), kept as f32. NaN inputs are not used.
inline vf vround_bf16(vf a) {
  __m512i u = _mm512_castps_si512(a);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  return _mm512_castsi512_ps(_mm512_and_si512(u, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

}  // namespace
}  // namespace locr::kernels::cpu::LOCR_CPU_NS
