// bench_peak: the machine's arithmetic roofline, measured with register-only loops (no loads):
// vdpbf16ps (64 FLOP per instruction: 16 lanes x 2 products x multiply-add) and 512-bit FMA
// (32 FLOP). Run with --benchmark_filter and compare GEMM GFLOP/s against these.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>

#include "core/thread_pool.h"

namespace locr::bench {
float peak_loop_dpbf16(int64_t iters);
float peak_loop_fma512(int64_t iters);
}  // namespace locr::bench

namespace {

bool has_avx512_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

constexpr int64_t kIters = 1 << 20;

void BM_PeakDpbf16(benchmark::State& st) {
  if (!has_avx512_bf16()) {
    st.SkipWithError("no AVX512_BF16");
    return;
  }
  float sink = 0;
  for (auto _ : st) sink += locr::bench::peak_loop_dpbf16(kIters);
  benchmark::DoNotOptimize(sink);
  st.counters["FLOP/s"] = benchmark::Counter(static_cast<double>(kIters) * 16 * 64,
                                             benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_PeakFma512(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx512f")) {
    st.SkipWithError("no AVX-512");
    return;
  }
  float sink = 0;
  for (auto _ : st) sink += locr::bench::peak_loop_fma512(kIters);
  benchmark::DoNotOptimize(sink);
  st.counters["FLOP/s"] = benchmark::Counter(static_cast<double>(kIters) * 16 * 32,
                                             benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

}  // namespace

// Threads(n): n copies run concurrently; the FLOP/s counter is summed over them.
BENCHMARK(BM_PeakDpbf16)->DenseThreadRange(1, locr::ThreadPool::default_threads())->UseRealTime();
BENCHMARK(BM_PeakFma512)->DenseThreadRange(1, locr::ThreadPool::default_threads())->UseRealTime();
BENCHMARK_MAIN();
