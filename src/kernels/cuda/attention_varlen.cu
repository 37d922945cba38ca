// Attention over packed variable-length sequences (the vision encoder: several images, no
// cross-image attention; also causal prefill of whole prompts from contiguous Q/K/V): the host
// side of the FlashAttention-2 style tile kernel in attention_tile.cuh, for head_dim 64, 128 and 256
// (Qwen3.5's gated attention).
// Grid: (query tiles of the longest sequence, heads, sequences); tiles past a sequence's end exit
// at once. Not here: the paged KV cache (paged_attention.cu).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"

namespace locr::kernels::cuda {

namespace detail {

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Sets the dynamic shared memory limit of one tile kernel instance once per process, launches it.
template <int D, bool kPaged, bool kFp8 = false>
void launch_tile(const TileArgs& a, int max_q, int n_heads, int n_seqs, Stream s) {
  using C = TileCfg<D>;
  static const cudaError_t attr = cudaFuncSetAttribute(attention_tile_kernel<D, kPaged, kFp8>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       static_cast<int>(C::kSmem));
  check(attr, "cudaFuncSetAttribute(attention_tile_kernel)", __FILE__, __LINE__);
  const dim3 grid(static_cast<unsigned>(ceil_div(max_q, C::kBQ)), static_cast<unsigned>(n_heads),
                  static_cast<unsigned>(n_seqs));
  attention_tile_kernel<D, kPaged, kFp8><<<grid, C::kThreads, C::kSmem, s>>>(a);
  LOCR_CUDA_LAUNCHED("attention_tile_kernel");
}

template <int D>
void run_tile_d(const TileArgs& a, bool paged, int max_q, int n_heads, int n_seqs, Stream s) {
  if (paged && a.k_fp8)  // the FP8 cache is paged only
    launch_tile<D, true, true>(a, max_q, n_heads, n_seqs, s);
  else if (paged)
    launch_tile<D, true>(a, max_q, n_heads, n_seqs, s);
  else
    launch_tile<D, false>(a, max_q, n_heads, n_seqs, s);
}

void run_tile(const TileArgs& a, int head_dim, bool paged, int max_q, int n_heads, int n_seqs, Stream s) {
  switch (head_dim) {
    case 64: return run_tile_d<64>(a, paged, max_q, n_heads, n_seqs, s);
    case 128: return run_tile_d<128>(a, paged, max_q, n_heads, n_seqs, s);
    default: return run_tile_d<256>(a, paged, max_q, n_heads, n_seqs, s);  // check_heads() allowed only these
  }
}

void check_heads(int n_heads, int n_kv_heads, int head_dim, const char* what) {
  if (head_dim != 64 && head_dim != 128 && head_dim != 256)
    fail(ErrorKind::kUnsupported, what, ": head_dim ", head_dim, " (the CUDA kernels support 64, 128 and 256)");
  if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
    fail(ErrorKind::kInternal, what, ": ", n_heads, " query heads are not a multiple of ", n_kv_heads, " kv heads");
}

}  // namespace detail

void attention_varlen(const VarlenAttention& p, Stream s) {
  if (p.n_seqs <= 0 || p.max_q <= 0) return;
  detail::check_heads(p.n_heads, p.n_kv_heads, p.head_dim, "attention_varlen");
  detail::TileArgs a;
  a.q = p.q;
  a.k = p.k;
  a.v = p.v;
  a.out = p.out;
  a.cu_q = p.cu_q;
  a.cu_k = p.cu_k;
  a.n_heads = p.n_heads;
  a.n_kv_heads = p.n_kv_heads;
  a.q_stride = p.q_stride;
  a.kv_stride = p.kv_stride;
  a.out_stride = p.out_stride;
  a.scale_log2 = p.scale * 1.4426950408889634f;
  a.causal = p.causal;
  a.vec_q = detail::aligned16(p.q) && p.q_stride % 8 == 0;
  a.vec_kv = detail::aligned16(p.k) && detail::aligned16(p.v) && p.kv_stride % 8 == 0;
  detail::run_tile(a, p.head_dim, false, p.max_q, p.n_heads, p.n_seqs, s);
}

}  // namespace locr::kernels::cuda
