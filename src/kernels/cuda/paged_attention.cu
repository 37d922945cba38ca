// The paged KV cache of the CUDA backend: kv_store (new rows into pool slots) and causal
// attention of new query rows against the cache through per-sequence block tables.
//   - max_q > 1 (prefill chunks, mixed batches): the tile kernel of attention_tile.cuh, reading
//     K/V rows through the block table;
//   - max_q == 1 (pure decode): one block per (split, head, sequence); 4 warps walk the split's
//     keys (one key per warp at a time, lanes split head_dim), each with its own online softmax in
//     F32, merged in shared memory. Contexts longer than kChunk keys are split over blocks
//     (split-K); the partial (m, l, unnormalised o) go to the workspace and a reduce kernel merges
//     them with exp2(m_i - M) weights. Sequences shorter than max_seq_len simply have idle splits.
// Both read a BF16 cache, or an FP8 one (PagedAttention::k_fp8: kv_fp8.h's element = byte * scale,
// in F32 for decode, rounded to BF16 in the prefill tiles).
// Not here: block allocation (runtime/block_manager), contiguous attention (attention_varlen.cu).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/kv_fp8.h"

namespace locr::kernels::cuda {

namespace detail {

bool aligned16(const void* p);
void run_tile(const TileArgs& a, int head_dim, bool paged, int max_q, int n_heads, int n_seqs, Stream s);
void check_heads(int n_heads, int n_kv_heads, int head_dim, const char* what);

namespace {

constexpr int kChunk = 256;  // keys per split of the decode kernel
constexpr int kDecodeWarps = 4;

__global__ void kv_store_kernel(const uint16_t* k, const uint16_t* v, int64_t stride, const int32_t* slots, int64_t n,
                                int64_t width, uint16_t* k_cache, uint16_t* v_cache) {
  const int64_t total = n * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, c = i - r * width;
    const int64_t slot = slots[r];
    if (slot < 0) continue;  // padding row: nothing to store
    k_cache[slot * width + c] = k[r * stride + c];
    v_cache[slot * width + c] = v[r * stride + c];
  }
}

struct DecodeArgs {
  const uint16_t* q;
  uint16_t* out;
  const uint16_t* k_cache;
  const uint16_t* v_cache;
  const uint8_t* k_fp8;  // the FP8 cache and its scales (kFp8 kernels)
  const uint8_t* v_fp8;
  const float* k_scale;
  const float* v_scale;
  const int32_t* block_tables;
  int max_blocks;
  const int32_t* cu_q;
  const int32_t* seq_lens;
  int block_size;
  int n_heads, n_kv_heads, n_splits;
  int64_t q_stride, out_stride;
  float scale_log2;
  float* part_o;  // [n_seqs, n_heads, n_splits, D]   (only when n_splits > 1)
  float* part_ml; // [n_seqs, n_heads, n_splits, 2]  (m, l)
};

// Element e of kv head kvh of pool row `row` (offset `off` = its index in a BF16 pool) as F32.
template <bool kFp8>
__device__ __forceinline__ float cache_at(const uint16_t* bf, const uint8_t* f8, const float* scale, int64_t row,
                                          int64_t off, int n_kv_heads, int head_dim, int kvh, int d) {
  if constexpr (kFp8) return kvfp8::element(f8, scale, row, n_kv_heads, head_dim, kvh, d);
  else return bf16_bits_to_f32(bf[off]);
}

template <int D, bool kFp8>
__global__ void __launch_bounds__(kDecodeWarps * 32) paged_decode_kernel(DecodeArgs a) {
  constexpr int kE = D / 32;  // elements per lane
  const int split = blockIdx.x, h = blockIdx.y, s = blockIdx.z;
  const int q_row = a.cu_q[s];
  if (a.cu_q[s + 1] - q_row != 1) return;  // no query row for this sequence in this step
  const int len = a.seq_lens[s];
  const int start = split * kChunk;
  if (split > 0 && start >= len) return;  // idle split (the reduce never reads it)
  const int end = min(len, start + kChunk);
  const int kvh = h / (a.n_heads / a.n_kv_heads);
  const int64_t width = static_cast<int64_t>(a.n_kv_heads) * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  float q[kE], acc[kE];
  const uint16_t* qp = a.q + static_cast<int64_t>(q_row) * a.q_stride + static_cast<int64_t>(h) * D + lane * kE;
#pragma unroll
  for (int e = 0; e < kE; ++e) {
    q[e] = bf16_bits_to_f32(qp[e]) * a.scale_log2;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int32_t* table = a.block_tables + static_cast<int64_t>(s) * a.max_blocks;
  for (int j = start + warp; j < end; j += kDecodeWarps) {
    const int64_t row = static_cast<int64_t>(table[j / a.block_size]) * a.block_size + j % a.block_size;
    const int64_t off = row * width + static_cast<int64_t>(kvh) * D + lane * kE;
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < kE; ++e)
      dot += q[e] * cache_at<kFp8>(a.k_cache, a.k_fp8, a.k_scale, row, off + e, a.n_kv_heads, D, kvh, lane * kE + e);
    dot = warp_sum(dot);  // every lane holds the score (base-2 scaled)
    const float m_new = fmaxf(m, dot);
    const float corr = exp2f(m - m_new);  // 0 on the first key (m = -inf)
    const float p = exp2f(dot - m_new);
    l = l * corr + p;
#pragma unroll
    for (int e = 0; e < kE; ++e)
      acc[e] = acc[e] * corr +
               p * cache_at<kFp8>(a.v_cache, a.v_fp8, a.v_scale, row, off + e, a.n_kv_heads, D, kvh, lane * kE + e);
    m = m_new;
  }

  // Merge the warps.
  __shared__ float sm_m[kDecodeWarps], sm_l[kDecodeWarps];
  __shared__ float sm_o[kDecodeWarps][D];
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int e = 0; e < kE; ++e) sm_o[warp][lane * kE + e] = acc[e];
  __syncthreads();
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) M = fmaxf(M, sm_m[w]);
  float wgt[kDecodeWarps];
  float L = 0.0f;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) {
    wgt[w] = M == -INFINITY ? 0.0f : exp2f(sm_m[w] - M);  // a warp without keys: m = -inf -> 0
    L += sm_l[w] * wgt[w];
  }
  const int64_t part = (static_cast<int64_t>(s) * a.n_heads + h) * a.n_splits + split;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) o += sm_o[w][d] * wgt[w];
    if (a.n_splits == 1) {
      a.out[static_cast<int64_t>(q_row) * a.out_stride + static_cast<int64_t>(h) * D + d] =
          f32_to_bf16_bits(L > 0.0f ? o / L : 0.0f);
    } else {
      a.part_o[part * D + d] = o;
    }
  }
  if (a.n_splits > 1 && threadIdx.x == 0) {
    a.part_ml[part * 2] = M;
    a.part_ml[part * 2 + 1] = L;
  }
}

// One block of D threads per (head, sequence): merges the sequence's used splits.
template <int D>
__global__ void paged_decode_reduce_kernel(DecodeArgs a) {
  const int h = blockIdx.x, s = blockIdx.y, d = threadIdx.x;
  const int q_row = a.cu_q[s];
  if (a.cu_q[s + 1] - q_row != 1) return;
  const int len = a.seq_lens[s];
  const int used = min(a.n_splits, max(1, (len + kChunk - 1) / kChunk));
  const int64_t base = (static_cast<int64_t>(s) * a.n_heads + h) * a.n_splits;
  float M = -INFINITY;
  for (int i = 0; i < used; ++i) M = fmaxf(M, a.part_ml[(base + i) * 2]);
  float L = 0.0f, o = 0.0f;
  if (M != -INFINITY) {
    for (int i = 0; i < used; ++i) {
      const float w = exp2f(a.part_ml[(base + i) * 2] - M);
      L += a.part_ml[(base + i) * 2 + 1] * w;
      o += a.part_o[(base + i) * D + d] * w;
    }
  }
  a.out[static_cast<int64_t>(q_row) * a.out_stride + static_cast<int64_t>(h) * D + d] =
      f32_to_bf16_bits(L > 0.0f ? o / L : 0.0f);
}

int decode_splits(const PagedAttention& p) {
  return static_cast<int>(ceil_div(p.max_seq_len > 0 ? p.max_seq_len : 1, kChunk));
}

template <int D>
void launch_decode(DecodeArgs a, int n_seqs, Stream s) {
  const dim3 grid(static_cast<unsigned>(a.n_splits), static_cast<unsigned>(a.n_heads), static_cast<unsigned>(n_seqs));
  if (a.k_fp8) paged_decode_kernel<D, true><<<grid, kDecodeWarps * 32, 0, s>>>(a);
  else paged_decode_kernel<D, false><<<grid, kDecodeWarps * 32, 0, s>>>(a);
  LOCR_CUDA_LAUNCHED("paged_decode_kernel");
  if (a.n_splits > 1) {
    paged_decode_reduce_kernel<D><<<dim3(a.n_heads, n_seqs), D, 0, s>>>(a);
    LOCR_CUDA_LAUNCHED("paged_decode_reduce_kernel");
  }
}

}  // namespace
}  // namespace detail

void kv_store(const bf16* k, const bf16* v, int64_t stride, const int32_t* slots, int64_t n, int64_t width,
              bf16* k_cache, bf16* v_cache, Stream s) {
  if (n <= 0 || width <= 0) return;
  constexpr int kThreads = 256;
  detail::kv_store_kernel<<<detail::grid_for(n * width, kThreads), kThreads, 0, s>>>(k, v, stride, slots, n, width,
                                                                                   k_cache, v_cache);
  LOCR_CUDA_LAUNCHED("kv_store");
}

size_t paged_attention_workspace(const PagedAttention& p) {
  if (p.max_q != 1 || p.n_seqs <= 0) return 0;
  const int splits = detail::decode_splits(p);
  if (splits <= 1) return 0;
  return static_cast<size_t>(p.n_seqs) * p.n_heads * splits * (p.head_dim + 2) * sizeof(float);
}

void paged_attention(const PagedAttention& p, void* workspace, Stream s) {
  if (p.n_seqs <= 0 || p.max_q <= 0) return;
  detail::check_heads(p.n_heads, p.n_kv_heads, p.head_dim, "paged_attention");
  if (p.k_fp8 && (!p.v_fp8 || !p.k_scale || !p.v_scale))
    fail(ErrorKind::kInternal, "paged_attention: an FP8 cache needs both pools and both scale arrays");
  if (p.block_size <= 0) fail(ErrorKind::kInternal, "paged_attention: block_size ", p.block_size);
  const float scale_log2 = p.scale * 1.4426950408889634f;
  if (p.max_q == 1) {
    detail::DecodeArgs a{};
    a.q = p.q;
    a.out = p.out;
    a.k_cache = p.k_cache;
    a.v_cache = p.v_cache;
    a.k_fp8 = p.k_fp8;
    a.v_fp8 = p.v_fp8;
    a.k_scale = p.k_scale;
    a.v_scale = p.v_scale;
    a.block_tables = p.block_tables;
    a.max_blocks = p.max_blocks;
    a.cu_q = p.cu_q;
    a.seq_lens = p.seq_lens;
    a.block_size = p.block_size;
    a.n_heads = p.n_heads;
    a.n_kv_heads = p.n_kv_heads;
    a.n_splits = detail::decode_splits(p);
    a.q_stride = p.q_stride;
    a.out_stride = p.out_stride;
    a.scale_log2 = scale_log2;
    if (a.n_splits > 1) {
      if (!workspace) fail(ErrorKind::kInternal, "paged_attention: decode over ", p.max_seq_len,
                           " keys needs paged_attention_workspace() bytes of workspace");
      a.part_o = static_cast<float*>(workspace);
      a.part_ml = a.part_o + static_cast<int64_t>(p.n_seqs) * p.n_heads * a.n_splits * p.head_dim;
    }
    if (p.head_dim == 64) detail::launch_decode<64>(a, p.n_seqs, s);
    else if (p.head_dim == 128) detail::launch_decode<128>(a, p.n_seqs, s);
    else detail::launch_decode<256>(a, p.n_seqs, s);
    return;
  }
  detail::TileArgs a;
  a.q = p.q;
  a.k = p.k_cache;
  a.v = p.v_cache;
  a.k_fp8 = p.k_fp8;
  a.v_fp8 = p.v_fp8;
  a.k_scale = p.k_scale;
  a.v_scale = p.v_scale;
  a.out = p.out;
  a.cu_q = p.cu_q;
  a.seq_lens = p.seq_lens;
  a.block_tables = p.block_tables;
  a.max_blocks = p.max_blocks;
  a.block_size = p.block_size;
  a.n_heads = p.n_heads;
  a.n_kv_heads = p.n_kv_heads;
  a.q_stride = p.q_stride;
  a.kv_stride = static_cast<int64_t>(p.n_kv_heads) * p.head_dim;
  a.out_stride = p.out_stride;
  a.scale_log2 = scale_log2;
  a.causal = true;
  a.vec_q = detail::aligned16(p.q) && p.q_stride % 8 == 0;
  a.vec_kv = detail::aligned16(p.k_cache) && detail::aligned16(p.v_cache) && a.kv_stride % 8 == 0;
  detail::run_tile(a, p.head_dim, true, p.max_q, p.n_heads, p.n_seqs, s);
}

}  // namespace locr::kernels::cuda
