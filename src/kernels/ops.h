// Backend-neutral kernel interface. The model code calls only these; backends implement them:
//   ref/  scalar oracle (never optimised; the source of truth for tests)
//   cpu/  fast CPU kernels, per-ISA, chosen once at start-up
//   cuda/ NVIDIA GPUs
//
// Conventions: ops read and write strided 2-D views (kernels/view.h) of activations in the
// backend's own memory (`alloc`: host memory for ref/cpu, device memory for CUDA); the model
// allocates through `alloc` and copies through `to_host` / `from_host`, so the same forward runs
// on every backend. Activations are F32. Weights stay in their checkpoint dtype (F32, BF16, F16 or
// a GGUF block type) as `Matrix` views; how a backend lays them out (packed panels, a stack fused
// into one GEMM, a device copy) it decides once at load (`prepare`, `prepare_stack`). Each public
// op checks its contract (dtypes, shapes, strides, memory kind) and aborts with the broken rule via
// LOCR_CHECK; kernels never throw. Fused and batched ops (add_rms_norm, kv_store, paged_attention,
// patch_merge) have defaults composed of the primitives or run on the host; a device backend
// overrides them.
//
// Threads: the host backends (ref, cpu) keep no mutable state between calls (their scratch is per
// calling thread, their pool ThreadPool::global() of the calling thread), so two threads may run
// ops at once, each on its own pool (the engine's vision lane, runtime/engine.h). A device backend
// orders its work on one stream and is driven from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/view.h"

namespace locr::kernels {

// A weight matrix [rows, cols] (PyTorch Linear layout [out, in]) or a vector (rows == 1).
struct Matrix {
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;
  std::shared_ptr<void> holder;  // keeps `data` alive (mmap or buffer)
  std::shared_ptr<void> packed;  // backend-specific prepared copy, or null

  static Matrix from_tensor(const Tensor& t);  // 1-D tensors become [1, n]
  // Element (r, c) as f32 (slow; for references and tests).
  float at(int64_t r, int64_t c) const;
};

// Attention's parameters. Ops::attention fills n_q, q_stride, kv_stride, out_stride and kv_dtype
// from its views; the backends' run_attention reads them all.
struct AttentionParams {
  int64_t n_q = 0;           // query rows
  int64_t n_kv = 0;          // key/value rows
  int64_t n_heads = 0;       // query heads
  int64_t n_kv_heads = 0;    // key/value heads (GQA: head h uses kv head h / (n_heads / n_kv_heads))
  int64_t head_dim = 0;
  int64_t q_stride = 0;      // floats between consecutive query rows (>= n_heads * head_dim)
  int64_t kv_stride = 0;     // floats between consecutive key (and value) rows
  int64_t out_stride = 0;    // floats between consecutive output rows
  float scale = 1.0f;
  bool causal = false;       // query i sits at position q_offset + i; sees keys j <= q_offset + i
  int64_t q_offset = 0;
  // The rows are a prompt's (prefill), not tokens being decoded or verified: the CPU backends
  // then compute them as they compute a whole prompt, however few they are, so that a prompt's
  // rows get the same bits whether it runs in one step, in chunks, or after a cached prefix.
  bool prompt_rows = false;
  // Paged KV: when block_table is set, key/value row j lives at row
  // block_table[j / block_size] * block_size + j % block_size of the k/v pools.
  const int32_t* block_table = nullptr;
  int64_t block_size = 0;
  // Element type of k and v: F32, BF16 for a BF16 KV cache (Ops::kv_dtype), or F8_E4M3 for an
  // FP8 one (--kv-cache-dtype fp8). q and out are F32.
  DType kv_dtype = DType::kF32;
  // F8_E4M3 only: one f32 scale per pool row and kv head (model::KvPool): key element
  // (row, kv head kh, d) is fp8_e4m3_to_f32(k[row * kv_stride + kh * head_dim + d]) *
  // k_scale[row * n_kv_heads + kh]; values likewise with v_scale.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;

  int64_t kv_row(int64_t j) const {
    return block_table ? static_cast<int64_t>(block_table[j / block_size]) * block_size + j % block_size : j;
  }
};

// One layer of the paged KV cache (model::KvPool::layer): rows of `width` = n_kv_heads * head_dim
// elements of `dtype` (F32, BF16, or F8_E4M3 with one f32 scale per row and kv head).
struct KvLayer {
  DType dtype = DType::kF32;
  void* k = nullptr;
  void* v = nullptr;
  float* k_scale = nullptr;  // F8_E4M3 only: [rows, n_kv_heads]
  float* v_scale = nullptr;
  int64_t n_kv_heads = 0, head_dim = 0;
  int64_t rows = 0;  // pool rows (blocks x block size)
  int64_t width() const { return n_kv_heads * head_dim; }
};

// The sequences of one decoder step for batched paged attention. Sequence i owns query rows
// cu_q[i] .. cu_q[i+1]-1, at positions seq_lens[i] - (cu_q[i+1] - cu_q[i]) .. seq_lens[i] - 1
// (their keys already stored), and its cache rows are listed by tables[i * max_blocks ...].
// The arrays live in backend memory; host_* are host copies of the same arrays (for backends that
// loop on the host, and for launch sizing; a device backend reads only the backend arrays at run
// time, so a captured graph replays with new contents at the same addresses).
struct PagedBatch {
  int64_t n_seqs = 0;
  const int32_t* cu_q = nullptr;      // [n_seqs + 1]
  const int32_t* seq_lens = nullptr;  // [n_seqs] keys per sequence after this step
  const int32_t* tables = nullptr;    // [n_seqs, max_blocks]
  const int32_t* host_cu_q = nullptr;
  const int32_t* host_seq_lens = nullptr;
  const int32_t* host_tables = nullptr;
  int64_t max_blocks = 0;
  int64_t block_size = 0;
  int64_t max_q = 0;        // longest query run (1: pure decode)
  int64_t max_seq_len = 0;  // longest seq_lens entry (device split-K sizing)
  // Host only, may be null: nonzero where sequence i's rows are prompt rows
  // (AttentionParams::prompt_rows).
  const int32_t* host_prompt = nullptr;
};

// The sequences of one decoder step for the recurrent (Gated DeltaNet) layers of the Qwen3.5
// family (model/qwen35/): sequence i owns rows cu_q[i] .. cu_q[i+1]-1 of the step's activations
// and state slot slots[i] of each recurrent layer's state pools; fresh[i] != 0 starts it from a
// zero state (its first tokens: the slot's old contents are ignored, then overwritten). The arrays
// live in backend memory; host_* are host copies (as PagedBatch).
struct StateBatch {
  int64_t n_seqs = 0;
  const int32_t* cu_q = nullptr;   // [n_seqs + 1]
  const int32_t* slots = nullptr;  // [n_seqs]
  const int32_t* fresh = nullptr;  // [n_seqs]
  const int32_t* host_cu_q = nullptr;
  const int32_t* host_slots = nullptr;
  const int32_t* host_fresh = nullptr;
  int64_t max_q = 0;  // longest row run (1: pure decode)
};

// Shapes of a Gated DeltaNet layer (Ops::gated_delta_net).
struct DeltaNetParams {
  int64_t n_k_heads = 0;  // query/key heads
  int64_t n_v_heads = 0;  // value heads, a multiple of n_k_heads (value head h reads key head key_head(h))
  int64_t k_dim = 0;      // query/key head width
  int64_t v_dim = 0;      // value head width
  float l2_eps = 1e-6f;   // the q/k L2 norm's epsilon (transformers' fixed 1e-6, not rms_norm_eps)
  // The value heads' order when they outnumber the key heads: false, transformers' (grouped by key
  // head: h reads key head h / (n_v / n_k)); true, llama.cpp's GGUF files' (tiled: h reads h % n_k).
  bool tiled = false;
  int64_t key_head(int64_t h) const { return tiled ? h % n_k_heads : h / (n_v_heads / n_k_heads); }
  // Floats of one slot of the recurrent state: n_v_heads * k_dim * v_dim.
  int64_t state_floats() const { return n_v_heads * k_dim * v_dim; }
};

// Weights that read the same input, stacked along their output rows (q/k/v, gate/up): one
// y[M, N_0 + N_1 + ...] = x · [W_0; W_1; ...]^T, part i's columns after part i-1's. How they are laid
// out is the backend's decision, made once at load by Ops::prepare_stack: one fused weight (one GEMM;
// `fused` then has rows = the parts' sum) or the parts as they are (a GEMM each into its columns).
struct StackedMatrix {
  std::vector<Matrix> parts;
  Matrix fused;  // rows == 0: not fused

  int64_t rows() const;  // sum of the parts' rows
  int64_t cols() const;
};

// The interface. The public members check each call's contract (dtype, shapes, strides, memory
// kind of the views) and dispatch to the backend's private run_* members, which may assume it.
class Ops {
 public:
  virtual ~Ops() = default;
  virtual const char* name() const = 0;

  // Optional: attach a packed copy of a weight for faster matmul. Default does nothing.
  virtual void prepare(Matrix& w) {}
  // Lays out a stack (StackedMatrix) once at load. Default: prepare() each part, no fusion.
  virtual void prepare_stack(StackedMatrix& w);
  // Optional, after prepare(): whatever makes matmul_argmax over this weight cheaper (the CPU
  // backends: an 8-bit screen of its rows, kernels/cpu/greedy_screen.h). Default does nothing.
  virtual void prepare_argmax(Matrix& w) {}
  // Bytes prepare_argmax added for w (0: none; matmul_argmax then reads all of w).
  virtual size_t argmax_extra_bytes(const Matrix& w) const { return 0; }

  // Element type this backend wants the decoder's KV cache in (attention reads it as given by
  // the KV views' dtype). F32 unless the backend computes in BF16 anyway.
  virtual DType kv_dtype() const { return DType::kF32; }

  // ---- Memory of this backend (host for ref/cpu) ----
  virtual bool host_memory() const { return true; }
  Memory memory() const { return host_memory() ? Memory::kHost : Memory::kDevice; }
  // A view of `rows` x `cols` F32 at p (this backend's memory), row stride `stride` (< 0: cols).
  // Views do not carry const: an op writes only the views its contract names as outputs.
  View f32(const float* p, int64_t rows, int64_t cols, int64_t stride = -1) const {
    return View(const_cast<float*>(p), DType::kF32, memory(), rows, cols, stride);
  }
  // n int32 (token ids, KV slots) at p as a [1, n] view.
  View i32(const int32_t* p, int64_t n) const { return View(const_cast<int32_t*>(p), DType::kI32, memory(), 1, n); }
  // `bytes` of backend memory, 64-byte aligned; contents undefined (host: committed on first touch).
  virtual std::shared_ptr<void> alloc(size_t bytes);
  virtual void to_host(void* host_dst, const void* src, size_t bytes);
  virtual void from_host(void* dst, const void* host_src, size_t bytes);
  // Waits for queued work (device backends run asynchronously).
  virtual void synchronize() {}
  // Counts reallocations of the backend's internal scratch: work captured for replay (a CUDA
  // graph) before the count last changed points at freed memory.
  virtual uint64_t scratch_generation() const { return 0; }

  // ---- Ops. Views are F32 unless said; "strided" = any row stride, else contiguous. ----
  // y[M, N] = x[M, K] · W[N, K]^T (x, y strided).
  void matmul(const View& x, const Matrix& w, const View& y);
  // The same over a stack: y[M, w.rows()] (x, y strided).
  void matmul(const View& x, const StackedMatrix& w, const View& y);
  // out[m] (host, x.rows of them) = the index of the largest element of row m of x · W^T, the
  // lowest among equals: the argmax of what matmul writes, bit for bit (greedy decoding's token).
  // x strided. A backend may read less than all of W to find it (prepare_argmax).
  void matmul_argmax(const View& x, const Matrix& w, int32_t* out);
  // Each group of dim = w's length of each row: y = x / sqrt(mean(x^2) + eps) * w. x, y [rows,
  // cols] strided with cols a multiple of dim (one group per row, or one per head: q_norm over
  // [T, heads * head_dim]). x and y may be the same view.
  void rms_norm(const View& x, const Matrix& w, float eps, const View& y);
  // Rotate-half RoPE in place on x [rows, n_heads * head_dim] (strided): for d < head_dim/2,
  // (x[d], x[d+half]) of each head rotated by the angle of cos/sin [rows, head_dim/2] (contiguous).
  void rope(const View& x, const View& cos, const View& sin);
  // out = silu(gate) * up, all [rows, n] strided; out may be gate.
  void silu_mul(const View& gate, const View& up, const View& out);
  // In place exact (erf) GELU (contiguous).
  void gelu(const View& x);
  // y += x (same shape, contiguous).
  void add(const View& y, const View& x);
  // out = softmax(q k^T * p.scale [+ causal mask]) v per head, softmax in f32: q [n_q, heads *
  // head_dim] and out strided F32; k and v [rows, kv_heads * head_dim] strided, of one dtype: F32,
  // BF16, or F8_E4M3 with p.k_scale / p.v_scale. With p.block_table, k/v rows are a paged pool.
  // p.n_q, q_stride, kv_stride, out_stride and kv_dtype are taken from the views.
  void attention(const View& q, const View& k, const View& v, const View& out, const AttentionParams& p);
  // out[i, :] = table[ids[i], :] as f32; ids [1, n] I32 (this backend's memory), out [n, cols].
  // A backend may read the rows from table.packed, its prepared copy of the same weight (a tied
  // head's, which the model shares with the table), where that copy holds them exactly.
  void embed(const Matrix& table, const View& ids, const View& out);
  // x += delta; y = rms_norm(x) * w (one group per row; x, delta, y contiguous [rows, dim]).
  void add_rms_norm(const View& x, const View& delta, const Matrix& w, float eps, const View& y);
  // Stores row r of k and v [n, kv.width()] (strided) into pool row slots[r] of `kv` (slots [1, n]
  // I32), rounding to nearest even (BF16), or to E4M3 with each head's scale amax / 448 (F8_E4M3).
  void kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv);
  // Causal attention of every sequence of `b` against its paged keys/values in `kv`: q [rows,
  // heads * head_dim] strided -> out (same shape, strided), rows = b.host_cu_q[b.n_seqs].
  void paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale, const View& out);
  // The projector's channel-major m x m merge of one image (model::patch_merge): in [grid_h *
  // grid_w, d] -> out [(grid_h / m) * (grid_w / m), d * m * m] (integer division), both contiguous.
  void patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out);

  // ---- Ops of the Qwen3.5 family (LightOnOCR-3-0.8B / -4B, model/qwen35/) ----
  // y = (x - mean) / sqrt(var + eps) * w + b per row, biased variance in f32 (nn.LayerNorm); x, y
  // [rows, cols] strided, may be the same view; w and b of cols elements (any weight dtype).
  void layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y);
  // y[r, :] += b for every row: a biased Linear's bias (y strided, b of y.cols elements).
  void add_bias(const View& y, const Matrix& b);
  // In place 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (gelu_pytorch_tanh), contiguous.
  void gelu_tanh(const View& x);
  // out = x * sigmoid(gate), all [rows, n] strided; out may be x (not gate).
  void sigmoid_mul(const View& gate, const View& x, const View& out);
  // Causal depthwise conv1d over time, then SiLU, for every sequence of `b` (transformers'
  // causal_conv1d_fn / causal_conv1d_update): for row t of a sequence and channel c,
  //   out[t, c] = silu(sum_j w[c, j] * xs[t + j, c]),  j < K = w.cols,
  // where xs is the sequence's conv state (the K-1 inputs before its first row here, oldest first;
  // zeros when fresh) followed by its rows of x. Afterwards the state holds the sequence's last K-1
  // inputs. x, out [rows, C] strided (disjoint); w [C, K]; state [n_slots, (K-1) * C] F32
  // contiguous, slot row = K-1 inputs of C channels, oldest first.
  void conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b, const View& out);
  // The gated delta rule of every sequence of `b`, token by token (transformers'
  // torch_recurrent_gated_delta_rule with use_qk_l2norm_in_kernel), per row t and value head h
  // (key head kh = p.key_head(h)), S the head's [k_dim, v_dim] F32 state:
  //   q' = l2norm(q[t, kh]) / sqrt(k_dim);  k' = l2norm(k[t, kh]);  l2norm(x) = x * rsqrt(sum x^2 + l2_eps)
  //   beta = sigmoid(beta_in[t, h]);  g = -exp(a_log[h]) * softplus(a[t, h] + dt_bias[h])
  //   S = S * exp(g);  d = (v[t, h] - S^T k') * beta;  S = S + k' d^T;  out[t, h] = S^T q'
  // q, k [rows, n_k_heads * k_dim], v and out [rows, n_v_heads * v_dim], a and beta_in [rows,
  // n_v_heads]: strided F32 (out disjoint from the inputs); a_log, dt_bias: n_v_heads elements;
  // state [n_slots, p.state_floats()] F32 contiguous (slot = heads in order, each k_dim rows of v_dim).
  void gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                       const Matrix& a_log, const Matrix& dt_bias, const View& state, const StateBatch& b,
                       const DeltaNetParams& p, const View& out);

 protected:
  // matmul into backend memory, then the argmax of each row on the host.
  void argmax_of_matmul(const View& x, const Matrix& w, int32_t* out);

 private:
  // The backends' kernels, called after the public member checked the contract.
  virtual void run_matmul(const View& x, const Matrix& w, const View& y) = 0;
  // Default: argmax_of_matmul.
  virtual void run_matmul_argmax(const View& x, const Matrix& w, int32_t* out);
  virtual void run_rms_norm(const View& x, const Matrix& w, float eps, const View& y) = 0;
  virtual void run_rope(const View& x, const View& cos, const View& sin) = 0;
  virtual void run_silu_mul(const View& gate, const View& up, const View& out) = 0;
  virtual void run_gelu(const View& x) = 0;
  virtual void run_add(const View& y, const View& x) = 0;
  virtual void run_attention(const View& q, const View& k, const View& v, const View& out,
                             const AttentionParams& p) = 0;
  virtual void run_embed(const Matrix& table, const View& ids, const View& out) = 0;
  // Fused and batched ops. Defaults: the primitive ops in the order the model used them before
  // these existed (so the CPU backends' results are those of the primitives), or host loops.
  virtual void run_add_rms_norm(const View& x, const View& delta, const Matrix& w, float eps, const View& y);
  virtual void run_kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv);
  virtual void run_paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale,
                                   const View& out);
  virtual void run_patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out);  // Qwen3.5 family. Defaults: host loops (host memory only; a device backend overrides them all).
  virtual void run_layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y);
  virtual void run_add_bias(const View& y, const Matrix& b);
  virtual void run_gelu_tanh(const View& x);
  virtual void run_sigmoid_mul(const View& gate, const View& x, const View& out);
  virtual void run_conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b,
                               const View& out);
  virtual void run_gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                                   const Matrix& a_log, const Matrix& dt_bias, const View& state,
                                   const StateBatch& b, const DeltaNetParams& p, const View& out);
};

// Host implementations behind the defaults (also the oracles the device versions are tested against).
void kv_store_host(const float* k, int64_t k_stride, const float* v, int64_t v_stride, const int32_t* slots,
                   int64_t n, const KvLayer& kv);
void patch_merge_host(const float* in, int grid_h, int grid_w, int64_t d, int m, float* out);

// The Qwen3.5 recurrences of one sequence on the host (the defaults above call them per sequence;
// the oracles device versions are tested against): x/q/k/v/a/beta_in/out rows `n` with the given row
// strides, `state` one slot (zeroed first by the caller when fresh), w / a_log / dt_bias as f32.
void conv1d_silu_host(const float* x, int64_t x_stride, const float* w, int64_t channels, int64_t kernel,
                      float* state, int64_t n, float* out, int64_t out_stride);
void gated_delta_net_host(const float* q, int64_t q_stride, const float* k, int64_t k_stride, const float* v,
                          int64_t v_stride, const float* a, int64_t a_stride, const float* beta_in,
                          int64_t beta_stride, const float* a_log, const float* dt_bias, float* state,
                          const DeltaNetParams& p, int64_t n, float* out, int64_t out_stride);

// "ref" (scalar oracle), "cpu" / "cpu-bf16" / "cpu-f32" (fast, best ISA of this machine), or
// "cuda" (builds with -DLOCR_CUDA=ON, kernels/cuda/cuda_ops.h).
std::unique_ptr<Ops> make_ops(const std::string& backend);

}  // namespace locr::kernels
