// The Qwen3.5 hybrid text decoder (transformers' Qwen3_5TextModel): per layer
//   h = RMSNorm(x) (1 + w);  x += mixer(h);  x += down(silu(gate(RMSNorm(x))) * up(.))
// where the mixer follows layer_types:
//   Gated DeltaNet ("linear_attention"): [qkv | z | b | a] = in_proj(h); qkv = silu(causal conv(qkv));
//     o = gated delta rule(q, k, v, a, b) per value head (Ops::gated_delta_net);
//     mixer = out_proj(RMSNorm(o) w * silu(z)), the norm per value head with a plain weight;
//   gated attention ("full_attention"): [q | gate | k | v] = proj(h); per-head RMSNorm (1 + w) of q
//     and k; interleaved M-RoPE on the first rotary_dim of each head; causal GQA over the paged
//     cache; mixer = o_proj(attention * sigmoid(gate)).
// A step runs several sequences at once, like model::TextDecoder: every linear layer over all rows,
// attention per sequence over its paged KV blocks, the recurrences per sequence over its state slot.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"
#include "model/qwen35/config.h"
#include "model/qwen35/weights.h"
#include "model/kv_pool.h"
#include "model/workspace.h"

namespace locr::model::qwen35 {

// Per sequence slot, for every Gated DeltaNet layer: the conv state ((K-1) inputs of conv_dim
// channels) and the recurrent state (n_v_heads x k_dim x v_dim), F32, in backend memory.
class StatePool {
 public:
  StatePool(const TextConfig& cfg, int64_t n_slots, kernels::Ops& ops);
  int64_t n_slots() const { return n_slots_; }
  // Layer i of the recurrent layers (in layer order, counting only linear_attention layers).
  kernels::View conv(int i) const;
  kernels::View recurrent(int i) const;
  // Bytes of one slot over all recurrent layers.
  static int64_t bytes_per_slot(const TextConfig& cfg);

 private:
  kernels::Ops& ops_;
  int64_t n_slots_, conv_floats_, rec_floats_;
  std::vector<std::shared_ptr<void>> conv_, rec_;
};

// The paged KV pool of the full-attention layers only (model::KvPool over n_full_layers layers).
KvPool make_kv_pool(const TextConfig& cfg, int64_t n_blocks, int block_size, DType dtype, kernels::Ops* ops = nullptr);
// The KV shape model::KvPool expects: the full-attention layers of cfg.
model::TextConfig kv_shape(const TextConfig& cfg);

// One sequence's share of a step: n_new tokens whose keys go to positions kv_pos0 .. kv_pos0+n_new-1
// of its block table; their RoPE positions are the three rows of `positions` ([3, n_new] row-major)
// or, when null, rope_pos0 + i in all three; its recurrent state is slot `state_slot`, started from
// zero when `fresh`.
struct Seq {
  int64_t n_new = 0;
  int64_t kv_pos0 = 0;
  const int32_t* block_table = nullptr;
  const int64_t* positions = nullptr;
  int64_t rope_pos0 = 0;
  int32_t state_slot = 0;
  bool fresh = false;
  bool prompt = false;  // prompt rows (kernels::AttentionParams::prompt_rows)
};

class Decoder {
 public:
  Decoder(const TextConfig& cfg, const TextWeights& w, kernels::Ops& ops)
      : cfg_(cfg), w_(w), ops_(ops), kv_dtype_(ops.kv_dtype()) {}
  // kv_dtype: the KV cache element type of --kv-cache-dtype (model/kv_cache_dtype.h), on every backend.
  Decoder(const TextConfig& cfg, const TextWeights& w, kernels::Ops& ops, DType kv_dtype)
      : cfg_(cfg), w_(w), ops_(ops), kv_dtype_(kv_dtype) {}

  // x: [rows, hidden] input embeddings of all rows (host memory on host backends), overwritten with
  // the final-normed hidden states. on_hidden(i, [rows, hidden] host) for i = 0..L as transformers'
  // output_hidden_states (0 = embeddings, L = after the final norm).
  void forward(float* x, const std::vector<Seq>& seqs, KvPool& kv, StatePool& states, Workspace& ws,
               const std::function<void(int, const float*)>& on_hidden = nullptr) const;

  void embed(const int32_t* ids, int64_t n, float* out) const;
  // The KV cache's element type: the backend's (Ops::kv_dtype) unless --kv-cache-dtype chose another.
  DType kv_dtype() const { return kv_dtype_; }
  // logits [n, vocab] of n final hidden states.
  void logits(const float* h, int64_t n, float* out) const;
  // The greedy token of each of n rows: the argmax of its logits row, bit for bit.
  void greedy(const float* h, int64_t n, int32_t* out) const;

 private:
  const TextConfig& cfg_;
  const TextWeights& w_;
  kernels::Ops& ops_;
  DType kv_dtype_;
};

}  // namespace locr::model::qwen35
