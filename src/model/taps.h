// Named taps: any intermediate of the forward pass by name, for parity dumps below the layer
// (`locr dump --taps`, docs/numerics.md). The model code calls tap(taps, scope, layer, site, ...)
// at each point of interest, as llama.cpp's cb(cur, "attn_norm", il); with no taps requested the
// pointer is null and a tap costs one branch.
//
// Names: "<scope>.<layer>.<site>" per layer, "<scope>.<site>" otherwise —
//   text.embed                      [T, hidden] input embeddings (image rows merged) = hidden.0
//   text.L.attn_norm                [T, hidden] input_layernorm(x), what q/k/v_proj read
//   text.L.q / text.L.k             [T, heads*head_dim] after the per-head q/k norm and RoPE
//   text.L.v                        [T, kv_heads*head_dim]
//   text.L.attn_out                 [T, heads*head_dim] attention output BEFORE o_proj
//   text.L.attn_proj                [T, hidden] o_proj(attn_out), what is added to the residual
//   text.L.post_attn                [T, hidden] residual stream after the attention add
//   text.L.ffn_norm                 [T, hidden] post_attention_layernorm(post_attn)
//   text.L.mlp_act                  [T, intermediate] silu(gate) * up
//   text.L.mlp_out                  [T, hidden] down_proj(mlp_act), before the residual add
//   text.L.out                      [T, hidden] layer output = post_attn + mlp_out (= hidden.L+1
//                                   except for the last layer, whose hidden state is final-normed)
//   text.norm                       [T, hidden] final norm (= hidden.L)
//   vision.patch_embed              [patches, vision hidden] patch conv, before ln_pre
//   vision.ln_pre                   [patches, vision hidden]
//   vision.L.<site>                 the text sites above for each encoder block (q/k after 2-D RoPE)
//   projector.in                    [patches, vision hidden] encoder output (= vision_hidden)
//   projector.norm                  [patches, vision hidden]
//   projector.merged                [merged, 4*vision hidden] 2x2 patch merge
//   projector.merge_out             [merged, vision hidden] merging_layer
//   projector.act                   [merged, hidden] gelu(linear_1)
//   projector.out                   [merged, hidden] linear_2 (= image_embeds)
// Several images are rows of one tap, in prompt order. A tap recorded by several calls (e.g. the
// encoder run a few layers at a time, or several steps) gets their rows appended.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"

namespace locr::model {

class Taps {
 public:
  // Selects by exact names or glob patterns ('*' any run of characters, '?' one) among `known`.
  // Fails (kInvalidArgument) on a name that is no tap (naming the closest ones) and on a pattern
  // that matches none.
  static Taps select(const std::vector<std::string>& requested, const std::vector<std::string>& known);

  bool wants(const std::string& name) const { return data_.count(name) != 0; }
  // The model's hook: copies rows x cols F32 when "<scope>[.<layer>].<site>" was selected.
  void record(const char* scope, int layer, const char* site, const float* data, int64_t rows, int64_t cols);
  // The same for a view in the memory of `ops`' backend (copied with Ops::to_host; only when selected).
  void record(kernels::Ops& ops, const char* scope, int layer, const char* site, const kernels::View& x);

  // Selected names in the order of `known`.
  const std::vector<std::string>& selected() const { return order_; }
  // Selected names no hook has recorded yet.
  std::vector<std::string> missing() const;
  // Recorded taps as F32 [rows, cols], in selected order (unrecorded ones left out).
  std::vector<std::pair<std::string, Tensor>> tensors() const;
  // Requested exact names (not patterns): a dump fails when one of them was not recorded.
  const std::vector<std::string>& exact() const { return exact_; }

 private:
  struct Buf {
    int64_t cols = 0, rows = 0;
    std::vector<float> v;
  };
  Buf* find(const char* scope, int layer, const char* site, int64_t cols);
  std::map<std::string, Buf> data_;
  std::vector<std::string> order_, exact_;
};

inline void tap(Taps* t, const char* scope, int layer, const char* site, const float* data, int64_t rows,
                int64_t cols) {
  if (t) t->record(scope, layer, site, data, rows, cols);
}

inline void tap(Taps* t, kernels::Ops& ops, const char* scope, int layer, const char* site, const kernels::View& x) {
  if (t) t->record(ops, scope, layer, site, x);
}

// '*' and '?' glob match of a whole name.
bool tap_glob_match(const std::string& pattern, const std::string& name);

}  // namespace locr::model
