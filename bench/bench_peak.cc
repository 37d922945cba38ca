// bench_peak: the machine's rooflines. Arithmetic, measured with register-only loops (no loads):
// vdpbf16ps (64 FLOP per instruction: 16 lanes x 2 products x multiply-add), 512-bit FMA
// (32 FLOP) and 256-bit FMA (16 FLOP, the AVX2 machines' roofline); compare GEMM GFLOP/s against these. Memory: the DRAM read rate of 1-N threads
// streaming a buffer far larger than the caches, on 4 KiB and on huge pages; compare a batch-1
// decode step's weight GB/s (which reads every weight once) against it.
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/heap.h"
#include "core/thread_pool.h"

namespace locr::bench {
float peak_loop_dpbf16(int64_t iters);
float peak_loop_fma512(int64_t iters);
float peak_loop_fma256(int64_t iters);
uint64_t stream_sum512(const uint64_t* p, size_t b, size_t e);
uint64_t stream_sum256(const uint64_t* p, size_t b, size_t e);
}  // namespace locr::bench

namespace {

bool has_avx512_bf16() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"); }

constexpr int64_t kIters = 1 << 20;

// Runs `loop` on `threads` std::threads at once per benchmark iteration (not Google Benchmark's
// Threads(), whose per-thread timing and counter summation are easy to misread) and reports the
// total FLOP per wall second.
template <float (*Loop)(int64_t)>
void run_peak(benchmark::State& st, double flop_per_loop) {
  const int threads = static_cast<int>(st.range(0));
  std::vector<float> sink(threads);
  timespec c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  for (auto _ : st) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { sink[t] += Loop(kIters); });
    for (auto& t : ts) t.join();
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  const double cpu_s = static_cast<double>(c1.tv_sec - c0.tv_sec) + 1e-9 * static_cast<double>(c1.tv_nsec - c0.tv_nsec);
  benchmark::DoNotOptimize(sink.data());
  // Per CPU-second, i.e. per core actually obtained: the roofline on a shared machine.
  st.counters["FLOP/cpu_s"] = benchmark::Counter(flop_per_loop * kIters * threads * static_cast<double>(st.iterations()) / cpu_s,
                                                 benchmark::Counter::kDefaults, benchmark::Counter::kIs1000);
  st.counters["FLOP/s"] = benchmark::Counter(flop_per_loop * kIters * threads,
                                             benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_PeakDpbf16(benchmark::State& st) {
  if (!has_avx512_bf16()) {
    st.SkipWithError("no AVX512_BF16");
    return;
  }
  run_peak<locr::bench::peak_loop_dpbf16>(st, 16 * 64);  // 16 instructions x 64 FLOP
}

void BM_PeakFma512(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx512f")) {
    st.SkipWithError("no AVX-512");
    return;
  }
  run_peak<locr::bench::peak_loop_fma512>(st, 16 * 32);  // 16 instructions x 32 FLOP
}

void BM_PeakFma256(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    st.SkipWithError("no AVX2 + FMA");
    return;
  }
  run_peak<locr::bench::peak_loop_fma256>(st, 12 * 16);  // 12 instructions x 16 FLOP
}

// Each thread sums its share of a 1 GiB buffer in the widest loads the CPU has (64 bytes with
// AVX-512, 32 with AVX2), four independent chains. The width matters: on an Emerald Rapids core
// 16-byte loads read 8.8 GB/s, 32-byte 14.1 and 64-byte 15.4 (docs/benchmarks.md), as the loads in
// flight, not the bytes, are what a core can have outstanding. Small: the C library's 4 KiB pages;
// huge: core/heap.h's buffer on transparent huge pages, as locr's packed weights are.
void stream_read(benchmark::State& st, const uint64_t* buf, size_t words) {
  const int threads = static_cast<int>(st.range(0));
  std::vector<uint64_t> sink(threads);
  for (auto _ : st) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        const size_t share = words / threads / 32 * 32, b = share * t, e = t + 1 == threads ? words / 32 * 32 : b + share;
        if (__builtin_cpu_supports("avx512f")) {
          sink[t] += locr::bench::stream_sum512(buf, b, e);
        } else if (__builtin_cpu_supports("avx2")) {
          sink[t] += locr::bench::stream_sum256(buf, b, e);
        } else {
          uint64_t a[8] = {};
          for (size_t i = b; i < e; i += 8)
            for (int j = 0; j < 8; ++j) a[j] += buf[i + j];
          sink[t] += a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
        }
      });
    for (auto& t : ts) t.join();
  }
  benchmark::DoNotOptimize(sink.data());
  st.counters["B/s"] = benchmark::Counter(static_cast<double>(words * 8), benchmark::Counter::kIsIterationInvariantRate,
                                          benchmark::Counter::kIs1000);
}

constexpr size_t kStreamWords = (size_t{1} << 30) / 8;

void fill(uint64_t* b) {
  for (size_t i = 0; i < kStreamWords; ++i) b[i] = i * 0x9e3779b97f4a7c15ull;  // touched: no shared zero pages
}

void BM_StreamRead(benchmark::State& st) {
  static const std::vector<uint64_t> buf = [] {
    std::vector<uint64_t> b(kStreamWords);
    fill(b.data());
    return b;
  }();
  stream_read(st, buf.data(), kStreamWords);
}

void BM_StreamReadHugePages(benchmark::State& st) {
  static uint64_t* const buf = [] {
    auto* b = static_cast<uint64_t*>(locr::alloc_aligned(kStreamWords * 8));  // never freed: one per process
    LOCR_CHECK(b != nullptr, "out of memory");
    fill(b);
    return b;
  }();
  stream_read(st, buf, kStreamWords);
}

}  // namespace

// Argument: number of threads running the loop concurrently.
BENCHMARK(BM_PeakDpbf16)->DenseRange(1, locr::ThreadPool::default_threads())->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PeakFma512)->DenseRange(1, locr::ThreadPool::default_threads())->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PeakFma256)->DenseRange(1, locr::ThreadPool::default_threads())->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamRead)->DenseRange(1, locr::ThreadPool::default_threads())->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamReadHugePages)
    ->DenseRange(1, locr::ThreadPool::default_threads())
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
