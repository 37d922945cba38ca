// The AVX2 machines' arithmetic roofline: a register-only loop of 256-bit FMAs (16 FLOP per
// instruction: 8 lanes x multiply-add), 12 independent accumulators (AVX2 has 16 ymm
// registers: 16 accumulators and the two operands would spill). What the cpu-bf16 backend's AVX2 path (BF16 weights widened to f32, FMA) is measured against.
// Compiled with AVX2 + FMA flags; callers check the CPU first.
#include <immintrin.h>

#include <cstdint>

namespace locr::bench {

// Returns a value depending on every accumulator so the loop cannot be removed.
float peak_loop_fma256(int64_t iters) {
  __m256 acc[12];
#pragma GCC unroll 12
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));  // distinct, so no CSE
  const __m256 x = _mm256_set1_ps(1.0f), y = _mm256_set1_ps(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(x, y, acc[j]);
  }
  __m256 s = acc[0];
#pragma GCC unroll 12
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, acc[j]);
  alignas(32) float v[8];
  _mm256_store_ps(v, s);
  return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

// The sum of words [b, e) (b and e multiples of 32) in 32-byte loads, four independent chains.
uint64_t stream_sum256(const uint64_t* p, size_t b, size_t e) {
  __m256i a[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (size_t i = b; i < e; i += 32) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      a[j % 4] = _mm256_add_epi64(a[j % 4], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4 * j)));
  }
  alignas(32) uint64_t v[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), _mm256_add_epi64(_mm256_add_epi64(a[0], a[1]), _mm256_add_epi64(a[2], a[3])));
  return v[0] + v[1] + v[2] + v[3];
}

}  // namespace locr::bench
