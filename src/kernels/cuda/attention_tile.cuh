// Internal: the FlashAttention-2 style tile kernel shared by attention_varlen.cu (packed
// sequences, contiguous K/V) and paged_attention.cu (prefill chunks reading K/V through block
// tables). Not an API; included by those two .cu files only.
//
// One block = 4 warps = one (query tile of 64 rows, head, sequence). Each warp owns 16 query rows.
// Per tile of 32 keys: K and V tiles are staged in shared memory (BF16), S = Q K^T runs on BF16
// tensor cores (WMMA 16x16x16, F32 accumulate), the online softmax is F32 in base 2 (scores
// multiplied by scale * log2 e), P is rounded to BF16 for the P V product, and the F32 output
// accumulator O lives in shared memory, rescaled by exp2(m_old - m_new) before each P V. No n x n
// buffer exists; memory per block is fixed (~50 KB at head_dim 64, ~81 KB at 128, ~149 KB at 256:
// head_dim 256 needs the opt-in shared memory of sm_80 and later, 163 KB on A100, 227 KB on H100).
// Masking: keys j >= len_k, and with `causal` keys j > t + (len_k - len_q) for query row t. A query
// row that sees no key at all gets 0 (never NaN).
// kFp8 (paged only): K/V come from an FP8 E4M3 cache with per-row-and-head scales (kv_fp8.h); each
// element, byte * scale in F32, is rounded to BF16 as it is staged.
#pragma once

#include <mma.h>

#include <cstdint>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kv_fp8.h"

namespace locr::kernels::cuda::detail {

struct TileArgs {
  const uint16_t* q = nullptr;
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  const uint8_t* k_fp8 = nullptr;  // kFp8: the FP8 pools and their scales [rows, n_kv_heads]
  const uint8_t* v_fp8 = nullptr;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  uint16_t* out = nullptr;
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;      // varlen: key rows of sequence s are cu_k[s]..cu_k[s+1]-1
  const int32_t* seq_lens = nullptr;  // paged: sequence s has seq_lens[s] keys, through its block table
  const int32_t* block_tables = nullptr;
  int max_blocks = 0;
  int block_size = 0;
  int n_heads = 0, n_kv_heads = 0;
  int64_t q_stride = 0, kv_stride = 0, out_stride = 0;
  float scale_log2 = 0.0f;  // scale * log2(e)
  bool causal = false;
  bool vec_q = false, vec_kv = false;  // 16-byte loads allowed (aligned bases, strides % 8 == 0)
};

template <int D>
struct TileCfg {
  static constexpr int kBQ = 64, kBK = 32, kWarps = 4, kThreads = 128;
  static constexpr int kLdQ = D + 8, kLdK = D + 8;  // BF16 elements (multiples of 8 for WMMA)
  static constexpr int kLdS = kBK + 4, kLdO = D + 4;  // F32 elements (multiples of 4)
  static constexpr int kLdP = kBK + 8;                // BF16
  static constexpr size_t round128(size_t b) { return (b + 127) / 128 * 128; }
  static constexpr size_t kOffQ = 0;
  static constexpr size_t kOffK = kOffQ + round128(size_t(kBQ) * kLdQ * 2);
  static constexpr size_t kOffV = kOffK + round128(size_t(kBK) * kLdK * 2);
  static constexpr size_t kOffS = kOffV + round128(size_t(kBK) * kLdK * 2);
  static constexpr size_t kOffP = kOffS + round128(size_t(kWarps) * 16 * kLdS * 4);
  static constexpr size_t kOffO = kOffP + round128(size_t(kWarps) * 16 * kLdP * 2);
  static constexpr size_t kSmem = kOffO + round128(size_t(kWarps) * 16 * kLdO * 4);
};

// rows x D BF16 elements from global rows (row_of(r) < 0: zero row) into shared memory (ld).
template <int D, int kThreads, class RowOf>
__device__ __forceinline__ void load_tile(uint16_t* dst, int ld, int rows, const uint16_t* src, int64_t col0,
                                          bool vec, RowOf row_of) {
  if (vec) {
    constexpr int kV = D / 8;  // 16-byte vectors per row
    for (int idx = threadIdx.x; idx < rows * kV; idx += kThreads) {
      const int r = idx / kV, c = (idx - r * kV) * 8;
      const int64_t g = row_of(r);
      uint4 val = make_uint4(0, 0, 0, 0);
      if (g >= 0) val = *reinterpret_cast<const uint4*>(src + g + col0 + c);
      *reinterpret_cast<uint4*>(dst + r * ld + c) = val;
    }
  } else {
    for (int idx = threadIdx.x; idx < rows * D; idx += kThreads) {
      const int r = idx / D, c = idx - r * D;
      const int64_t g = row_of(r);
      dst[r * ld + c] = g >= 0 ? src[g + col0 + c] : uint16_t(0);
    }
  }
}

// rows x D elements of kv head kvh from an FP8 pool (pool_row(r) < 0: zero row), as BF16.
template <int D, int kThreads, class PoolRow>
__device__ __forceinline__ void load_tile_fp8(uint16_t* dst, int ld, int rows, const uint8_t* src, const float* scale,
                                              int n_kv_heads, int kvh, PoolRow pool_row) {
  for (int idx = threadIdx.x; idx < rows * D; idx += kThreads) {
    const int r = idx / D, c = idx - r * D;
    const int64_t g = pool_row(r);
    dst[r * ld + c] = g >= 0 ? f32_to_bf16_bits(kvfp8::element(src, scale, g, n_kv_heads, D, kvh, c)) : uint16_t(0);
  }
}

template <int D, bool kPaged, bool kFp8 = false>
__global__ void __launch_bounds__(128) attention_tile_kernel(TileArgs a) {
  using namespace nvcuda;
  using C = TileCfg<D>;
  constexpr int kBQ = C::kBQ, kBK = C::kBK, kHalfK = kBK / 2;

  const int s = blockIdx.z, h = blockIdx.y;
  const int q_begin = a.cu_q[s], len_q = a.cu_q[s + 1] - q_begin;
  const int q0 = blockIdx.x * kBQ;
  if (q0 >= len_q) return;  // the whole block leaves before any barrier
  int k_begin = 0, len_k;
  if (kPaged) {
    len_k = a.seq_lens[s];
  } else {
    k_begin = a.cu_k[s];
    len_k = a.cu_k[s + 1] - k_begin;
  }
  const bool causal = kPaged || a.causal;
  const int offset = len_k - len_q;  // query row t sees keys j <= t + offset when causal
  const int last_row = min(q0 + kBQ, len_q) - 1;
  int k_end = causal ? min(len_k, last_row + offset + 1) : len_k;
  if (k_end < 0) k_end = 0;
  const int kvh = h / (a.n_heads / a.n_kv_heads);

  extern __shared__ __align__(128) unsigned char smem[];
  uint16_t* Qs = reinterpret_cast<uint16_t*>(smem + C::kOffQ);
  uint16_t* Ks = reinterpret_cast<uint16_t*>(smem + C::kOffK);
  uint16_t* Vs = reinterpret_cast<uint16_t*>(smem + C::kOffV);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* Sw = reinterpret_cast<float*>(smem + C::kOffS) + warp * 16 * C::kLdS;
  uint16_t* Pw = reinterpret_cast<uint16_t*>(smem + C::kOffP) + warp * 16 * C::kLdP;
  float* Ow = reinterpret_cast<float*>(smem + C::kOffO) + warp * 16 * C::kLdO;

  // Q tile (rows past len_q are zero) and this warp's O accumulator = 0.
  load_tile<D, C::kThreads>(Qs, C::kLdQ, kBQ, a.q, static_cast<int64_t>(h) * D, a.vec_q, [&](int r) -> int64_t {
    return q0 + r < len_q ? static_cast<int64_t>(q_begin + q0 + r) * a.q_stride : -1;
  });
  for (int idx = lane; idx < 16 * D; idx += 32) Ow[(idx / D) * C::kLdO + idx % D] = 0.0f;
  __syncthreads();

  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> qf[D / 16];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    wmma::load_matrix_sync(qf[kk], reinterpret_cast<const __nv_bfloat16*>(Qs + warp * 16 * C::kLdQ + kk * 16),
                           C::kLdQ);

  // Softmax bookkeeping: lane owns row r of the warp's 16 and one half of each key tile; the two
  // lanes of a row (lane ^ 1) keep identical copies of m and l.
  const int r = lane >> 1, half = lane & 1;
  const int q_row = q0 + warp * 16 + r;  // row within the sequence (may be >= len_q: unused)
  const int vis_end = causal ? q_row + offset + 1 : len_k;
  float m_run = -INFINITY, l_run = 0.0f;

  for (int k0 = 0; k0 < k_end; k0 += kBK) {
    __syncthreads();  // every warp is done with the previous K/V tile
    auto pool_row = [&](int rr) -> int64_t {  // the row of key k0 + rr in the K/V pools, or -1
      const int j = k0 + rr;
      if (j >= len_k) return -1;
      if (kPaged)
        return static_cast<int64_t>(a.block_tables[static_cast<int64_t>(s) * a.max_blocks + j / a.block_size]) *
                   a.block_size + j % a.block_size;
      return k_begin + j;
    };
    if constexpr (kFp8) {
      load_tile_fp8<D, C::kThreads>(Ks, C::kLdK, kBK, a.k_fp8, a.k_scale, a.n_kv_heads, kvh, pool_row);
      load_tile_fp8<D, C::kThreads>(Vs, C::kLdK, kBK, a.v_fp8, a.v_scale, a.n_kv_heads, kvh, pool_row);
    } else {
      auto kv_row = [&](int rr) -> int64_t {
        const int64_t row = pool_row(rr);
        return row < 0 ? -1 : row * a.kv_stride;
      };
      load_tile<D, C::kThreads>(Ks, C::kLdK, kBK, a.k, static_cast<int64_t>(kvh) * D, a.vec_kv, kv_row);
      load_tile<D, C::kThreads>(Vs, C::kLdK, kBK, a.v, static_cast<int64_t>(kvh) * D, a.vec_kv, kv_row);
    }
    __syncthreads();

    // S[16, kBK] = Q K^T (K tile read as a column-major B operand).
#pragma unroll
    for (int n0 = 0; n0 < kBK; n0 += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> kf;
        wmma::load_matrix_sync(kf, reinterpret_cast<const __nv_bfloat16*>(Ks + n0 * C::kLdK + kk * 16), C::kLdK);
        wmma::mma_sync(acc, qf[kk], kf, acc);
      }
      wmma::store_matrix_sync(Sw + n0, acc, C::kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax of row r over this tile (base 2).
    float sv[kHalfK];
    float mx = -INFINITY;
#pragma unroll
    for (int t = 0; t < kHalfK; ++t) {
      const int j = k0 + half * kHalfK + t;
      float v = Sw[r * C::kLdS + half * kHalfK + t] * a.scale_log2;
      if (j >= len_k || j >= vis_end) v = -INFINITY;
      sv[t] = v;
      mx = fmaxf(mx, v);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m_run, mx);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // nothing visible yet: keep everything 0
    const float alpha = exp2f(m_run - m_use);
    float psum = 0.0f;
#pragma unroll
    for (int t = 0; t < kHalfK; ++t) {
      const uint16_t pb = f32_to_bf16_bits(exp2f(sv[t] - m_use));
      Pw[r * C::kLdP + half * kHalfK + t] = pb;
      psum += bf16_bits_to_f32(pb);  // l sums exactly the weights the P V product uses
    }
    psum += __shfl_xor_sync(0xffffffffu, psum, 1);
    l_run = l_run * alpha + psum;
    m_run = m_new;
    // Rescale this row of O (the lane pair splits its columns, interleaved).
    for (int c = half; c < D; c += 2) Ow[r * C::kLdO + c] *= alpha;
    __syncwarp();

    // O[16, D] += P[16, kBK] V[kBK, D].
#pragma unroll
    for (int n0 = 0; n0 < D; n0 += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, Ow + n0, C::kLdO, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kBK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> pf;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> vf;
        wmma::load_matrix_sync(pf, reinterpret_cast<const __nv_bfloat16*>(Pw + kk), C::kLdP);
        wmma::load_matrix_sync(vf, reinterpret_cast<const __nv_bfloat16*>(Vs + kk * C::kLdK + n0), C::kLdK);
        wmma::mma_sync(acc, pf, vf, acc);
      }
      wmma::store_matrix_sync(Ow + n0, acc, C::kLdO, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (q_row < len_q) {
    const float inv_l = l_run > 0.0f ? 1.0f / l_run : 0.0f;
    uint16_t* o = a.out + static_cast<int64_t>(q_begin + q_row) * a.out_stride + static_cast<int64_t>(h) * D;
    for (int c = half; c < D; c += 2) o[c] = f32_to_bf16_bits(Ow[r * C::kLdO + c] * inv_l);
  }
}

}  // namespace locr::kernels::cuda::detail
