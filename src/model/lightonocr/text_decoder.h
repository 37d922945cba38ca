// LightOnOCR-2's Qwen3 text decoder (mirrors transformers' models/qwen3/modeling_qwen3.py):
//   x = embeddings
//   per layer: h = RMSNorm(x); q,k,v = proj(h); q,k = per-head RMSNorm; RoPE(q,k);
//              x += o_proj(causal GQA attention); x += down(silu(gate(RMSNorm(x))) * up(...))
//   x = RMSNorm(x); logits = x · lm_head^T
// Runs a chunk of T new positions against a per-sequence KV cache (prefill and decode alike).
// The paged, multi-sequence cache of the serving engine builds on the same layer code. The cache
// itself (KvPool, KvCache) is model/kv_pool.h, which Qwen3.5's decoder uses too.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"
#include "model/kv_pool.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/step_batch.h"
#include "model/lightonocr/weights.h"
#include "model/workspace.h"

namespace locr::model {

class Taps;  // model/taps.h

class TextDecoder {
 public:
  // kv_dtype: the KV cache element type (--kv-cache-dtype); without it, the backend's (Ops::kv_dtype).
  TextDecoder(const TextConfig& cfg, const TextWeights& w, kernels::Ops& ops)
      : cfg_(cfg), w_(w), ops_(ops), kv_dtype_(ops.kv_dtype()) {}
  TextDecoder(const TextConfig& cfg, const TextWeights& w, kernels::Ops& ops, DType kv_dtype)
      : cfg_(cfg), w_(w), ops_(ops), kv_dtype_(kv_dtype) {}

  // One step over several sequences: the only implementation of the decoder, on every backend.
  // x: [b.rows, hidden] input embeddings (rows of the sequences in order), overwritten with the
  // final-normed hidden states. Linear layers run over all rows at once; attention per sequence
  // over its paged KV (Ops::paged_attention). x, b's arrays, kv and ws are backend memory; the
  // activations live in `ws` (fixed pointers from one step to the next).
  // If `on_hidden` is set it is called with (i, [rows, hidden] host) for i = 0..L as transformers'
  // output_hidden_states (0 = embeddings, L = after the final norm). `taps` (model/taps.h), when
  // set, records the selected intermediates ("text.L.q", ...) of all rows.
  void forward(float* x, const StepBatch& b, KvPool& kv, Workspace& ws,
               const std::function<void(int, const float*)>& on_hidden = nullptr, Taps* taps = nullptr) const;
  // Host backends: the step's arrays built from `seqs`, activations in a workspace of this call.
  void forward(float* x, const std::vector<SeqStep>& seqs, KvPool& kv,
               const std::function<void(int, const float*)>& on_hidden = nullptr, Taps* taps = nullptr) const;
  // Single-sequence convenience: positions cache.size() .. +T-1; the cache grows by T.
  void forward(float* x, int64_t T, KvCache& cache,
               const std::function<void(int, const float*)>& on_hidden = nullptr) const;

  // logits[n, vocab] for n rows of final hidden states.
  void logits(const float* h, int64_t n, float* out) const;
  // The greedy token of each of n rows: the argmax of its logits row, bit for bit.
  void greedy(const float* h, int64_t n, int32_t* out) const;

  void embed(const int32_t* ids, int64_t n, float* out) const;

  // The KV cache element type (allocate KvPool / KvCache with it): the one the kernels want
  // (Ops::kv_dtype) unless --kv-cache-dtype chose another.
  DType kv_dtype() const { return kv_dtype_; }

 private:
  const TextConfig& cfg_;
  const TextWeights& w_;
  kernels::Ops& ops_;
  DType kv_dtype_;
};

}  // namespace locr::model
