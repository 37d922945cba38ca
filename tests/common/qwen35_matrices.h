// For tests that compare two loads of a Qwen3.5 model (model/qwen35/weights.h) matrix by matrix:
// every weight matrix with a name, in one order for any two Weights of one config; and the
// checkpoint's DeltaNet weights put in the value-head order of llama.cpp's GGUF files.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "model/qwen35/weights.h"

namespace locr::model::qwen35 {

// Every matrix of the weights with a name, in the same order for any two Weights of one config.
inline void each_matrix(const Weights& w, const std::function<void(const std::string&, const Matrix&)>& f) {
  f("embed_tokens", w.text.embed_tokens);
  for (size_t i = 0; i < w.text.layers.size(); ++i) {
    const LayerWeights& L = w.text.layers[i];
    const std::string p = "layer" + std::to_string(i) + ".";
    f(p + "input_layernorm", L.input_layernorm);
    f(p + "post_attention_layernorm", L.post_attention_layernorm);
    if (L.full_attention) {
      const char* parts[] = {"q", "gate", "k", "v"};
      for (size_t k = 0; k < 4; ++k) f(p + "attn." + parts[k], L.attn.qgkv.parts[k]);
      f(p + "attn.q_norm", L.attn.q_norm);
      f(p + "attn.k_norm", L.attn.k_norm);
      f(p + "attn.o_proj", L.attn.o_proj);
    } else {
      const char* parts[] = {"qkv", "z", "b", "a"};
      for (size_t k = 0; k < 4; ++k) f(p + "linear.in_proj." + parts[k], L.linear.in_proj.parts[k]);
      f(p + "linear.conv", L.linear.conv);
      f(p + "linear.a_log", L.linear.a_log);
      f(p + "linear.dt_bias", L.linear.dt_bias);
      f(p + "linear.norm", L.linear.norm);
      f(p + "linear.out_proj", L.linear.out_proj);
    }
    f(p + "gate", L.gate_up.parts[0]);
    f(p + "up", L.gate_up.parts[1]);
    f(p + "down", L.down_proj);
  }
  f("norm", w.text.norm);
  f("lm_head", w.text.lm_head);
  const VisionWeights& v = w.vision;
  f("vision.patch_embed.w", v.patch_embed.w);
  f("vision.patch_embed.b", v.patch_embed.b);
  f("vision.pos_embed", v.pos_embed);
  for (size_t i = 0; i < v.blocks.size(); ++i) {
    const VisionBlockWeights& B = v.blocks[i];
    const std::string p = "vision.block" + std::to_string(i) + ".";
    for (auto [n, m] : {std::pair{"norm1_w", &B.norm1_w}, {"norm1_b", &B.norm1_b}, {"norm2_w", &B.norm2_w},
                        {"norm2_b", &B.norm2_b}, {"qkv.w", &B.qkv.w}, {"qkv.b", &B.qkv.b}, {"proj.w", &B.proj.w},
                        {"proj.b", &B.proj.b}, {"fc1.w", &B.fc1.w}, {"fc1.b", &B.fc1.b}, {"fc2.w", &B.fc2.w},
                        {"fc2.b", &B.fc2.b}})
      f(p + n, *m);
  }
  f("vision.merger_norm_w", v.merger_norm_w);
  f("vision.merger_norm_b", v.merger_norm_b);
  f("vision.merger_fc1.w", v.merger_fc1.w);
  f("vision.merger_fc1.b", v.merger_fc1.b);
  f("vision.merger_fc2.w", v.merger_fc2.w);
  f("vision.merger_fc2.b", v.merger_fc2.b);
}

inline std::vector<std::pair<std::string, Matrix>> matrices(const Weights& w) {
  std::vector<std::pair<std::string, Matrix>> out;
  each_matrix(w, [&](const std::string& n, const Matrix& m) { out.emplace_back(n, m); });
  return out;
}

// The converter's value-head reorder (llama.cpp _LinearAttentionVReorderBase): HF value head g * r + j
// (r value heads per key head g) moves to position j * nk + g. For an axis of `n` entries whose
// [offset, offset + nk * r * width) are value heads: the source of each destination index.
inline std::vector<int64_t> tiled_source(int64_t n, int64_t offset, int64_t nk, int64_t r, int64_t width) {
  std::vector<int64_t> src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) src[i] = i;
  for (int64_t g = 0; g < nk; ++g)
    for (int64_t j = 0; j < r; ++j)
      for (int64_t d = 0; d < width; ++d) src[offset + (j * nk + g) * width + d] = offset + (g * r + j) * width + d;
  return src;
}

// An F32 copy of m with rows (or, with `cols`, columns) taken from `src`.
inline Matrix gathered(const Matrix& m, const std::vector<int64_t>& src, bool cols) {
  auto t = std::make_shared<Tensor>(Tensor::empty(DType::kF32, {m.rows, m.cols}));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c)
      t->data<float>()[r * m.cols + c] = cols ? m.at(r, src[c]) : m.at(src[r], c);
  Matrix out = Matrix::from_tensor(*t);
  out.holder = t;
  return out;
}

// The checkpoint's DeltaNet weights in the GGUF files' tiled value-head order (the 4B layout).
inline void tile_value_heads(Weights& w, const TextConfig& t) {
  const int64_t nk = t.linear_num_key_heads, r = t.linear_num_value_heads / nk, kd = t.linear_key_head_dim,
                vd = t.linear_value_head_dim, nv = t.linear_num_value_heads, C = t.conv_dim();
  if (r == 1) return;
  for (LayerWeights& L : w.text.layers) {
    if (L.full_attention) continue;
    DeltaNetWeights& D = L.linear;
    D.in_proj.parts[0] = gathered(D.in_proj.parts[0], tiled_source(C, 2 * nk * kd, nk, r, vd), false);
    D.in_proj.parts[1] = gathered(D.in_proj.parts[1], tiled_source(nv * vd, 0, nk, r, vd), false);
    D.in_proj.parts[2] = gathered(D.in_proj.parts[2], tiled_source(nv, 0, nk, r, 1), false);
    D.in_proj.parts[3] = gathered(D.in_proj.parts[3], tiled_source(nv, 0, nk, r, 1), false);
    D.conv = gathered(D.conv, tiled_source(C, 2 * nk * kd, nk, r, vd), false);
    D.a_log = gathered(D.a_log, tiled_source(nv, 0, nk, r, 1), true);
    D.dt_bias = gathered(D.dt_bias, tiled_source(nv, 0, nk, r, 1), true);
    D.out_proj = gathered(D.out_proj, tiled_source(nv * vd, 0, nk, r, vd), true);
  }
  w.text.tiled_v_heads = true;
}

}  // namespace locr::model::qwen35
