// bench_kernels: the CPU backends at LightOnOCR-2-1B's shapes (Pixtral encoder: 1024 wide, MLP
// 4096, head_dim 64, 16 heads, up to ~8580 patches per page; Qwen3 decoder: hidden 1024, q 2048,
// kv 1024, MLP 3072, head_dim 128, 16/8 heads; vocab 151936). Counters: FLOP/s for compute-bound
// kernels, bytes/s of weights or KV read for the bandwidth-bound ones. Threads: the global pool
// (physical cores; --threads N overrides). Weights are BF16, as in the checkpoint. Also the new ops of
// the Qwen3.5 family (LightOnOCR-3-0.8B: BM_Conv1dSilu, BM_GatedDeltaNet, BM_LayerNorm, GeluTanh).
//
//   bench_kernels [--threads N] [google benchmark flags, e.g. --benchmark_filter=Gemm]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/heap.h"
#include "core/thread_pool.h"
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"
#include "kernels/ops.h"

namespace {

using locr::kernels::AttentionParams;
using locr::kernels::Matrix;
using locr::kernels::Ops;

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A prepared BF16 weight; the unpacked original is dropped once packed (matmul reads only the
// packed copy), so benchmarks hold one copy of the weights, as the engine would. `argmax`: also
// Ops::prepare_argmax (the greedy head's screen), as the engine does for the head.
Matrix prepared_weight(Ops& ops, int64_t n, int64_t k, uint32_t seed, bool argmax = false) {
  auto buf = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(n * k));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-0.05f, 0.05f);
  for (auto& x : *buf) x = locr::f32_to_bf16(d(rng));
  Matrix w;
  w.dtype = locr::DType::kBF16;
  w.rows = n;
  w.cols = k;
  w.data = buf->data();
  w.holder = buf;
  ops.prepare(w);
  if (argmax) ops.prepare_argmax(w);
  if (w.packed) {
    w.holder.reset();
    w.data = nullptr;
  }
  return w;
}

// CPU seconds of the whole process (all pool threads). On a shared, oversubscribed machine the
// wall-clock rate understates the kernels; the per-CPU-second rate ("per core") does not, though
// it also counts the pool's brief spinning.
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct CpuClock {
  double start = process_cpu_seconds();
  double elapsed() const { return process_cpu_seconds() - start; }
};

void set_flops(benchmark::State& st, double flops_per_iter, double cpu_s) {
  st.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iter, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  st.counters["FLOP/cpu_s"] = benchmark::Counter(flops_per_iter * static_cast<double>(st.iterations()) / cpu_s,
                                                 benchmark::Counter::kDefaults, benchmark::Counter::kIs1000);
}
void set_bytes(benchmark::State& st, double bytes_per_iter, double cpu_s) {
  st.counters["B/s"] =
      benchmark::Counter(bytes_per_iter, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  st.counters["B/cpu_s"] = benchmark::Counter(bytes_per_iter * static_cast<double>(st.iterations()) / cpu_s,
                                              benchmark::Counter::kDefaults, benchmark::Counter::kIs1000);
}

// GEMM (prefill / vision): y[M,N] = x[M,K] W[N,K]^T.
void BM_Gemm(benchmark::State& st, std::string backend, int64_t M, int64_t N, int64_t K) {
  auto ops = locr::kernels::make_ops(backend);
  Matrix w = prepared_weight(*ops, N, K, 1);
  const auto x = random_vec(static_cast<size_t>(M * K), 2);
  std::vector<float> y(static_cast<size_t>(M * N));
  const CpuClock clock;
  for (auto _ : st) {
    ops->matmul(ops->f32(x.data(), M, K), w, ops->f32(y.data(), M, N));
    benchmark::DoNotOptimize(y.data());
  }
  const double cpu_s = clock.elapsed();
  set_flops(st, 2.0 * M * N * K, cpu_s);
}

// GEMV (decode): M rows against weights rotated over enough copies (>= 768 MB) that they stream
// from DRAM, not from the last-level cache. Counter: weight bytes per second.
void BM_Gemv(benchmark::State& st, std::string backend, int64_t M, int64_t N, int64_t K) {
  auto ops = locr::kernels::make_ops(backend);
  const double bytes = 2.0 * N * K;
  const int copies = static_cast<int>(std::max(1.0, std::ceil(768e6 / bytes)));
  std::vector<Matrix> ws;
  for (int c = 0; c < copies; ++c) ws.push_back(prepared_weight(*ops, N, K, 10 + c));
  const auto x = random_vec(static_cast<size_t>(M * K), 3);
  std::vector<float> y(static_cast<size_t>(M * N));
  const CpuClock clock;
  size_t i = 0;
  for (auto _ : st) {
    ops->matmul(ops->f32(x.data(), M, K), ws[i++ % ws.size()], ops->f32(y.data(), M, N));
    benchmark::DoNotOptimize(y.data());
  }
  const double cpu_s = clock.elapsed();
  set_bytes(st, bytes, cpu_s);
  set_flops(st, 2.0 * M * N * K, cpu_s);
}

// Greedy tokens from the head (Ops::matmul_argmax: the 8-bit screen, then the candidates' panel
// groups in BF16), the same rotation over copies as BM_Gemv. Counter: the BF16 head's bytes per
// second, so the rate compares with Gemv/<backend>/lm_head (the full product it replaces).
void BM_GreedyHead(benchmark::State& st, std::string backend, int64_t M, int64_t N, int64_t K) {
  auto ops = locr::kernels::make_ops(backend);
  const double bytes = 2.0 * N * K;
  const int copies = static_cast<int>(std::max(1.0, std::ceil(768e6 / bytes)));
  std::vector<Matrix> ws;
  for (int c = 0; c < copies; ++c) ws.push_back(prepared_weight(*ops, N, K, 10 + c, /*argmax=*/true));
  const auto x = random_vec(static_cast<size_t>(M * K), 3);
  std::vector<int32_t> tokens(static_cast<size_t>(M));
  const CpuClock clock;
  size_t i = 0;
  for (auto _ : st) {
    ops->matmul_argmax(ops->f32(x.data(), M, K), ws[i++ % ws.size()], tokens.data());
    benchmark::DoNotOptimize(tokens.data());
  }
  const double cpu_s = clock.elapsed();
  set_bytes(st, bytes, cpu_s);
  st.counters["screen_MB"] = static_cast<double>(ops->argmax_extra_bytes(ws.front())) / 1e6;
}

// GEMV on GGUF Q8_0 weights, packed once (kernels/cpu/quant_q8_0.h; one thread: compare with --threads 1),
// the same rotation over copies as BM_Gemv. Counter: Q8_0 weight bytes per second (34 per 32).
// Q4_K (kernels/cpu/quant_q4_k.h) and Q6_K (quant_q6_k.h) the same way, packed once too: counter
// GGUF weight bytes per second (144 / 210 per 256).
enum class QuantKind { kQ8_0, kQ4_K, kQ6_K };
// The GGUF rows w (N x K) in the kernels' layout, and the product on it.
std::unique_ptr<locr::kernels::QuantPacked> pack(QuantKind kind, const uint8_t* w, int64_t N, int64_t K) {
  if (kind == QuantKind::kQ4_K) return locr::kernels::pack_q4_k(w, N, K);
  if (kind == QuantKind::kQ6_K) return locr::kernels::pack_q6_k(w, N, K);
  return locr::kernels::pack_q8_0(w, N, K);
}
void quant_gemm(locr::kernels::CpuIsa isa, QuantKind kind, const locr::kernels::QuantPacked& w, const float* x,
                int64_t M, float* y) {
  if (kind == QuantKind::kQ4_K) return locr::kernels::gemm_q4_K(isa, w, x, M, y);
  if (kind == QuantKind::kQ6_K) return locr::kernels::gemm_q6_K(isa, w, x, M, y);
  locr::kernels::gemm_q8_0(isa, w, x, M, y);
}

// M > 1: a decode step of M sequences (a server's batch) against the same streamed weights.
void BM_GemvQuant(benchmark::State& st, locr::kernels::CpuIsa isa, int64_t M, int64_t N, int64_t K, QuantKind kind) {
  if (!locr::kernels::cpu_isa_supported(isa)) {
    st.SkipWithError("this CPU lacks the ISA");
    return;
  }
  const double bytes = kind == QuantKind::kQ4_K   ? 144.0 * N * K / 256
                       : kind == QuantKind::kQ6_K ? 210.0 * N * K / 256
                                                  : 34.0 * N * K / 32;
  const int copies = static_cast<int>(std::max(1.0, std::ceil(768e6 / bytes)));
  // One random weight quantized, then copied (the copies only keep the weights out of the cache).
  const auto f = random_vec(static_cast<size_t>(N * K), 10, 0.05f);
  std::vector<uint8_t> w(static_cast<size_t>(bytes));
  if (kind == QuantKind::kQ4_K) locr::kernels::quantize_row_q4_K(f.data(), w.data(), N * K);
  else if (kind == QuantKind::kQ6_K) locr::kernels::quantize_row_q6_K(f.data(), w.data(), N * K);
  else locr::kernels::quantize_row_q8_0(f.data(), w.data(), N * K);
  // As a model holds them: packed once at load (quant_packed.h), each copy its own.
  std::vector<std::unique_ptr<locr::kernels::QuantPacked>> packed;
  for (int c = 0; c < copies; ++c) packed.push_back(pack(kind, w.data(), N, K));
  const auto x = random_vec(static_cast<size_t>(M * K), 3);
  std::vector<float> y(static_cast<size_t>(M * N));
  const CpuClock clock;
  size_t i = 0;
  for (auto _ : st) {
    quant_gemm(isa, kind, *packed[i++ % packed.size()], x.data(), M, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double cpu_s = clock.elapsed();
  set_bytes(st, bytes, cpu_s);
  set_flops(st, 2.0 * M * N * K, cpu_s);
}

// GEMM (prefill / vision) on quantized weights: y[M,N] = x[M,K] W[N,K]^T with W quantized once
// (one copy: a GEMM reuses it across M rows), x quantized per call as the kernels do. Counter: FLOP/s.
void BM_GemmQuant(benchmark::State& st, locr::kernels::CpuIsa isa, int64_t M, int64_t N, int64_t K, QuantKind kind) {
  if (!locr::kernels::cpu_isa_supported(isa)) {
    st.SkipWithError("this CPU lacks the ISA");
    return;
  }
  const auto f = random_vec(static_cast<size_t>(N * K), 10, 0.05f);
  std::vector<uint8_t> w(static_cast<size_t>(kind == QuantKind::kQ4_K   ? 144 * N * K / 256
                                             : kind == QuantKind::kQ6_K ? 210 * N * K / 256
                                                                        : 34 * N * K / 32));
  if (kind == QuantKind::kQ4_K) locr::kernels::quantize_row_q4_K(f.data(), w.data(), N * K);
  else if (kind == QuantKind::kQ6_K) locr::kernels::quantize_row_q6_K(f.data(), w.data(), N * K);
  else locr::kernels::quantize_row_q8_0(f.data(), w.data(), N * K);
  const auto x = random_vec(static_cast<size_t>(M * K), 2);
  std::vector<float> y(static_cast<size_t>(M * N));
  const auto packed = pack(kind, w.data(), N, K);
  const CpuClock clock;
  for (auto _ : st) {
    quant_gemm(isa, kind, *packed, x.data(), M, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double cpu_s = clock.elapsed();
  set_flops(st, 2.0 * M * N * K, cpu_s);
}

// std::vector on the engine's allocator: huge pages from 2 MiB, as the KV cache and the weights
// have them (a decode kernel streaming 4 KiB pages measures page walks as well).
template <class T>
struct EngineAlloc {
  using value_type = T;
  EngineAlloc() = default;
  template <class U>
  EngineAlloc(const EngineAlloc<U>&) {}
  T* allocate(size_t n) {
    void* p = locr::alloc_aligned(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const EngineAlloc&) const { return true; }
  bool operator!=(const EngineAlloc&) const { return false; }
};
template <class T>
using EngineVec = std::vector<T, EngineAlloc<T>>;

// Attention with contiguous q / k / v ([n, heads * head_dim]).
// kv BF16 (or F8_E4M3): a BF16 (FP8, scale per row and kv head) KV cache in 16-row blocks with a
// shuffled block table (cpu-bf16's decode case, and --kv-cache-dtype fp8's).
void BM_Attention(benchmark::State& st, std::string backend, int64_t n_q, int64_t n_kv, int64_t heads,
                  int64_t kv_heads, int64_t hd, bool causal, int kv_copies, locr::DType kv) {
  const bool kv_bf16 = kv == locr::DType::kBF16, kv_fp8 = kv == locr::DType::kF8E4M3;
  auto ops = locr::kernels::make_ops(backend);
  AttentionParams p;
  p.n_q = n_q;
  p.n_kv = n_kv;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.head_dim = hd;
  p.q_stride = heads * hd;
  p.kv_stride = kv_heads * hd;
  p.out_stride = heads * hd;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.causal = causal;
  p.q_offset = n_kv - n_q;
  const auto q = random_vec(static_cast<size_t>(n_q * p.q_stride), 4);
  std::vector<EngineVec<float>> ks, vs;  // decode rotates over one KV cache per layer
  for (int c = 0; c < kv_copies; ++c) {
    const auto kc = random_vec(static_cast<size_t>(n_kv * p.kv_stride), 5 + c);
    const auto vc = random_vec(static_cast<size_t>(n_kv * p.kv_stride), 50 + c);
    ks.emplace_back(kc.begin(), kc.end());
    vs.emplace_back(vc.begin(), vc.end());
  }
  std::vector<float> out(static_cast<size_t>(n_q * p.out_stride));
  std::vector<EngineVec<uint16_t>> ks16, vs16;
  std::vector<EngineVec<uint8_t>> ks8, vs8;
  std::vector<std::vector<float>> kscale, vscale;
  std::vector<int32_t> table;
  if (kv_fp8) {
    const int64_t bs = 16, n_blocks = (n_kv + bs - 1) / bs;
    for (int64_t b = 0; b < n_blocks; ++b) table.push_back(static_cast<int32_t>(n_blocks - 1 - b));  // reversed
    for (int c = 0; c < kv_copies; ++c) {
      EngineVec<uint8_t> k8(n_blocks * bs * p.kv_stride), v8(k8.size());
      std::vector<float> ksc(n_blocks * bs * kv_heads, 1.0f / 448), vsc(ksc.size(), 1.0f / 448);  // |x| <= 1
      for (int64_t j = 0; j < n_kv; ++j) {
        const int64_t row = table[j / bs] * bs + j % bs;
        for (int64_t e = 0; e < p.kv_stride; ++e) {
          k8[row * p.kv_stride + e] = locr::f32_to_fp8_e4m3(ks[c][j * p.kv_stride + e] * 448);
          v8[row * p.kv_stride + e] = locr::f32_to_fp8_e4m3(vs[c][j * p.kv_stride + e] * 448);
        }
      }
      ks8.push_back(std::move(k8));
      vs8.push_back(std::move(v8));
      kscale.push_back(std::move(ksc));
      vscale.push_back(std::move(vsc));
    }
    p.kv_dtype = kv;
    p.block_table = table.data();
    p.block_size = bs;
  }
  if (kv_bf16) {
    const int64_t bs = 16, n_blocks = (n_kv + bs - 1) / bs;
    for (int64_t b = 0; b < n_blocks; ++b) table.push_back(static_cast<int32_t>(n_blocks - 1 - b));  // reversed
    for (int c = 0; c < kv_copies; ++c) {
      EngineVec<uint16_t> k16(n_blocks * bs * p.kv_stride), v16(k16.size());
      for (int64_t j = 0; j < n_kv; ++j) {
        const int64_t row = table[j / bs] * bs + j % bs;
        for (int64_t e = 0; e < p.kv_stride; ++e) {
          k16[row * p.kv_stride + e] = locr::f32_to_bf16(ks[c][j * p.kv_stride + e]);
          v16[row * p.kv_stride + e] = locr::f32_to_bf16(vs[c][j * p.kv_stride + e]);
        }
      }
      ks16.push_back(std::move(k16));
      vs16.push_back(std::move(v16));
    }
    p.kv_dtype = locr::DType::kBF16;
    p.block_table = table.data();
    p.block_size = bs;
  }
  const CpuClock clock;
  size_t i = 0;
  const int64_t kv_rows = table.empty() ? n_kv : static_cast<int64_t>(table.size()) * 16;
  auto kv_view = [&](const void* data, locr::DType dt) {
    return locr::kernels::View(const_cast<void*>(data), dt, locr::kernels::Memory::kHost, kv_rows, p.kv_stride);
  };
  const auto qv = ops->f32(q.data(), n_q, p.q_stride), ov = ops->f32(out.data(), n_q, p.out_stride);
  for (auto _ : st) {
    const size_t c = i++ % ks.size();
    if (kv_fp8) {
      p.k_scale = kscale[c].data();
      p.v_scale = vscale[c].data();
      ops->attention(qv, kv_view(ks8[c].data(), kv), kv_view(vs8[c].data(), kv), ov, p);
    } else if (kv_bf16)
      ops->attention(qv, kv_view(ks16[c].data(), locr::DType::kBF16), kv_view(vs16[c].data(), locr::DType::kBF16), ov,
                     p);
    else
      ops->attention(qv, kv_view(ks[c].data(), locr::DType::kF32), kv_view(vs[c].data(), locr::DType::kF32), ov, p);
    benchmark::DoNotOptimize(out.data());
  }
  const double cpu_s = clock.elapsed();
  // Visible (query, key) pairs: all, or the causal triangle with the chunk offset.
  double pairs = static_cast<double>(n_q) * n_kv;
  if (causal) pairs = static_cast<double>(n_q) * (n_kv - n_q) + 0.5 * n_q * (n_q + 1);
  set_flops(st, 4.0 * pairs * hd * heads, cpu_s);
  // K and V read once (FP8: plus the scales)
  set_bytes(st, 2.0 * (kv_fp8 ? 1.0 + 4.0 / hd : kv_bf16 ? 2.0 : 4.0) * n_kv * kv_heads * hd, cpu_s);
}

// Element-wise kernels on fresh inputs every iteration (applying them in place over and over
// drives values into subnormals, which measures microcode assists, not the kernel).
// tanh: the tanh approximation (gelu_tanh, Qwen3.5's vision MLP) instead of the erf form.
void BM_Gelu(benchmark::State& st, std::string backend, int64_t n, bool tanh) {
  auto ops = locr::kernels::make_ops(backend);
  const auto x0 = random_vec(static_cast<size_t>(n), 7, 3.0f);
  auto x = x0;
  double cpu_s = 0;
  for (auto _ : st) {
    st.PauseTiming();
    std::memcpy(x.data(), x0.data(), x.size() * sizeof(float));
    const CpuClock clock;
    st.ResumeTiming();
    const locr::kernels::View v = ops->f32(x.data(), 1, n);
    if (tanh) {
      ops->gelu_tanh(v);
    } else {
      ops->gelu(v);
    }
    benchmark::DoNotOptimize(x.data());
    cpu_s += clock.elapsed();
  }
  set_bytes(st, 8.0 * n, cpu_s);
}

void BM_SiluMul(benchmark::State& st, std::string backend, int64_t n) {
  auto ops = locr::kernels::make_ops(backend);
  const auto g = random_vec(static_cast<size_t>(n), 8, 3.0f), u = random_vec(static_cast<size_t>(n), 9);
  std::vector<float> out(static_cast<size_t>(n));
  const CpuClock clock;
  for (auto _ : st) {
    ops->silu_mul(ops->f32(g.data(), 1, n), ops->f32(u.data(), 1, n), ops->f32(out.data(), 1, n));
    benchmark::DoNotOptimize(out.data());
  }
  const double cpu_s = clock.elapsed();
  set_bytes(st, 12.0 * n, cpu_s);
}

// The Qwen3.5 family (LightOnOCR-3-0.8B): the Gated DeltaNet layers' conv (C = 2 * 16 * 128 + 16 *
// 128 = 6144 channels, K = 4) and delta rule (16 key and 16 value heads of 128), over `seqs`
// sequences of `rows` rows each in carried state slots (a prefill: 1 x 3000; a decode step: 8 x 1).
// Counters: the conv's bytes (activations in and out, state read and written), the delta rule's
// FLOPs (7 per state element per row, ProfiledOps' count).
locr::kernels::StateBatch state_batch(int64_t seqs, int64_t rows, std::vector<int32_t>& cu, std::vector<int32_t>& slots,
                                      std::vector<int32_t>& fresh) {
  cu.assign(1, 0);
  slots.clear();
  fresh.assign(static_cast<size_t>(seqs), 0);
  for (int64_t i = 0; i < seqs; ++i) {
    cu.push_back(cu.back() + static_cast<int32_t>(rows));
    slots.push_back(static_cast<int32_t>(seqs - 1 - i));
  }
  locr::kernels::StateBatch b;
  b.n_seqs = seqs;
  b.cu_q = b.host_cu_q = cu.data();
  b.slots = b.host_slots = slots.data();
  b.fresh = b.host_fresh = fresh.data();
  b.max_q = rows;
  return b;
}

void BM_Conv1dSilu(benchmark::State& st, std::string backend, int64_t seqs, int64_t rows) {
  auto ops = locr::kernels::make_ops(backend);
  const int64_t C = 6144, K = 4, n = seqs * rows;
  auto wbuf = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(C * K));
  for (size_t i = 0; i < wbuf->size(); ++i) (*wbuf)[i] = locr::f32_to_bf16(0.3f * std::sin(0.1f * static_cast<float>(i)));
  Matrix w;
  w.dtype = locr::DType::kBF16;
  w.rows = C;
  w.cols = K;
  w.data = wbuf->data();
  w.holder = wbuf;
  const auto x = random_vec(static_cast<size_t>(n * C), 21, 2.0f);
  std::vector<float> out(static_cast<size_t>(n * C)), state = random_vec(static_cast<size_t>(seqs * (K - 1) * C), 22);
  std::vector<int32_t> cu, slots, fresh;
  const auto b = state_batch(seqs, rows, cu, slots, fresh);
  const CpuClock clock;
  for (auto _ : st) {
    ops->conv1d_silu(ops->f32(x.data(), n, C), w, ops->f32(state.data(), seqs, (K - 1) * C), b,
                     ops->f32(out.data(), n, C));
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(st, 8.0 * n * C + 8.0 * seqs * (K - 1) * C, clock.elapsed());
}

void BM_GatedDeltaNet(benchmark::State& st, std::string backend, int64_t seqs, int64_t rows) {
  auto ops = locr::kernels::make_ops(backend);
  locr::kernels::DeltaNetParams p;
  p.n_k_heads = p.n_v_heads = 16;
  p.k_dim = p.v_dim = 128;
  const int64_t n = seqs * rows, nq = p.n_k_heads * p.k_dim, nv = p.n_v_heads * p.v_dim;
  const auto q = random_vec(static_cast<size_t>(n * nq), 23), k = random_vec(static_cast<size_t>(n * nq), 24);
  const auto v = random_vec(static_cast<size_t>(n * nv), 25), a = random_vec(static_cast<size_t>(n * p.n_v_heads), 26, 3.0f);
  const auto beta = random_vec(static_cast<size_t>(n * p.n_v_heads), 27, 3.0f);
  const auto al = random_vec(static_cast<size_t>(p.n_v_heads), 28), dt = random_vec(static_cast<size_t>(p.n_v_heads), 29);
  Matrix a_log, dt_bias;
  a_log.rows = dt_bias.rows = 1;
  a_log.cols = dt_bias.cols = p.n_v_heads;
  a_log.data = al.data();
  dt_bias.data = dt.data();
  std::vector<float> out(static_cast<size_t>(n * nv)),
      state = random_vec(static_cast<size_t>(seqs * p.state_floats()), 30, 0.1f);
  std::vector<int32_t> cu, slots, fresh;
  const auto b = state_batch(seqs, rows, cu, slots, fresh);
  const CpuClock clock;
  for (auto _ : st) {
    ops->gated_delta_net(ops->f32(q.data(), n, nq), ops->f32(k.data(), n, nq), ops->f32(v.data(), n, nv),
                         ops->f32(a.data(), n, p.n_v_heads), ops->f32(beta.data(), n, p.n_v_heads), a_log, dt_bias,
                         ops->f32(state.data(), seqs, p.state_floats()), b, p, ops->f32(out.data(), n, nv));
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(st, 7.0 * static_cast<double>(n) * static_cast<double>(p.state_floats()), clock.elapsed());
}

// The vision encoder's LayerNorm (8580 patches x 1024, with bias) and tanh-GELU (x 4096).
void BM_LayerNorm(benchmark::State& st, std::string backend, int64_t rows, int64_t dim) {
  auto ops = locr::kernels::make_ops(backend);
  const auto x = random_vec(static_cast<size_t>(rows * dim), 31), wv = random_vec(static_cast<size_t>(dim), 32);
  Matrix w;
  w.rows = 1;
  w.cols = dim;
  w.data = wv.data();
  std::vector<float> y(x.size());
  const CpuClock clock;
  for (auto _ : st) {
    ops->layer_norm(ops->f32(x.data(), rows, dim), w, w, 1e-6f, ops->f32(y.data(), rows, dim));
    benchmark::DoNotOptimize(y.data());
  }
  set_bytes(st, 8.0 * rows * dim, clock.elapsed());
}

void register_all() {
  for (const auto isa : locr::kernels::kAllCpuIsas) {
    struct G {
      const char* name;
      int64_t n, k;
    };
    for (const auto& [kind, prefix] : {std::pair{QuantKind::kQ8_0, "GemvQ8_0/"}, std::pair{QuantKind::kQ4_K, "GemvQ4_K/"},
                                       std::pair{QuantKind::kQ6_K, "GemvQ6_K/"}})
      for (const G g : {G{"q", 2048, 1024}, G{"gate_up", 3072, 1024}, G{"down", 1024, 3072}})
        benchmark::RegisterBenchmark((std::string(prefix) + locr::kernels::cpu_isa_name(isa) + "/" + g.name).c_str(),
                                     BM_GemvQuant, isa, 1, g.n, g.k, kind)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    // A server's decode batch: M sequences against the streamed weights (compare Gemv/cpu-bf16/*_mM).
    for (const auto& [kind, prefix] : {std::pair{QuantKind::kQ8_0, "GemvQ8_0/"}, std::pair{QuantKind::kQ4_K, "GemvQ4_K/"},
                                       std::pair{QuantKind::kQ6_K, "GemvQ6_K/"}})
      for (const int64_t m : {2, 8, 32, 64})
        for (const G g : {G{"gate_up", 3072, 1024}, G{"down", 1024, 3072}})
          benchmark::RegisterBenchmark((std::string(prefix) + locr::kernels::cpu_isa_name(isa) + "/" + g.name + "_m" +
                                        std::to_string(m)).c_str(),
                                       BM_GemvQuant, isa, m, g.n, g.k, kind)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
  }
  // The vision encoder's matmuls at ~4,000 patches (half an A4 page), quantized and BF16.
  struct GQ {
    const char* name;
    int64_t m, n, k;
  };
  const GQ vision_m4096[] = {{"vision_qkvo_m4096", 4096, 1024, 1024},
                             {"vision_mlp_up_m4096", 4096, 4096, 1024},
                             {"vision_mlp_down_m4096", 4096, 1024, 4096}};
  for (const auto isa : locr::kernels::kAllCpuIsas) {
    if (isa == locr::kernels::CpuIsa::kGeneric) continue;  // minutes per call at these sizes
    for (const auto& [kind, prefix] : {std::pair{QuantKind::kQ8_0, "GemmQ8_0/"},
                                       std::pair{QuantKind::kQ4_K, "GemmQ4_K/"},
                                       std::pair{QuantKind::kQ6_K, "GemmQ6_K/"}})
      for (const GQ& g : vision_m4096)
        benchmark::RegisterBenchmark((std::string(prefix) + locr::kernels::cpu_isa_name(isa) + "/" + g.name).c_str(),
                                     BM_GemmQuant, isa, g.m, g.n, g.k, kind)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
  }
  for (const GQ& g : vision_m4096)
    benchmark::RegisterBenchmark((std::string("Gemm/cpu-bf16/") + g.name).c_str(), BM_Gemm, std::string("cpu-bf16"),
                                 g.m, g.n, g.k)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  // The scalar oracle's delta rule and conv at a decode step, for scale.
  benchmark::RegisterBenchmark("GatedDeltaNet/ref/decode_8x1", BM_GatedDeltaNet, std::string("ref"), 8, 1)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("Conv1dSilu/ref/decode_8x1", BM_Conv1dSilu, std::string("ref"), 8, 1)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  for (const std::string b : {"cpu-bf16", "cpu-f32"}) {
    struct G {
      const char* name;
      int64_t m, n, k;
    };
    const G gemms[] = {
        {"vision_qkvo", 8580, 1024, 1024}, {"vision_mlp_up", 8580, 4096, 1024},
        {"vision_mlp_down", 8580, 1024, 4096}, {"dec_q", 2171, 2048, 1024},
        {"dec_gate_up", 2171, 3072, 1024},   {"dec_down", 2171, 1024, 3072},
    };
    for (const auto& g : gemms)
      benchmark::RegisterBenchmark(("Gemm/" + b + "/" + g.name).c_str(), BM_Gemm, b, g.m, g.n, g.k)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    const G gemvs[] = {
        {"q", 1, 2048, 1024},    {"kv", 1, 1024, 1024},       {"o", 1, 1024, 2048},
        {"gate_up", 1, 3072, 1024}, {"down", 1, 1024, 3072}, {"lm_head", 1, 151936, 1024},
        {"gate_up_m4", 4, 3072, 1024},
        {"gate_up_m2", 2, 3072, 1024}, {"gate_up_m8", 8, 3072, 1024}, {"gate_up_m32", 32, 3072, 1024},
        {"gate_up_m64", 64, 3072, 1024}, {"down_m2", 2, 1024, 3072}, {"down_m8", 8, 1024, 3072},
        {"down_m32", 32, 1024, 3072}, {"down_m64", 64, 1024, 3072},
    };
    for (const auto& g : gemvs)
      benchmark::RegisterBenchmark(("Gemv/" + b + "/" + g.name).c_str(), BM_Gemv, b, g.m, g.n, g.k)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    // LightOnOCR-2-1B's head and LightOnOCR-3-0.8B's (tied, 248,320 rows), one and four sequences.
    const G heads[] = {{"lm_head", 1, 151936, 1024}, {"lm_head_m4", 4, 151936, 1024}, {"lm_head_q35", 1, 248320, 1024}};
    for (const auto& g : heads)
      benchmark::RegisterBenchmark(("GreedyHead/" + b + "/" + g.name).c_str(), BM_GreedyHead, b, g.m, g.n, g.k)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    benchmark::RegisterBenchmark(("Attention/" + b + "/vision_8580_hd64").c_str(), BM_Attention, b, 8580, 8580, 16,
                                 16, 64, false, 1, locr::DType::kF32)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    // LightOnOCR-3-0.8B's vision tower on the 1540 px A4 page (1088x1536: 6,528 patches, 12 heads of 64).
    benchmark::RegisterBenchmark(("Attention/" + b + "/vision_6528_hd64_12h").c_str(), BM_Attention, b, 6528, 6528,
                                 12, 12, 64, false, 1, locr::DType::kF32)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Attention/" + b + "/prefill_causal_2171_hd128_gqa").c_str(), BM_Attention, b,
                                 2171, 2171, 16, 8, 128, true, 1, locr::DType::kF32)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    // The model's prefill: the page prompt's rows over its own keys, read back from a paged BF16 cache.
    benchmark::RegisterBenchmark(("Attention/" + b + "/prefill_causal_2171_hd128_gqa_bf16kv_paged").c_str(),
                                 BM_Attention, b, 2171, 2171, 16, 8, 128, true, 1, locr::DType::kBF16)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Attention/" + b + "/decode_ctx2200_hd128_gqa").c_str(), BM_Attention, b, 1, 2200,
                                 16, 8, 128, true, 28, locr::DType::kF32)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Attention/" + b + "/decode_ctx2200_hd128_gqa_bf16kv_paged").c_str(), BM_Attention,
                                 b, 1, 2200, 16, 8, 128, true, 28, locr::DType::kBF16)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    // The same from this core's caches (one KV cache, not one per layer): the kernel's own speed.
    benchmark::RegisterBenchmark(("Attention/" + b + "/decode_ctx2200_hd128_gqa_bf16kv_paged_cached").c_str(),
                                 BM_Attention, b, 1, 2200, 16, 8, 128, true, 1, locr::DType::kBF16)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Attention/" + b + "/decode_ctx2200_hd128_gqa_fp8kv_paged").c_str(), BM_Attention,
                                 b, 1, 2200, 16, 8, 128, true, 28, locr::DType::kF8E4M3)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Gelu/" + b + "/8580x4096").c_str(), BM_Gelu, b, int64_t{8580} * 4096, false)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("SiluMul/" + b + "/2171x3072").c_str(), BM_SiluMul, b, int64_t{2171} * 3072)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Conv1dSilu/" + b + "/prefill_1x3000").c_str(), BM_Conv1dSilu, b, 1, 3000)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Conv1dSilu/" + b + "/decode_8x1").c_str(), BM_Conv1dSilu, b, 8, 1)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("GatedDeltaNet/" + b + "/prefill_1x3000").c_str(), BM_GatedDeltaNet, b, 1, 3000)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("GatedDeltaNet/" + b + "/decode_8x1").c_str(), BM_GatedDeltaNet, b, 8, 1)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("LayerNorm/" + b + "/8580x1024").c_str(), BM_LayerNorm, b, 8580, 1024)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("GeluTanh/" + b + "/8580x4096").c_str(), BM_Gelu, b, int64_t{8580} * 4096, true)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) {
      locr::ThreadPool::set_global_threads(std::atoi(argv[i + 1]));
      for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  }
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
