// The CUDA backend's host-callable API: device memory, streams, cuBLASLt GEMMs and the model's
// own kernels (one .cu per op group in this folder). Plain C++: no CUDA header leaks out, so the
// model-side GPU runner is ordinary .cc code. Built only with -DLOCR_CUDA=ON.
//
// Conventions (all kernels):
//   - every pointer argument is a DEVICE pointer unless the name says host_;
//   - every call is asynchronous on `stream` (nullptr = the legacy default stream);
//   - activations between kernels are BF16 (`bf16` = raw bfloat16 bits), except the decoder's
//     residual stream, logits and RoPE tables, which are F32; accumulation is always F32;
//   - matrices are row-major with an explicit row stride in elements where a view may be strided;
//   - the scalar oracle for every op is kernels/ref (tests/cuda compares against it).
// Not here: model structure, scheduling (src/model/lightonocr/cuda/, src/runtime).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

struct CUstream_st;

namespace locr::kernels::cuda {

using bf16 = uint16_t;
using Stream = CUstream_st*;  // == cudaStream_t

// ---- Devices, memory, streams. Failures throw locr::Error(kInternal) naming the call and CUDA's
// error string; nothing here aborts. ----

int device_count();                         // 0 when there is no driver or no device (never throws)
bool available(std::string* why = nullptr); // a device is usable; `why` says why not
std::string device_name(int device = 0);
std::string device_arch(int device = 0);  // "sm_90"
// The cuBLASLt file this process opened (cublaslt_loader.h), or "" when none could be opened.
std::string cublaslt_path();
const char* built_archs();  // LOCR_CUDA_ARCHS of this build, e.g. "90"
void set_device(int device);
void mem_info(size_t* free_bytes, size_t* total_bytes);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // cudaMalloc; zero bytes gives an empty buffer
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

Stream create_stream();
void destroy_stream(Stream s);
void synchronize(Stream s);
void copy_to_device(void* dst, const void* host_src, size_t bytes, Stream s);  // async if host_src is pinned
void copy_to_host(void* host_dst, const void* src, size_t bytes, Stream s);
void copy_device(void* dst, const void* src, size_t bytes, Stream s);
// `rows` rows of `width` bytes, row starts dst_pitch / src_pitch bytes apart (device to device).
void copy_device_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows,
                    Stream s);
void memset_device(void* dst, int value, size_t bytes, Stream s);
void* alloc_pinned(size_t bytes);  // page-locked host memory for async copies
void free_pinned(void* p);

// CUDA graphs for the decode step: capture everything launched on `s` between begin and end.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void begin_capture(Stream s);
  void end_capture(Stream s);  // instantiates (replacing any previous graph)
  void launch(Stream s) const;
  bool ready() const { return exec_ != nullptr; }

 private:
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

// ---- Conversions ----
void f32_to_bf16(const float* x, bf16* y, int64_t n, Stream s);  // round to nearest even
void bf16_to_f32(const bf16* x, float* y, int64_t n, Stream s);

// ---- GEMM (cuBLASLt): Y[M, N] = X[M, K] · W[N, K]^T (+ Y when accumulate).
// X and W are BF16 with row strides ldx >= K and ldw >= K; Y is F32 or BF16 (y_bf16) with row
// stride ldy >= N. F32 accumulation. Handles M = 0 (no-op) and any M, N, K >= 1. ----
class Gemm {
 public:
  explicit Gemm(size_t workspace_bytes = 32u << 20);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  void run(const bf16* x, int64_t M, int64_t K, int64_t ldx, const bf16* w, int64_t N, int64_t ldw, void* y,
           bool y_bf16, int64_t ldy, bool accumulate, Stream s);

 private:
  void* handle_ = nullptr;
  DeviceBuffer workspace_;
};

// ---- Quantized weights (quant_gemv.cu): GGUF Q8_0, Q4_K or Q6_K blocks as stored (`t`), N rows of K
// weights (K a whole number of blocks: 32 for Q8_0, 256 for the K types), dtype_row_bytes(t, K)
// bytes per row, row after row. Weights decode to exactly Matrix::at's values (quant_blocks.h). ----
constexpr int kQuantGemvMaxRows = 8;
// Y[M, N] = X[M, K] · W^T for 1 <= M <= kQuantGemvMaxRows (decode): F32 X as given, weights decoded to
// F32 in registers, F32 FMA chains per lane, the 32 lanes of a weight row's warp added by a shuffle
// tree. Y row stride N.
void quant_gemv(DType t, const void* w, int64_t N, int64_t K, const float* x, int64_t M, float* y, Stream s);
// out[r, :] = W[r, :] rounded to BF16 (nearest even), r < N, out row stride K (the many-row path:
// a GEMM on the dequantized rows).
void dequantize_to_bf16(DType t, const void* w, int64_t N, int64_t K, bf16* out, Stream s);
// out[i, :] = table[ids[i], :] as F32 (exact) for a quantized table of rows of `dim` weights (a
// GGUF's token_embd); ids are trusted, as embed's.
void embed_quantized(DType t, const void* table, int64_t dim, const int32_t* ids, int64_t n, float* out, Stream s);

// ---- Normalisation (RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, statistics in F32) ----
// x: [rows, dim] F32 with row stride x_stride; y: [rows, dim] BF16 with row stride y_stride.
void rms_norm(const float* x, int64_t x_stride, const bf16* w, float eps, int64_t rows, int64_t dim, bf16* y,
              int64_t y_stride, Stream s);
// Residual add then norm (the decoder's and encoder's pre-norm blocks):
//   x[r] += delta[r] (BF16 delta, row stride delta_stride; delta may be null = no add), then
//   y[r] = rms_norm(x[r]) * w.   x: F32 [rows, dim] contiguous.
void add_rms_norm(float* x, const bf16* delta, int64_t delta_stride, const bf16* w, float eps, int64_t rows,
                  int64_t dim, bf16* y, Stream s);
// Per-head RMSNorm in place (Qwen3 q_norm / k_norm): rows of n_heads heads of head_dim, row
// stride `stride`; every head normalised with the same w [head_dim].
void head_rms_norm(bf16* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const bf16* w,
                   float eps, Stream s);

// ---- RoPE, rotate-half form: for d < head_dim/2, (x[d], x[d + half]) rotated by angle a[r][d].
// 1-D (decoder): a[r][d] = positions[r] * theta^(-2d/head_dim) computed in F32 as transformers does
// (inv_freq in F32, then position * inv_freq in F32).
void rope_1d(bf16* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* positions,
             float theta, Stream s);
// Table form (the vision encoder's 2-D RoPE): cos/sin F32 [rows, head_dim/2].
void rope_table(bf16* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
                const float* sin, Stream s);

// ---- Element-wise ----
// gate_up: [rows, 2 * inter] (gate in the first half of each row, up in the second, as produced by
// one GEMM with the gate and up weights stacked); out[r, i] = silu(gate) * up, out: [rows, inter].
void silu_mul(const bf16* gate_up, int64_t rows, int64_t inter, bf16* out, Stream s);
void gelu(bf16* x, int64_t n, Stream s);  // exact erf GELU, in place, computed in F32
void add_f32_bf16(float* y, const bf16* x, int64_t n, Stream s);  // y += x

// ---- F32 activations (f32_ops.cu; what kernels::Ops on CUDA runs between its GEMMs) ----
// Each of the `groups` groups of dim of each row (row strides x_stride / y_stride): y = x *
// rsqrt(mean(x^2) + eps) * w; x and y may alias.
void rms_norm_f32(const float* x, int64_t x_stride, const bf16* w, float eps, int64_t rows, int64_t groups,
                  int64_t dim, float* y, int64_t y_stride, Stream s);
// rope_table on F32 rows in place.
void rope_table_f32(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
                    const float* sin, Stream s);
// out = silu(gate) * up over rows x cols with row strides; out may alias gate.
void silu_mul_f32(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                  int64_t out_stride, int64_t rows, int64_t cols, Stream s);
// y [rows, cols] contiguous = x [rows, cols] (row stride ldx) rounded to BF16 (nearest even).
void f32_to_bf16_2d(const float* x, int64_t ldx, int64_t rows, int64_t cols, bf16* y, Stream s);
void gelu_f32(float* x, int64_t n, Stream s);
void add_f32(float* y, const float* x, int64_t n, Stream s);  // y += x

// ---- The Qwen3.5 family (qwen35.cu): F32 activations and F32 parameters (exact copies of the
// checkpoint's vectors), F32 arithmetic; the oracles are the host defaults of kernels::Ops
// (kernels/ops_qwen35.cc). ----
// y = (x - mean) * rsqrt(biased var + eps) * w + b per row (statistics in F32, two passes); x and
// y may alias.
void layer_norm_f32(const float* x, int64_t x_stride, const float* w, const float* b, float eps, int64_t rows,
                    int64_t dim, float* y, int64_t y_stride, Stream s);
void add_bias_f32(float* y, int64_t y_stride, const float* b, int64_t rows, int64_t cols, Stream s);  // y[r] += b
// In place gelu_pytorch_tanh, as x / (1 + exp(-2u)) (= 0.5 x (1 + tanh u), without its cancellation).
void gelu_tanh_f32(float* x, int64_t n, Stream s);
// out = x * sigmoid(gate), rows x cols with row strides; out may alias x.
void sigmoid_mul_f32(const float* gate, int64_t gate_stride, const float* x, int64_t x_stride, float* out,
                     int64_t out_stride, int64_t rows, int64_t cols, Stream s);

// The step of a recurrent (Gated DeltaNet) layer, as kernels::StateBatch: the DEVICE arrays are
// read when the kernels run (a captured graph replays with new contents); n_seqs and max_q size
// the launch. A sequence without rows is skipped (its slot untouched).
struct RecurrentBatch {
  const int32_t* cu_q = nullptr;   // [n_seqs + 1]
  const int32_t* slots = nullptr;  // [n_seqs]
  const int32_t* fresh = nullptr;  // [n_seqs], != 0: start from a zero state
  int n_seqs = 0;
  int max_q = 0;  // longest row run of any replay of the launch
};
constexpr int kConvMaxKernel = 8;
// Causal depthwise conv1d + SiLU of every sequence (kernels::Ops::conv1d_silu): w [C, K] F32
// (K <= kConvMaxKernel), state [n_slots, (K-1) * C] F32 (K-1 inputs of C channels, oldest first).
void conv1d_silu_f32(const float* x, int64_t x_stride, const float* w, int64_t C, int K, float* state,
                     const RecurrentBatch& b, float* out, int64_t out_stride, Stream s);

// The gated delta rule of every sequence (kernels::Ops::gated_delta_net): per row, value head h
// (key head h / (n_v_heads / n_k_heads)) and [k_dim, v_dim] state slot S of the head,
//   q' = l2norm(q) / sqrt(k_dim), k' = l2norm(k), beta = sigmoid(b), g = -exp(a_log) softplus(a + dt_bias),
//   S = S exp(g); d = (v - S^T k') beta; S = S + k' d^T; out = S^T q'.
// k_dim <= kDeltaNetMaxKeyDim. Each block keeps 32 columns of one head's state in registers.
constexpr int kDeltaNetMaxKeyDim = 256;
struct GatedDeltaNet {
  const float* q = nullptr;  // [rows, n_k_heads * k_dim] (q_stride)
  const float* k = nullptr;  // [rows, n_k_heads * k_dim] (k_stride)
  const float* v = nullptr;  // [rows, n_v_heads * v_dim] (v_stride)
  const float* a = nullptr;  // [rows, n_v_heads] (a_stride)
  const float* b = nullptr;  // [rows, n_v_heads] (b_stride): beta before its sigmoid
  float* out = nullptr;      // [rows, n_v_heads * v_dim] (out_stride)
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, a_stride = 0, b_stride = 0, out_stride = 0;
  const float* a_log = nullptr;    // [n_v_heads] F32
  const float* dt_bias = nullptr;  // [n_v_heads] F32
  float* state = nullptr;          // [n_slots, n_v_heads * k_dim * v_dim]
  int64_t rows = 0;                // rows of the step (cu_q[n_seqs] of every replay)
  int n_k_heads = 0, n_v_heads = 0, k_dim = 0, v_dim = 0;
  int tiled = 0;  // DeltaNetParams::tiled: value head h reads key head h % n_k_heads, else h / (n_v / n_k)
  float l2_eps = 1e-6f;
};
// Scratch bytes gated_delta_net needs (the per-row gates and norms).
size_t gated_delta_net_workspace(const GatedDeltaNet& p);
void gated_delta_net(const GatedDeltaNet& p, const RecurrentBatch& b, void* workspace, Stream s);

// ---- Embeddings and image rows ----
// out[i, :] = table[ids[i], :] as F32 (table BF16 [vocab, dim]).
void embed(const bf16* table, const int32_t* ids, int64_t n, int64_t dim, float* out, Stream s);
// dst[dst_rows[i], :] = src[i, :] for i < n (image embeddings into the prompt's rows). F32 both.
void scatter_rows(const float* src, const int32_t* dst_rows, int64_t n, int64_t dim, float* dst, Stream s);
// Gather: dst[i, :] = src[src_rows[i], :] (the rows whose logits are needed). F32 both.
void gather_rows(const float* src, const int32_t* src_rows, int64_t n, int64_t dim, float* dst, Stream s);

// ---- Projector ----
// Channel-major m x m patch merge of one image (see model::patch_merge):
// in [grid_h*grid_w, d] -> out [(grid_h/m)*(grid_w/m), d*m*m],
// out[i*(gw/m)+j][c*m*m + a*m + b] = in[(m*i+a)*gw + (m*j+b)][c]; odd trailing rows/cols dropped.
void patch_merge(const bf16* in, int grid_h, int grid_w, int64_t d, int m, bf16* out, Stream s);

// ---- Attention (FlashAttention-2 style: tiled, online softmax in F32, no n x n buffer) ----
// Packed variable-length sequences (the vision encoder: several images, no cross-image attention;
// also causal prefill of whole prompts). Sequence i owns query rows cu_q[i]..cu_q[i+1]-1 and key
// rows cu_k[i]..cu_k[i+1]-1. Causal: query t of a sequence sees keys j <= t + (len_k - len_q).
// GQA: query head h reads kv head h / (n_heads / n_kv_heads).
struct VarlenAttention {
  const bf16* q = nullptr;  // [total_q, q_stride]
  const bf16* k = nullptr;  // [total_k, kv_stride]
  const bf16* v = nullptr;  // [total_k, kv_stride]
  bf16* out = nullptr;      // [total_q, out_stride]
  const int32_t* cu_q = nullptr;  // [n_seqs + 1], device
  const int32_t* cu_k = nullptr;  // [n_seqs + 1], device
  int n_seqs = 0;
  int max_q = 0;  // longest query run (grid sizing)
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;  // head_dim in {64, 128, 256}
  int64_t q_stride = 0, kv_stride = 0, out_stride = 0;
  float scale = 1.0f;
  bool causal = false;
};
void attention_varlen(const VarlenAttention& p, Stream s);

// Paged KV cache, one pool per layer: k_cache/v_cache [n_blocks * block_size, n_kv_heads * head_dim]
// BF16. Row j of sequence i lives at block_tables[i * max_blocks + j / block_size] * block_size +
// j % block_size.
// Store the new keys/values: row r goes to pool row slots[r] (r < n).
void kv_store(const bf16* k, const bf16* v, int64_t stride, const int32_t* slots, int64_t n, int64_t width,
              bf16* k_cache, bf16* v_cache, Stream s);
// The FP8 E4M3 cache (--kv-cache-dtype fp8; kv_fp8.cu): pools of bytes [rows, n_kv_heads * head_dim]
// with one F32 scale per pool row and kv head ([rows, n_kv_heads]); element = fp8_e4m3_to_f32(byte) *
// scale (core/fp8.h). Stores F32 rows r < n of k and v (row stride `stride`) at pool rows slots[r]
// (a slot < 0 is a padding row: skipped) with the bytes and scales kernels::kv_store_host writes.
void kv_store_fp8(const float* k, const float* v, int64_t stride, const int32_t* slots, int64_t n, int n_kv_heads,
                  int head_dim, uint8_t* k_cache, uint8_t* v_cache, float* k_scale, float* v_scale, Stream s);
// Causal attention of new query rows against the paged cache (prefill chunks and decode alike).
// Sequence i has query rows cu_q[i]..cu_q[i+1]-1 at positions seq_lens[i] - q_len_i .. seq_lens[i]-1,
// whose keys are already stored; it attends to cache rows 0..position.
struct PagedAttention {
  const bf16* q = nullptr;  // [total_q, q_stride]
  bf16* out = nullptr;      // [total_q, out_stride]
  const bf16* k_cache = nullptr;
  const bf16* v_cache = nullptr;
  // An FP8 cache instead (k_cache / v_cache unused when k_fp8 is set): bytes and scales as
  // kv_store_fp8 writes them. Decode reads them in F32; prefill tiles round fp8 * scale to BF16.
  const uint8_t* k_fp8 = nullptr;
  const uint8_t* v_fp8 = nullptr;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  const int32_t* block_tables = nullptr;  // [n_seqs, max_blocks]
  int max_blocks = 0;
  const int32_t* cu_q = nullptr;      // [n_seqs + 1]
  const int32_t* seq_lens = nullptr;  // [n_seqs] total keys per sequence after this step
  int n_seqs = 0;
  int max_q = 0;        // longest query run; 1 for pure decode (selects the decode kernel)
  int max_seq_len = 0;  // longest seq_lens entry (split-K sizing)
  int block_size = 16;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, out_stride = 0;
  float scale = 1.0f;
};
// Scratch for split-K decode; bytes needed for the given problem (0 if none).
size_t paged_attention_workspace(const PagedAttention& p);
void paged_attention(const PagedAttention& p, void* workspace, Stream s);

// ---- Sampling on the device (no full-vocabulary sort) ----
// One row of logits per sequence. temperature <= 0 means greedy (argmax, lowest id on ties).
// Otherwise: logits / temperature, then top_k (0 = off), top_p (1 = off) and min_p (0 = off)
// filters found by threshold search, then one draw from a counter-based generator keyed by
// (seed, step) so a replay is reproducible.
struct SampleParams {
  float temperature = 0.0f;
  float top_p = 1.0f;
  float min_p = 0.0f;
  int32_t top_k = 0;
  uint64_t seed = 0;
  uint64_t step = 0;
};
// logits [n, V] F32 (row stride V); params [n] device; out_tokens [n] device.
// Also writes out_logprobs[n] (log-softmax of the raw logits at the chosen token) when non-null.
void sample(const float* logits, int64_t n, int64_t V, const SampleParams* params, int32_t* out_tokens,
            float* out_logprobs, Stream s);
// Workspace-free greedy: out[i] = argmax_j logits[i, j] (lowest index on ties).
void argmax(const float* logits, int64_t n, int64_t V, int32_t* out, Stream s);

}  // namespace locr::kernels::cuda
