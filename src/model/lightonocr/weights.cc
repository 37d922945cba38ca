#include "model/lightonocr/weights.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "io/file.h"
#include "model/weight_binder.h"

namespace locr::model {


ModelWeights load_weights(const io::SafetensorsSet& st, const ModelConfig& cfg) {
  WeightBinder b(st, "LightOnOCR-2");
  ModelWeights w;
  const TextConfig& t = cfg.text;
  const VisionConfig& v = cfg.vision;

  // Text: model.language_model.* (hub) or model.language_model.model.* (some re-saves).
  std::string tp = "model.language_model.";
  if (!b.has(tp + "embed_tokens.weight") && b.has("model.language_model.model.embed_tokens.weight"))
    tp = "model.language_model.model.";
  const int64_t H = t.hidden_size, hd = t.head_dim;
  w.text.embed_tokens = b.get(tp + "embed_tokens.weight", {t.vocab_size, H});
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = tp + "layers." + std::to_string(i) + ".";
    TextLayerWeights L;
    L.input_layernorm = b.vec(p + "input_layernorm.weight", H);
    L.q_proj = b.get(p + "self_attn.q_proj.weight", {t.num_attention_heads * hd, H});
    L.k_proj = b.get(p + "self_attn.k_proj.weight", {t.num_key_value_heads * hd, H});
    L.v_proj = b.get(p + "self_attn.v_proj.weight", {t.num_key_value_heads * hd, H});
    L.o_proj = b.get(p + "self_attn.o_proj.weight", {H, t.num_attention_heads * hd});
    L.q_norm = b.vec(p + "self_attn.q_norm.weight", hd);
    L.k_norm = b.vec(p + "self_attn.k_norm.weight", hd);
    L.post_attention_layernorm = b.vec(p + "post_attention_layernorm.weight", H);
    L.gate_proj = b.get(p + "mlp.gate_proj.weight", {t.intermediate_size, H});
    L.up_proj = b.get(p + "mlp.up_proj.weight", {t.intermediate_size, H});
    L.down_proj = b.get(p + "mlp.down_proj.weight", {H, t.intermediate_size});
    w.text.layers.push_back(std::move(L));
  }
  w.text.norm = b.vec(tp + "norm.weight", H);
  // A stray lm_head.weight is used when present, even if the config says tied.
  const char* head_names[] = {"lm_head.weight", "model.language_model.lm_head.weight"};
  bool found_head = false;
  for (const char* n : head_names)
    if (b.has(n)) {
      w.text.lm_head = b.get(n, {t.vocab_size, H});
      found_head = true;
      break;
    }
  if (!found_head) {
    if (!t.tie_word_embeddings)
      fail(ErrorKind::kNotFound, "checkpoint is missing tensor 'lm_head.weight' (expected shape [", t.vocab_size, ", ",
           H, "]) and config.json says tie_word_embeddings is false");
    w.text.lm_head = w.text.embed_tokens;
  }

  // Vision encoder (Pixtral).
  const std::string vp = "model.vision_encoder.";
  const int64_t V = v.hidden_size, p = v.patch_size;
  w.vision.patch_conv = b.get(vp + "patch_conv.weight", {V, 3 * p * p});
  w.vision.ln_pre = b.vec(vp + "ln_pre.weight", V);
  for (int i = 0; i < v.num_hidden_layers; ++i) {
    const std::string lp = vp + "transformer.layers." + std::to_string(i) + ".";
    VisionLayerWeights L;
    L.attention_norm = b.vec(lp + "attention_norm.weight", V);
    const int64_t A = static_cast<int64_t>(v.num_attention_heads) * v.head_dim;
    L.q_proj = b.get(lp + "attention.q_proj.weight", {A, V});
    L.k_proj = b.get(lp + "attention.k_proj.weight", {A, V});
    L.v_proj = b.get(lp + "attention.v_proj.weight", {A, V});
    L.o_proj = b.get(lp + "attention.o_proj.weight", {V, A});
    L.ffn_norm = b.vec(lp + "ffn_norm.weight", V);
    L.gate_proj = b.get(lp + "feed_forward.gate_proj.weight", {v.intermediate_size, V});
    L.up_proj = b.get(lp + "feed_forward.up_proj.weight", {v.intermediate_size, V});
    L.down_proj = b.get(lp + "feed_forward.down_proj.weight", {V, v.intermediate_size});
    w.vision.layers.push_back(std::move(L));
  }

  // Projector.
  const std::string pp = "model.vision_projection.";
  const int64_t m2 = static_cast<int64_t>(cfg.spatial_merge_size) * cfg.spatial_merge_size;
  w.projector.norm = b.vec(pp + "norm.weight", V);
  w.projector.merging_layer = b.get(pp + "patch_merger.merging_layer.weight", {V, V * m2});
  w.projector.linear_1 = b.get(pp + "linear_1.weight", {H, V});
  w.projector.linear_2 = b.get(pp + "linear_2.weight", {H, H});
  b.check_all_used();
  return w;
}

// Lets the backend lay out every matmul weight once: q/k/v and gate/up as stacks (one GEMM where
// the backend fuses them), the rest packed one by one (the embedding table is only gathered from;
// the LM head is packed even when it shares the embedding's storage).
// Once a weight is packed, the backend never reads the checkpoint's pages of it again: hand them
// back to the kernel so resident memory holds one copy of the weights, not two. (An untied
// embedding table is gathered from row by row; its pages come back on demand.)
void prepare_weights(ModelWeights& w, kernels::Ops& ops) {
  auto release = [](const Matrix& m) {
    if (m.data) io::release_pages(m.data, static_cast<size_t>(dtype_row_bytes(m.dtype, m.cols) * m.rows));
  };
  auto prep = [&](Matrix& m) {
    ops.prepare(m);
    if (m.packed) release(m);
  };
  auto stack = [&](kernels::StackedMatrix& s, std::initializer_list<const Matrix*> parts) {
    s.parts.clear();
    for (const Matrix* m : parts) s.parts.push_back(*m);
    ops.prepare_stack(s);
    for (const Matrix& m : s.parts)
      if (s.fused.rows > 0 || m.packed) release(m);
  };
  for (auto& L : w.text.layers) {
    stack(L.qkv, {&L.q_proj, &L.k_proj, &L.v_proj});
    stack(L.gate_up, {&L.gate_proj, &L.up_proj});
    for (Matrix* m : {&L.o_proj, &L.down_proj}) prep(*m);
  }
  // The head also gets what makes greedy tokens cheaper (Ops::prepare_argmax), from its rows
  // before their pages go back. A tied table then gathers from the head's prepared copy where the
  // backend can (Ops::embed), not from the pages just given back.
  const Matrix& table = w.text.embed_tokens;
  const bool tied = w.text.lm_head.data == table.data && w.text.lm_head.dtype == table.dtype;
  ops.prepare(w.text.lm_head);
  ops.prepare_argmax(w.text.lm_head);
  if (w.text.lm_head.packed) release(w.text.lm_head);
  if (tied) w.text.embed_tokens.packed = w.text.lm_head.packed;
  if (!w.has_vision) return;
  prep(w.vision.patch_conv);
  for (auto& L : w.vision.layers) {
    stack(L.qkv, {&L.q_proj, &L.k_proj, &L.v_proj});
    stack(L.gate_up, {&L.gate_proj, &L.up_proj});
    for (Matrix* m : {&L.o_proj, &L.down_proj}) prep(*m);
  }
  for (Matrix* m : {&w.projector.merging_layer, &w.projector.linear_1, &w.projector.linear_2}) prep(*m);
}

}  // namespace locr::model
