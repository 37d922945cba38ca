// The Qwen3.5 family's kernels of the CUDA backend (cuda_api.h): LayerNorm, bias add, tanh-GELU,
// the sigmoid gate, and the Gated DeltaNet layers' causal conv1d + SiLU and gated delta rule. F32
// activations and parameters, F32 arithmetic (expf / log1pf / rsqrtf, no fast math). The recurrent
// kernels read the step's device arrays (cu_q, slots, fresh) when they run, so a captured graph
// replays with new contents; the host sizes the grids from n_seqs and max_q only. The oracles are
// the host defaults of kernels::Ops (kernels/ops_qwen35.cc); tests/cuda/qwen35_test.cc and the op
// table (tests/unit/op_table_test.cc) compare against them.
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_util.cuh"

namespace locr::kernels::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

// ---- Element-wise ----

// One block per row; two passes (mean, then the squared deviations), each a block sum.
__global__ void layer_norm_f32_kernel(const float* x, int64_t x_stride, const float* w, const float* b, float eps,
                                      int64_t dim, float* y, int64_t y_stride) {
  __shared__ float scratch[33];
  const float* xr = x + blockIdx.x * x_stride;
  float* yr = y + blockIdx.x * y_stride;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) s += xr[i];
  const float mean = block_sum(s, scratch) / static_cast<float>(dim);
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float d = xr[i] - mean;
    ss = fmaf(d, d, ss);
  }
  const float inv = rsqrtf(block_sum(ss, scratch) / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = fmaf((xr[i] - mean) * inv, w[i], b[i]);
}

__global__ void add_bias_f32_kernel(float* y, int64_t y_stride, const float* b, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    y[r * y_stride + c] += b[c];
  }
}

// x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): for very negative x, e^(-2u) overflows to
// inf and the value to -0, as it should.
__global__ void gelu_tanh_f32_kernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float u2 = v * fmaf(v * v, 2.0f * 0.7978845608028654f * 0.044715f, 2.0f * 0.7978845608028654f);
    x[i] = v / (1.0f + expf(-u2));
  }
}

__global__ void sigmoid_mul_f32_kernel(const float* gate, int64_t gate_stride, const float* x, int64_t x_stride,
                                       float* out, int64_t out_stride, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    out[r * out_stride + c] = x[r * x_stride + c] / (1.0f + expf(-gate[r * gate_stride + c]));
  }
}

// ---- Causal conv1d + SiLU ----

constexpr int kConvRows = 16;  // rows of a sequence per block

// Block (channel tile, row tile, sequence): each thread one channel over the tile's rows, the
// window of its last K inputs in registers. Window row u of a sequence is state row u (u < K-1;
// zero when fresh), then row u - (K-1) of x. The state is only read here.
__global__ void conv1d_silu_kernel(const float* x, int64_t x_stride, const float* w, int64_t C, int K,
                                   const float* state, const int32_t* cu_q, const int32_t* slots,
                                   const int32_t* fresh, float* out, int64_t out_stride) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int seq = blockIdx.z;
  const int64_t r0 = cu_q[seq], n = cu_q[seq + 1] - r0, t0 = static_cast<int64_t>(blockIdx.y) * kConvRows;
  if (c >= C || t0 >= n) return;
  const int64_t t1 = t0 + kConvRows < n ? t0 + kConvRows : n;
  const int S = K - 1;
  const float* st = state + static_cast<int64_t>(slots[seq]) * S * C;
  const bool zero = fresh[seq] != 0;
  float wj[kConvMaxKernel], win[kConvMaxKernel];
#pragma unroll
  for (int j = 0; j < kConvMaxKernel; ++j) {
    wj[j] = j < K ? w[c * K + j] : 0.0f;
    win[j] = 0.0f;
  }
#pragma unroll
  for (int j = 0; j < kConvMaxKernel; ++j) {  // window rows t0 .. t0 + K-2
    const int64_t u = t0 + j;
    if (j < S) win[j] = u < S ? (zero ? 0.0f : st[u * C + c]) : x[(r0 + u - S) * x_stride + c];
  }
  for (int64_t t = t0; t < t1; ++t) {
    const float xt = x[(r0 + t) * x_stride + c];
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kConvMaxKernel; ++j) {
      if (j < S) acc = fmaf(wj[j], win[j], acc);
      if (j == S) acc = fmaf(wj[j], xt, acc);
    }
    out[(r0 + t) * out_stride + c] = acc / (1.0f + expf(-acc));
#pragma unroll
    for (int j = 0; j + 1 < kConvMaxKernel; ++j)
      if (j + 1 < S) win[j] = win[j + 1];
    if (S > 0) {
#pragma unroll
      for (int j = 0; j < kConvMaxKernel; ++j)
        if (j == S - 1) win[j] = xt;
    }
  }
}

// After the outputs: each sequence's last K-1 window rows into its slot, one thread per channel,
// ascending (state row u reads window row n + u > u before anything overwrites it).
__global__ void conv1d_state_kernel(const float* x, int64_t x_stride, int64_t C, int K, float* state,
                                    const int32_t* cu_q, const int32_t* slots, const int32_t* fresh) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int seq = blockIdx.y;
  const int64_t r0 = cu_q[seq], n = cu_q[seq + 1] - r0;
  if (c >= C || n <= 0) return;
  const int S = K - 1;
  float* st = state + static_cast<int64_t>(slots[seq]) * S * C;
  const bool zero = fresh[seq] != 0;
  for (int u = 0; u < S; ++u) {
    const int64_t src = n + u;
    st[u * C + c] = src < S ? (zero ? 0.0f : st[src * C + c]) : x[(r0 + src - S) * x_stride + c];
  }
}

// ---- Gated delta rule ----

// Per row: (decay = exp(g), beta) of each value head, then (ik, iq, kq) of each key head: ik =
// rsqrt(|k|^2 + eps), iq = rsqrt(|q|^2 + eps) / sqrt(k_dim), kq = (ik k).(iq q). One block per row,
// a warp per key head.
__global__ void gdn_prep_kernel(GatedDeltaNet p, float* scal, int scal_stride) {
  const int64_t r = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  float* sc = scal + r * scal_stride;
  for (int h = threadIdx.x; h < p.n_v_heads; h += blockDim.x) {
    const float x = p.a[r * p.a_stride + h] + p.dt_bias[h];
    const float softplus = x > 20.0f ? x : log1pf(expf(x));  // torch's: beta 1, threshold 20
    sc[2 * h] = expf(-expf(p.a_log[h]) * softplus);
    sc[2 * h + 1] = 1.0f / (1.0f + expf(-p.b[r * p.b_stride + h]));
  }
  for (int kh = warp; kh < p.n_k_heads; kh += nw) {
    const float* q = p.q + r * p.q_stride + static_cast<int64_t>(kh) * p.k_dim;
    const float* k = p.k + r * p.k_stride + static_cast<int64_t>(kh) * p.k_dim;
    float sq = 0.0f, sk = 0.0f, skq = 0.0f;
    for (int i = lane; i < p.k_dim; i += 32) {
      sq = fmaf(q[i], q[i], sq);
      sk = fmaf(k[i], k[i], sk);
      skq = fmaf(k[i], q[i], skq);
    }
    sq = warp_sum(sq);
    sk = warp_sum(sk);
    skq = warp_sum(skq);
    if (lane == 0) {
      const float ik = rsqrtf(sk + p.l2_eps), iq = rsqrtf(sq + p.l2_eps) * rsqrtf(static_cast<float>(p.k_dim));
      float* o = sc + 2 * p.n_v_heads + 3 * kh;
      o[0] = ik;
      o[1] = iq;
      o[2] = skq * ik * iq;
    }
  }
}

constexpr int kGdnCols = 32;  // state columns per block: lane = column
constexpr int kGdnRows = 32;  // state rows per warp (warps = ceil(k_dim / 32))

// Block (column tile, value head, sequence): warp w holds rows [32w, 32w + 32) of the tile's 32
// columns of the head's state in registers, over all of the sequence's rows. Per row, with k' = ik
// k and q' = iq q (raw k and q in shared memory):
//   sk = S^T k, sq = S^T q (warp partials summed through shared memory);
//   d = (v - decay ik sk) beta;  out = decay iq sq + d kq;  S = decay S + k (ik d)^T.
// The next row's k and q are loaded into registers while this one computes.
__global__ void gdn_kernel(GatedDeltaNet p, const int32_t* cu_q, const int32_t* slots, const int32_t* fresh,
                           const float* scal, int scal_stride) {
  extern __shared__ float sm[];
  const int KD = p.k_dim, VD = p.v_dim, nv = p.n_v_heads;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int h = blockIdx.y, seq = blockIdx.z, kh = p.tiled ? h % p.n_k_heads : h / (nv / p.n_k_heads);
  const int j = blockIdx.x * kGdnCols + lane;
  const bool col = j < VD;
  const int64_t r0 = cu_q[seq], n = cu_q[seq + 1] - r0;
  if (n <= 0) return;
  float* ks = sm;            // [KD]
  float* qs = sm + KD;       // [KD]
  float* red = sm + 2 * KD;  // [2][nw][32]
  float* S = p.state + static_cast<int64_t>(slots[seq]) * nv * KD * VD + static_cast<int64_t>(h) * KD * VD;
  const bool zero = fresh[seq] != 0;
  const int i0 = warp * kGdnRows;
  float s[kGdnRows];
#pragma unroll
  for (int e = 0; e < kGdnRows; ++e) {
    const int i = i0 + e;
    s[e] = (!zero && col && i < KD) ? S[static_cast<int64_t>(i) * VD + j] : 0.0f;
  }
  const int tid = threadIdx.x;  // < nw * 32 >= KD: thread tid loads element tid of k and q
  const int64_t qk_off = static_cast<int64_t>(kh) * KD + tid;
  float next_k = 0.0f, next_q = 0.0f;
  if (tid < KD) {
    next_k = p.k[r0 * p.k_stride + qk_off];
    next_q = p.q[r0 * p.q_stride + qk_off];
  }
  for (int64_t t = 0; t < n; ++t) {
    const int64_t r = r0 + t;
    // Loads of this row that do not wait for the state.
    const float* sc = scal + r * scal_stride;
    const float decay = sc[2 * h], beta = sc[2 * h + 1];
    const float* kq = sc + 2 * nv + 3 * kh;
    const float ik = kq[0], iq = kq[1], dot = kq[2];
    const float vj = col ? p.v[r * p.v_stride + static_cast<int64_t>(h) * VD + j] : 0.0f;
    __syncthreads();  // the previous row is done with ks, qs and red
    if (tid < KD) {
      ks[tid] = next_k;
      qs[tid] = next_q;
      if (t + 1 < n) {
        next_k = p.k[(r + 1) * p.k_stride + qk_off];
        next_q = p.q[(r + 1) * p.q_stride + qk_off];
      }
    }
    __syncthreads();
    float pk = 0.0f, pq = 0.0f;
#pragma unroll
    for (int e = 0; e < kGdnRows; ++e) {
      const int i = i0 + e;
      if (i < KD) {
        pk = fmaf(s[e], ks[i], pk);
        pq = fmaf(s[e], qs[i], pq);
      }
    }
    red[warp * 32 + lane] = pk;
    red[(nw + warp) * 32 + lane] = pq;
    __syncthreads();
    float sk = 0.0f, sq = 0.0f;
    for (int w = 0; w < nw; ++w) {
      sk += red[w * 32 + lane];
      sq += red[(nw + w) * 32 + lane];
    }
    const float d = (vj - decay * ik * sk) * beta;
    if (warp == 0 && col) p.out[r * p.out_stride + static_cast<int64_t>(h) * VD + j] = fmaf(d, dot, decay * iq * sq);
    const float dd = d * ik;
#pragma unroll
    for (int e = 0; e < kGdnRows; ++e) {
      const int i = i0 + e;
      if (i < KD) s[e] = fmaf(ks[i], dd, decay * s[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < kGdnRows; ++e) {
    const int i = i0 + e;
    if (col && i < KD) S[static_cast<int64_t>(i) * VD + j] = s[e];
  }
}

int scal_stride_of(const GatedDeltaNet& p) { return 2 * p.n_v_heads + 3 * p.n_k_heads; }

}  // namespace

void layer_norm_f32(const float* x, int64_t x_stride, const float* w, const float* b, float eps, int64_t rows,
                    int64_t dim, float* y, int64_t y_stride, Stream s) {
  if (rows <= 0 || dim <= 0) return;
  layer_norm_f32_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, x_stride, w, b, eps, dim, y, y_stride);
  LOCR_CUDA_LAUNCHED("layer_norm_f32");
}

void add_bias_f32(float* y, int64_t y_stride, const float* b, int64_t rows, int64_t cols, Stream s) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  add_bias_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(y, y_stride, b, rows, cols);
  LOCR_CUDA_LAUNCHED("add_bias_f32");
}

void gelu_tanh_f32(float* x, int64_t n, Stream s) {
  if (n <= 0) return;
  gelu_tanh_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(x, n);
  LOCR_CUDA_LAUNCHED("gelu_tanh_f32");
}

void sigmoid_mul_f32(const float* gate, int64_t gate_stride, const float* x, int64_t x_stride, float* out,
                     int64_t out_stride, int64_t rows, int64_t cols, Stream s) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  sigmoid_mul_f32_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(gate, gate_stride, x, x_stride, out, out_stride,
                                                                     rows, cols);
  LOCR_CUDA_LAUNCHED("sigmoid_mul_f32");
}

void conv1d_silu_f32(const float* x, int64_t x_stride, const float* w, int64_t C, int K, float* state,
                     const RecurrentBatch& b, float* out, int64_t out_stride, Stream s) {
  if (b.n_seqs <= 0 || b.max_q <= 0 || C <= 0) return;
  LOCR_CHECK(K >= 2 && K <= kConvMaxKernel, "conv1d_silu_f32: kernel ", K, " outside [2, ", kConvMaxKernel, "]");
  LOCR_CHECK(b.n_seqs <= 65535, "conv1d_silu_f32: ", b.n_seqs, " sequences in one launch");
  constexpr int kConvThreads = 128;
  const dim3 grid(static_cast<unsigned>(ceil_div(C, kConvThreads)), static_cast<unsigned>(ceil_div(b.max_q, kConvRows)),
                  static_cast<unsigned>(b.n_seqs));
  conv1d_silu_kernel<<<grid, kConvThreads, 0, s>>>(x, x_stride, w, C, K, state, b.cu_q, b.slots, b.fresh, out,
                                                   out_stride);
  LOCR_CUDA_LAUNCHED("conv1d_silu");
  const dim3 grid2(static_cast<unsigned>(ceil_div(C, kConvThreads)), static_cast<unsigned>(b.n_seqs));
  conv1d_state_kernel<<<grid2, kConvThreads, 0, s>>>(x, x_stride, C, K, state, b.cu_q, b.slots, b.fresh);
  LOCR_CUDA_LAUNCHED("conv1d_state");
}

size_t gated_delta_net_workspace(const GatedDeltaNet& p) {
  return static_cast<size_t>(p.rows > 0 ? p.rows : 0) * static_cast<size_t>(scal_stride_of(p)) * sizeof(float);
}

void gated_delta_net(const GatedDeltaNet& p, const RecurrentBatch& b, void* workspace, Stream s) {
  if (b.n_seqs <= 0 || p.rows <= 0) return;
  LOCR_CHECK(p.k_dim >= 1 && p.k_dim <= kDeltaNetMaxKeyDim, "gated_delta_net: k_dim ", p.k_dim, " outside [1, ",
             kDeltaNetMaxKeyDim, "]");
  LOCR_CHECK(p.n_k_heads > 0 && p.n_v_heads % p.n_k_heads == 0 && p.v_dim > 0, "gated_delta_net: heads ",
             p.n_k_heads, " / ", p.n_v_heads, " of ", p.v_dim);
  LOCR_CHECK(b.n_seqs <= 65535 && p.n_v_heads <= 65535, "gated_delta_net: grid of ", b.n_seqs, " sequences x ",
             p.n_v_heads, " heads");
  float* scal = static_cast<float*>(workspace);
  const int stride = scal_stride_of(p);
  gdn_prep_kernel<<<static_cast<unsigned>(p.rows), kThreads, 0, s>>>(p, scal, stride);
  LOCR_CUDA_LAUNCHED("gated_delta_net_prep");
  const int warps = static_cast<int>(ceil_div(p.k_dim, kGdnRows));
  const size_t smem = static_cast<size_t>(2 * p.k_dim + 2 * warps * 32) * sizeof(float);
  const dim3 grid(static_cast<unsigned>(ceil_div(p.v_dim, kGdnCols)), static_cast<unsigned>(p.n_v_heads),
                  static_cast<unsigned>(b.n_seqs));
  gdn_kernel<<<grid, warps * 32, smem, s>>>(p, b.cu_q, b.slots, b.fresh, scal, stride);
  LOCR_CUDA_LAUNCHED("gated_delta_net");
}

}  // namespace locr::kernels::cuda
