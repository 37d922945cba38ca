// Shared by the CPU backend's drivers (cpu_ops.cc, cpu_attention.cc), which run on the host's
// baseline flags and hand work to the per-ISA leaf kernels: per-thread scratch and the attention
// driver. Not a public interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "core/heap.h"
#include "kernels/ops.h"

namespace locr::kernels::cpu {

struct KernelTable;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// 64-byte aligned memory for std::free (huge pages from 2 MiB: core/heap.h), failing clearly when
// the allocation does.
inline void* aligned_bytes(size_t n) {
  void* p = alloc_aligned(n);
  LOCR_CHECK(p != nullptr, "out of memory allocating ", n, " bytes");
  return p;
}

// Per-call scratch, grown as needed and kept per calling thread (kernels never run concurrently
// on one thread): fresh buffers of tens of MB per layer would pay their page faults at every call.
struct Scratch {
  void* p = nullptr;
  size_t n = 0;
  ~Scratch() { std::free(p); }
  void* get(size_t bytes) {
    if (bytes > n) {
      std::free(p);
      n = bytes + bytes / 4;
      p = aligned_bytes(n);
    }
    return p;
  }
};

// Five slots per thread. An op holds its slots only while it runs and uses distinct ones for
// buffers it needs at once (cpu_ops.cc, cpu_attention.cc); slots 3 and 4 are the attention's K/V
// copy and its bf16 packing, the largest, kept from layer to layer.
inline Scratch& scratch_slot(int i) {
  thread_local Scratch s[5];
  return s[i];
}

// Query rows up to this take the per-row attention path (unless they are prompt rows): decode, small
// chunks, and speculative verification steps of up to 16 drafts (runtime/speculative.h), whose rows
// must equal one-row decodes.
inline constexpr int64_t kAttnRowsMaxQ = 17;

// Ops::attention on t's kernels (cpu_attention.cc). k and v are the cache's rows in p.kv_dtype;
// dot_tile: the tiles run on vdpbf16ps (t.attn_tile_bf16) instead of f32 FMA; f16_tile: where
// attention_f16_applies, on fp16 products (t.attn_tile_f16) unless an input is not finite.
void attention(const KernelTable& t, bool dot_tile, bool f16_tile, const float* q, const void* k, const void* v,
               float* out, const AttentionParams& p);
// Whether the fp16 tile can take p: t has it (an AVX512-FP16 CPU), bidirectional, F32 rows without a
// block table, head_dim a multiple of 32 up to 128.
bool attention_f16_applies(const KernelTable& t, const AttentionParams& p);

}  // namespace locr::kernels::cpu
