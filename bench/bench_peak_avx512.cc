// Register-only loops: 16 independent accumulators, no memory traffic (every loop is fully
// unrolled so the accumulators stay in registers; check with objdump if the numbers look low). Compiled with AVX-512
// flags; callers check the CPU first.
// GCC 12 warns about _mm512_undefined_* inside its own intrinsic headers (false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

namespace locr::bench {

// Returns a value depending on every accumulator so the loop cannot be removed.
float peak_loop_dpbf16(int64_t iters) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));  // distinct, so no CSE
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // (1.0, 1.0)
  const __m512bh y = (__m512bh)_mm512_set1_epi32(0x3a833a83);  // (~1e-3, ~1e-3): no denormals, sums stay finite
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], x, y);
  }
  __m512 s = acc[0];
#pragma GCC unroll 16
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

float peak_loop_fma512(int64_t iters) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));  // distinct, so no CSE
  const __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(x, y, acc[j]);
  }
  __m512 s = acc[0];
#pragma GCC unroll 16
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

// The sum of words [b, e) (b and e multiples of 32) in 64-byte loads, four independent chains.
uint64_t stream_sum512(const uint64_t* p, size_t b, size_t e) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = b; i < e; i += 32) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 24));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
}

}  // namespace locr::bench
