// Token selection on the device, one block per logits row, no sort of the vocabulary:
//   - argmax (lowest id on ties) and greedy sampling (temperature <= 0, or top_k == 1);
//   - otherwise thresholds on the logit value, each found by bisection over the 32-bit ordered
//     encoding of floats (exact: the threshold is a value present in the row), with one pass over
//     the row and a block reduction per step:
//       top_k: the largest t with count(l >= t) >= k (ties at the k-th value are all kept);
//       top_p: within the top-k set, the largest t with mass(l >= t) >= top_p * mass(top-k set),
//              mass = sum of exp((l - max) / T) (F32, fixed reduction order, hence monotone in t);
//       min_p: exp((l - max) / T) >= min_p (relative to the top token, as runtime/sampler.cc);
//     then one draw by the Gumbel-max trick over the allowed set: argmax of (l - max) / T + g_j,
//     g_j = -log(-log(u_j)), which is an exact sample from the renormalised softmax. u_j comes
//     from Philox-4x32-10 keyed by the request's seed with counter (token id, step): a replay of
//     (seed, step) draws the same token whatever row of the batch the request sits in.
//   - out_logprobs: log-softmax of the raw (untempered) logits at the chosen token.
// Not here: penalties, logit bias, the host sampler (runtime/sampler.cc).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 1024;

// Order-preserving map float -> uint32 (negative floats reversed, positive above them).
__device__ __forceinline__ uint32_t ordered_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Philox-4x32-10 (Salmon et al., SC'11): first output word of the block at `ctr` under `key`.
__device__ __forceinline__ uint32_t philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                           uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int i = 0; i < 10; ++i) {
    const uint32_t hi0 = __umulhi(kM0, c0), lo0 = kM0 * c0;
    const uint32_t hi1 = __umulhi(kM1, c2), lo1 = kM1 * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return c0;
}

// Standard Gumbel noise for token j: u in (0, 1) from 23 random bits (exactly representable, never
// 0 or 1), g = -log(-log(u)).
__device__ __forceinline__ float gumbel(uint64_t seed, uint64_t step, uint32_t j) {
  const uint32_t bits = philox(j, 0u, static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32),
                               static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const float u = (static_cast<float>(bits >> 9) + 0.5f) * (1.0f / 8388608.0f);
  return -logf(-logf(u));
}

struct ArgMax {
  float v;
  int32_t i;
};

__device__ __forceinline__ ArgMax better(ArgMax a, ArgMax b) {
  // Larger value wins; equal values: lower index. -inf rows still give index 0... or the lowest.
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
  return a;
}

// Block-wide argmax; every thread gets the result. scratch: 32 ArgMax in shared memory.
__device__ ArgMax block_argmax(ArgMax x, ArgMax* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    ArgMax y;
    y.v = __shfl_xor_sync(0xffffffffu, x.v, o);
    y.i = __shfl_xor_sync(0xffffffffu, x.i, o);
    x = better(x, y);
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  ArgMax t = lane < nwarps ? scratch[lane] : ArgMax{-INFINITY, 0x7fffffff};
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    ArgMax y;
    y.v = __shfl_xor_sync(0xffffffffu, t.v, o);
    y.i = __shfl_xor_sync(0xffffffffu, t.i, o);
    t = better(t, y);
  }
  return t;
}

__device__ uint32_t block_count(uint32_t c, uint32_t* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  __syncthreads();
  if (lane == 0) scratch[warp] = c;
  __syncthreads();
  uint32_t t = lane < nwarps ? scratch[lane] : 0u;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  return t;
}

__device__ ArgMax row_argmax(const float* row, int64_t V, ArgMax* scratch) {
  ArgMax best{-INFINITY, 0x7fffffff};
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) best = better(best, ArgMax{row[j], static_cast<int32_t>(j)});
  best = block_argmax(best, scratch);
  if (best.i == 0x7fffffff) best.i = 0;  // a row of NaN / -inf only: token 0
  return best;
}

__global__ void argmax_kernel(const float* logits, int64_t V, int32_t* out) {
  __shared__ ArgMax scratch[32];
  const ArgMax best = row_argmax(logits + static_cast<int64_t>(blockIdx.x) * V, V, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = best.i;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* logits, int64_t V, const SampleParams* params,
                                                          int32_t* out_tokens, float* out_logprobs) {
  __shared__ ArgMax am_scratch[32];
  __shared__ float f_scratch[33];
  __shared__ uint32_t u_scratch[32];
  const int64_t row_id = blockIdx.x;
  const float* row = logits + row_id * V;
  const SampleParams p = params[row_id];

  const ArgMax top = row_argmax(row, V, am_scratch);
  const float mx = top.v;
  int32_t token = top.i;

  if (p.temperature > 0.0f && p.top_k != 1) {
    const float inv_t = 1.0f / p.temperature;
    // top_k threshold on the ordered key.
    uint32_t thr = 0;
    if (p.top_k > 0 && p.top_k < V) {
      uint32_t lo = 0, hi = 0xffffffffu;  // invariant: count(key >= lo) >= k
      while (lo < hi) {
        const uint32_t mid = lo + static_cast<uint32_t>((static_cast<uint64_t>(hi) - lo + 1) / 2);
        uint32_t c = 0;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) c += ordered_key(row[j]) >= mid ? 1u : 0u;
        c = block_count(c, u_scratch);
        if (c >= static_cast<uint32_t>(p.top_k)) lo = mid;
        else hi = mid - 1;
      }
      thr = lo;
    }
    // top_p threshold within the top-k set.
    if (p.top_p < 1.0f) {
      auto mass = [&](uint32_t t) {
        float m = 0.0f;
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
          const float l = row[j];
          if (ordered_key(l) >= t) m += expf((l - mx) * inv_t);
        }
        return block_sum(m, f_scratch);
      };
      const float target = p.top_p * mass(thr);
      uint32_t lo = thr, hi = 0xffffffffu;  // invariant: mass(lo) >= target
      while (lo < hi) {
        const uint32_t mid = lo + static_cast<uint32_t>((static_cast<uint64_t>(hi) - lo + 1) / 2);
        if (mass(mid) >= target) lo = mid;
        else hi = mid - 1;
      }
      thr = lo;
    }
    // Gumbel-max draw over the allowed set.
    ArgMax pick{-INFINITY, 0x7fffffff};
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
      const float l = row[j];
      if (ordered_key(l) < thr) continue;
      const float z = (l - mx) * inv_t;
      if (p.min_p > 0.0f && expf(z) < p.min_p) continue;
      pick = better(pick, ArgMax{z + gumbel(p.seed, p.step, static_cast<uint32_t>(j)), static_cast<int32_t>(j)});
    }
    pick = block_argmax(pick, am_scratch);
    if (pick.i != 0x7fffffff) token = pick.i;  // else nothing finite was allowed: keep the argmax
  }

  if (out_logprobs) {
    float se = 0.0f;
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) se += expf(row[j] - mx);
    se = block_sum(se, f_scratch);
    if (threadIdx.x == 0) out_logprobs[row_id] = row[token] - mx - logf(se);
  }
  if (threadIdx.x == 0) out_tokens[row_id] = token;
}

}  // namespace

void sample(const float* logits, int64_t n, int64_t V, const SampleParams* params, int32_t* out_tokens,
            float* out_logprobs, Stream s) {
  if (n <= 0 || V <= 0) return;
  sample_kernel<<<static_cast<unsigned>(n), kThreads, 0, s>>>(logits, V, params, out_tokens, out_logprobs);
  LOCR_CUDA_LAUNCHED("sample");
}

void argmax(const float* logits, int64_t n, int64_t V, int32_t* out, Stream s) {
  if (n <= 0 || V <= 0) return;
  argmax_kernel<<<static_cast<unsigned>(n), 512, 0, s>>>(logits, V, out);
  LOCR_CUDA_LAUNCHED("argmax");
}

}  // namespace locr::kernels::cuda
