// AVX2 + FMA + F16C kernels: kernels_impl.h over simd_avx2.h (8 floats per vector, 16 registers:
// GEMM tile 6 x 16, attention QK^T 6 keys x 16 queries, PV 6 queries x 16 columns).
#define LOCR_CPU_NS avx2
#define LOCR_CPU_MR 6
#define LOCR_CPU_JR 6
#define LOCR_CPU_PV_IR 6
#define LOCR_CPU_PV_ND 2
#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/kernels_impl.h"
#include "kernels/cpu/q8_0_block.h"

#include <immintrin.h>

namespace locr::kernels::cpu {

namespace {

// The exact int32 sum of 32 int8 products: widened to int16 (vpmaddubsw would saturate, and its
// sign trick breaks on -128), multiplied and paired by vpmaddwd.
int32_t isum32_avx2(const uint8_t* a, const uint8_t* b) {
  const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  const __m256i lo = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(va)),
                                       _mm256_cvtepi8_epi16(_mm256_castsi256_si128(vb)));
  const __m256i hi = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(va, 1)),
                                       _mm256_cvtepi8_epi16(_mm256_extracti128_si256(vb, 1)));
  const __m256i p = _mm256_add_epi32(lo, hi);
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

float dot_q8_0_avx2(const void* a, const void* b, int64_t n_blocks) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  float acc = 0;
  for (int64_t k = 0; k < n_blocks; ++k, pa += kQ8BlockBytes, pb += kQ8BlockBytes)
    acc = q8_0_accumulate(acc, pa, pb, isum32_avx2(pa + 2, pb + 2));
  return acc;
}

}  // namespace

const KernelTable* kernel_table_avx2() {
  static const KernelTable t = [] {
    KernelTable k = avx2::base_table("avx2");
    k.dot_q8_0 = dot_q8_0_avx2;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
