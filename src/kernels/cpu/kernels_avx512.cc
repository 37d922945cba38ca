// AVX-512 kernels: kernels_impl.h over simd_avx512.h (16 floats per vector, 32 registers: GEMM tile
// 14 x 32 = 28 accumulators), plus the AVX512_BF16 kernels (vdpbf16ps: bf16 pairs multiplied and
// summed into f32 lanes) used by the "cpu-bf16" backend.
//
// Every function here may execute AVX-512 instructions: callers must have checked the CPU first
// (cpu_ops.cc), including the table getters themselves.
// GCC 12 warns about _mm512_undefined_* inside its own intrinsic headers (false positive).
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#define LOCR_CPU_NS avx512
#define LOCR_CPU_MR 14
#define LOCR_CPU_JR 8
#define LOCR_CPU_PV_IR 6
#define LOCR_CPU_PV_ND 4
#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/kernels_impl.h"
#include "kernels/cpu/q8_0_avx512.h"
#include "kernels/cpu/q4_k_avx512.h"
#include "kernels/cpu/q6_k_avx512.h"

#include <time.h>

namespace locr::kernels::cpu::avx512 {
namespace {

// ---- GEMM on bf16 pair panels: B [kc/2][kNR][2], A tile [kc/2][kMR] u32 pairs. ----

inline __m512bh as_bh(__m512i v) { return (__m512bh)v; }

template <int M>
void ukernel_dp(int64_t kc, const uint32_t* a, const uint16_t* b, float* c, int64_t ldc, int n, bool accumulate) {
  vf acc[M][kNV];
  LOCR_UNROLL for (int r = 0; r < M; ++r) LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = vzero();
  const int64_t kp_n = kc / 2;
  for (int64_t kp = 0; kp < kp_n; ++kp) {
    __m512bh bv[kNV];
    LOCR_UNROLL for (int v = 0; v < kNV; ++v) bv[v] = as_bh(_mm512_loadu_si512(b + (kp * kNR + v * W) * 2));
    LOCR_UNROLL for (int r = 0; r < M; ++r) {
      const __m512bh av = as_bh(_mm512_set1_epi32(static_cast<int>(a[kp * kMR + r])));
      LOCR_UNROLL for (int v = 0; v < kNV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  store_c<M>(acc, c, ldc, n, accumulate);
}

template <int M = kMR>
inline void dispatch_dp(int m, int64_t kc, const uint32_t* a, const uint16_t* b, float* c, int64_t ldc, int n,
                        bool acc) {
  if constexpr (M >= 1) {
    if (m == M) return ukernel_dp<M>(kc, a, b, c, ldc, n, acc);
    dispatch_dp<M - 1>(m, kc, a, b, c, ldc, n, acc);
  }
}

void k_gemm_tile_bf16(BFormat fmt, int64_t kc, const void* a, const void* b, float* c, int64_t ldc, int m, int n,
                      bool accumulate) {
  if (fmt == BFormat::kPairsBf16) {
    dispatch_dp(m, kc, static_cast<const uint32_t*>(a), static_cast<const uint16_t*>(b), c, ldc, n, accumulate);
  } else {
    k_gemm_tile_f32(fmt, kc, a, b, c, ldc, m, n, accumulate);
  }
}

void k_gemm_panels_bf16(BFormat fmt, int64_t kc, const void* a, const void* b, int64_t b_stride, int np, float* c,
                        int64_t ldc, int m, int n_last, bool accumulate) {
  if (fmt != BFormat::kPairsBf16) return k_gemm_panels_f32(fmt, kc, a, b, b_stride, np, c, ldc, m, n_last, accumulate);
  const auto* bp = static_cast<const uint16_t*>(b);
  for (int p = 0; p < np; ++p)
    dispatch_dp(m, kc, static_cast<const uint32_t*>(a), bp + p * b_stride, c + p * kNR, ldc, p + 1 == np ? n_last : kNR,
                accumulate);
}

// Converts kc (even) values of one row starting at xr to bf16 pairs and writes pair kp to
// d[kp * kMR]. Values at or past `valid` are zero.
inline void pack_row_pairs(const float* xr, int64_t kc, int64_t valid, uint32_t* d) {
  int64_t k = 0;
  alignas(64) uint32_t tmp[16];
  for (; k + 32 <= valid; k += 32) {
    const __m512 lo = _mm512_loadu_ps(xr + k), hi = _mm512_loadu_ps(xr + k + 16);
    _mm512_store_si512(tmp, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    uint32_t* dp = d + (k / 2) * kMR;
    LOCR_UNROLL for (int i = 0; i < 16; ++i) dp[i * kMR] = tmp[i];
  }
  for (; k < kc; k += 2) {
    const uint32_t lo = k < valid ? to_bf16_scalar(xr[k]) : 0u;
    const uint32_t hi = k + 1 < valid ? to_bf16_scalar(xr[k + 1]) : 0u;
    d[(k / 2) * kMR] = lo | (hi << 16);
  }
}

void k_pack_a_pairs(const float* x, int64_t ldx, int64_t m, int64_t k0, int64_t kc, int64_t k_total, uint32_t* dst) {
  const int64_t valid = min64(kc, k_total - k0);
  for (int64_t t = 0; t * kMR < m; ++t) {
    const int64_t rows = min64(kMR, m - t * kMR);
    uint32_t* d = dst + t * (kc / 2) * kMR;
    for (int64_t r = 0; r < rows; ++r) pack_row_pairs(x + (t * kMR + r) * ldx + k0, kc, valid, d + r);
  }
}

// ---- Calibration: is vdpbf16ps actually faster than FMA here? ----
// Some AVX512_BF16 parts issue one vdpbf16ps per ~2 cycles (half the FLOP rate of two 512-bit
// FMAs per cycle), others two per cycle. 16 independent chains, thread CPU time, best of 5.

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

__attribute__((noinline)) float chains_dot(int64_t iters) {
  vf acc[16];
  LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = vset1(static_cast<float>(j));
  const __m512bh x = as_bh(_mm512_set1_epi32(0x3f803f80)), y = as_bh(_mm512_set1_epi32(0x3a833a83));
  for (int64_t i = 0; i < iters; ++i) {
    LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], x, y);
  }
  vf s = acc[0];
  LOCR_UNROLL for (int j = 1; j < 16; ++j) s = vadd(s, acc[j]);
  return vhsum(s);
}

__attribute__((noinline)) float chains_fma(int64_t iters) {
  vf acc[16];
  LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = vset1(static_cast<float>(j));
  const vf x = vset1(1.0f), y = vset1(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
    LOCR_UNROLL for (int j = 0; j < 16; ++j) acc[j] = vfma(x, y, acc[j]);
  }
  vf s = acc[0];
  LOCR_UNROLL for (int j = 1; j < 16; ++j) s = vadd(s, acc[j]);
  return vhsum(s);
}

double k_dot_vs_fma_speed() {
  constexpr int64_t kIters = 4096;
  double best_dot = 1e30, best_fma = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = thread_seconds();
    sink = sink + chains_dot(kIters);
    double t1 = thread_seconds();
    sink = sink + chains_fma(kIters);
    double t2 = thread_seconds();
    best_dot = t1 - t0 < best_dot ? t1 - t0 : best_dot;
    best_fma = t2 - t1 < best_fma ? t2 - t1 : best_fma;
  }
  // vdpbf16ps does 64 FLOP per instruction, a 512-bit FMA 32.
  const double dot_rate = 64.0 / (best_dot > 0 ? best_dot : 1e-12);
  const double fma_rate = 32.0 / (best_fma > 0 ? best_fma : 1e-12);
  return dot_rate / fma_rate;
}

}  // namespace
}  // namespace locr::kernels::cpu::avx512

namespace locr::kernels::cpu {

const KernelTable* kernel_table_avx512() {
  static const KernelTable t = [] {
    KernelTable k = avx512::base_table("avx512");
    k.gemm_q8_0 = q8_0_gemm_zmm;
    k.gemm_q4_k = q4_k_gemm_zmm;
    k.gemm_q6_k = q6_k_gemm_zmm;
    return k;
  }();
  return &t;
}

const KernelTable* kernel_table_avx512_bf16() {
  static const KernelTable t = [] {
    KernelTable k = *kernel_table_avx512_vnni();  // its quantized kernels (every AVX512_BF16 CPU has VNNI)
    k.isa = "avx512-bf16";
    k.bf16_dot = true;
    k.pack_a_pairs = avx512::k_pack_a_pairs;
    k.gemm_tile = avx512::k_gemm_tile_bf16;
    k.gemm_panels = avx512::k_gemm_panels_bf16;
    k.dot_vs_fma_speed = avx512::k_dot_vs_fma_speed;
    return k;
  }();
  return &t;
}

}  // namespace locr::kernels::cpu
