#include "model/qwen35/weights.h"

#include <cstring>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "model/gguf_export_common.h"
#include "model/weight_binder.h"

namespace locr::model::qwen35 {

namespace {

// A fresh F32 matrix [rows, cols] whose storage the Matrix keeps alive.
Matrix f32_matrix(int64_t rows, int64_t cols, float** data) {
  auto t = std::make_shared<Tensor>(Tensor::empty(DType::kF32, {rows, cols}));
  Matrix m;
  m.dtype = DType::kF32;
  m.rows = rows;
  m.cols = cols;
  m.data = t->raw();
  m.holder = t;
  *data = t->data<float>();
  return m;
}

// Qwen3_5RMSNorm's weight as the factor it multiplies by: 1 + w, in F32.
Matrix one_plus(const Matrix& w) {
  float* d = nullptr;
  Matrix m = f32_matrix(1, w.rows * w.cols, &d);
  for (int64_t i = 0; i < m.cols; ++i) d[i] = 1.0f + w.at(0, i);
  return m;
}

// Rows [r0, r0 + n) of w (a view sharing w's storage).
Matrix row_range(const Matrix& w, int64_t r0, int64_t n) {
  Matrix m = w;
  m.rows = n;
  m.data = static_cast<const uint8_t*>(w.data) + r0 * dtype_row_bytes(w.dtype, w.cols);
  m.packed = nullptr;
  return m;
}

Linear linear(WeightBinder& b, const std::string& p, int64_t out, int64_t in) {
  return Linear{b.get(p + ".weight", {out, in}), b.vec(p + ".bias", out)};
}

}  // namespace

std::pair<Matrix, Matrix> split_query_gate(const Matrix& w, int64_t heads, int64_t hd) {
  const size_t row_bytes = dtype_row_bytes(w.dtype, w.cols);
  auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[row_bytes * w.rows]);
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t part = 0; part < 2; ++part)  // 0: query rows, 1: gate rows
      std::memcpy(buf.get() + ((part * heads + h) * hd) * row_bytes, src + ((2 * h + part) * hd) * row_bytes,
                  row_bytes * hd);
  Matrix all = w;
  all.data = buf.get();
  all.holder = std::shared_ptr<void>(buf, buf.get());
  all.packed = nullptr;
  return {row_range(all, 0, heads * hd), row_range(all, heads * hd, heads * hd)};
}

Weights load_weights(const io::SafetensorsSet& st, const Config& cfg) {
  WeightBinder b(st, "Qwen3.5");
  Weights w;
  const TextConfig& t = cfg.text;
  const std::string tp = "model.language_model.";
  const int64_t H = t.hidden_size, hd = t.head_dim, I = t.intermediate_size;
  w.text.embed_tokens = b.get(tp + "embed_tokens.weight", {t.vocab_size, H});
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = tp + "layers." + std::to_string(i) + ".";
    LayerWeights L;
    L.full_attention = t.full_attention[i];
    L.input_layernorm = one_plus(b.vec(p + "input_layernorm.weight", H));
    L.post_attention_layernorm = one_plus(b.vec(p + "post_attention_layernorm.weight", H));
    if (L.full_attention) {
      const int64_t nq = t.num_attention_heads, nkv = t.num_key_value_heads;
      auto [q, gate] = split_query_gate(b.get(p + "self_attn.q_proj.weight", {2 * nq * hd, H}), nq, hd);
      L.attn.qgkv.parts = {q, gate, b.get(p + "self_attn.k_proj.weight", {nkv * hd, H}),
                           b.get(p + "self_attn.v_proj.weight", {nkv * hd, H})};
      L.attn.q_norm = one_plus(b.vec(p + "self_attn.q_norm.weight", hd));
      L.attn.k_norm = one_plus(b.vec(p + "self_attn.k_norm.weight", hd));
      L.attn.o_proj = b.get(p + "self_attn.o_proj.weight", {H, nq * hd});
    } else {
      const std::string lp = p + "linear_attn.";
      const int64_t nv = t.linear_num_value_heads, vw = nv * t.linear_value_head_dim, C = t.conv_dim();
      L.linear.in_proj.parts = {b.get(lp + "in_proj_qkv.weight", {C, H}), b.get(lp + "in_proj_z.weight", {vw, H}),
                                b.get(lp + "in_proj_b.weight", {nv, H}), b.get(lp + "in_proj_a.weight", {nv, H})};
      L.linear.conv = b.get(lp + "conv1d.weight", {C, t.linear_conv_kernel_dim});
      L.linear.a_log = b.vec(lp + "A_log", nv);
      L.linear.dt_bias = b.vec(lp + "dt_bias", nv);
      L.linear.norm = b.vec(lp + "norm.weight", t.linear_value_head_dim);
      L.linear.out_proj = b.get(lp + "out_proj.weight", {H, vw});
    }
    L.gate_up.parts = {b.get(p + "mlp.gate_proj.weight", {I, H}), b.get(p + "mlp.up_proj.weight", {I, H})};
    L.down_proj = b.get(p + "mlp.down_proj.weight", {H, I});
    w.text.layers.push_back(std::move(L));
  }
  w.text.norm = one_plus(b.vec(tp + "norm.weight", H));
  if (b.has("lm_head.weight")) {
    w.text.lm_head = b.get("lm_head.weight", {t.vocab_size, H});
  } else if (t.tie_word_embeddings) {
    w.text.lm_head = w.text.embed_tokens;
  } else {
    fail(ErrorKind::kNotFound, "checkpoint is missing tensor 'lm_head.weight' (tie_word_embeddings is false)");
  }

  const VisionConfig& v = cfg.vision;
  const std::string vp = "model.visual.";
  const int64_t V = v.hidden_size, VI = v.intermediate_size, M = V * v.spatial_merge_size * v.spatial_merge_size;
  w.vision.patch_embed = linear(b, vp + "patch_embed.proj", V, v.patch_values());
  w.vision.pos_embed = b.get(vp + "pos_embed.weight", {v.num_position_embeddings, V});
  for (int i = 0; i < v.depth; ++i) {
    const std::string p = vp + "blocks." + std::to_string(i) + ".";
    VisionBlockWeights B;
    B.norm1_w = b.vec(p + "norm1.weight", V);
    B.norm1_b = b.vec(p + "norm1.bias", V);
    B.norm2_w = b.vec(p + "norm2.weight", V);
    B.norm2_b = b.vec(p + "norm2.bias", V);
    B.qkv = linear(b, p + "attn.qkv", 3 * V, V);
    B.proj = linear(b, p + "attn.proj", V, V);
    B.fc1 = linear(b, p + "mlp.linear_fc1", VI, V);
    B.fc2 = linear(b, p + "mlp.linear_fc2", V, VI);
    w.vision.blocks.push_back(std::move(B));
  }
  w.vision.merger_norm_w = b.vec(vp + "merger.norm.weight", V);
  w.vision.merger_norm_b = b.vec(vp + "merger.norm.bias", V);
  w.vision.merger_fc1 = linear(b, vp + "merger.linear_fc1", M, M);
  w.vision.merger_fc2 = linear(b, vp + "merger.linear_fc2", v.out_hidden_size, M);

  // The multi-token-prediction head (mtp.*) is for speculative decoding; locr does not run it.
  for (const std::string& n : st.names())
    if (n.rfind("mtp.", 0) == 0) b.skip(n);
  b.check_all_used();
  return w;
}

void prepare_weights(Weights& w, kernels::Ops& ops) {
  // As model::prepare_weights: once the backend has its own copy of a weight, the checkpoint's
  // pages of it go back to the kernel (file-backed: they come back on demand if read again), so
  // resident memory holds one copy. The regrouped q / gate rows live on the heap and are kept.
  auto release = [](const Matrix& m) {
    if (m.data) io::release_pages(m.data, static_cast<size_t>(dtype_row_bytes(m.dtype, m.cols) * m.rows));
  };
  auto prep = [&](Matrix& m) {
    ops.prepare(m);
    if (m.packed) release(m);
  };
  auto stack = [&](StackedMatrix& s, size_t first_mapped) {
    ops.prepare_stack(s);
    for (size_t i = first_mapped; i < s.parts.size(); ++i)
      if (s.fused.rows > 0 || s.parts[i].packed) release(s.parts[i]);
  };
  for (LayerWeights& L : w.text.layers) {
    if (L.full_attention) {
      stack(L.attn.qgkv, 2);
      prep(L.attn.o_proj);
    } else {
      stack(L.linear.in_proj, 0);
      prep(L.linear.out_proj);
    }
    stack(L.gate_up, 0);
    prep(L.down_proj);
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
  VisionWeights& v = w.vision;
  prep(v.patch_embed.w);
  for (VisionBlockWeights& B : v.blocks)
    for (Linear* l : {&B.qkv, &B.proj, &B.fc1, &B.fc2}) prep(l->w);
  prep(v.merger_fc1.w);
  prep(v.merger_fc2.w);
}

QuantizeCounts quantize_weights(Weights& w, const std::string& method) {
  const std::string k = quantization_method(method);
  const bool mix = k == "q4_k_m";
  const DType to = k == "q8_0" ? DType::kQ8_0 : DType::kQ4_K;
  QuantizeCounts n;
  auto q = [&](Matrix& m, DType t) { quantize_counted(m, t, &n); };
  // q4_k_m: llama-quantize's mix as `locr quantize --type q4_k_m` writes it (model/gguf_export_common.cc
  // q4_k_m_choice): in the "more bits" layers the DeltaNet's qkv projection (attn_qkv) or the
  // attention's v (attn_v), and ffn_down, Q6_K; the head Q6_K; the rest Q4_K.
  const int n_layers = static_cast<int>(w.text.layers.size());
  for (int i = 0; i < n_layers; ++i) {
    LayerWeights& L = w.text.layers[static_cast<size_t>(i)];
    const DType hi = mix && q4_k_m_more_bits(i, n_layers) ? DType::kQ6_K : to;
    std::vector<Matrix>& parts = (L.full_attention ? L.attn.qgkv : L.linear.in_proj).parts;
    // [q; gate; k; v] (attn_q holds q and gate; attn_v is part 3) or [qkv; z; b; a] (attn_qkv is part 0).
    const size_t v_like = L.full_attention ? 3 : 0;
    for (size_t p = 0; p < parts.size(); ++p) q(parts[p], p == v_like ? hi : to);
    q(L.full_attention ? L.attn.o_proj : L.linear.out_proj, to);
    for (Matrix& m : L.gate_up.parts) q(m, to);
    q(L.down_proj, hi);
  }
  q(w.text.lm_head, mix ? DType::kQ6_K : to);  // a tied head: its own quantized copy, the embedding table stays
  // The vision tower and merger: q4_k_m as `locr quantize --type q4_k_m`'s mmproj, Q8_0.
  const DType vt = mix ? DType::kQ8_0 : to;
  for (VisionBlockWeights& B : w.vision.blocks)
    for (Linear* l : {&B.qkv, &B.proj, &B.fc1, &B.fc2}) q(l->w, vt);
  q(w.vision.merger_fc1.w, vt);
  q(w.vision.merger_fc2.w, vt);
  LOCR_INFO("quantization ", k, ": ", n.total(), " weight matrices quantized at load (", n.q4_k, " Q4_K, ", n.q6_k,
            " Q6_K, ", n.q8_0, " Q8_0", to == DType::kQ4_K && n.q8_0 > 0 ? "; Q8_0 where rows are not whole 256-weight "
            "super-blocks" : "", ")");
  return n;
}

}  // namespace locr::model::qwen35
