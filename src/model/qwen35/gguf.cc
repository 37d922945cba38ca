#include "model/qwen35/gguf.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "model/gguf_binder.h"
#include "model/gguf_model_meta.h"

namespace locr::model::qwen35 {

using nlohmann::json;

bool is_qwen35_gguf(const io::GgufFile& f) { return gguf_meta_string(f, "general.architecture") == "qwen35"; }

GgufFiles open_gguf(std::shared_ptr<io::GgufFile> text, const std::string& mmproj_path) {
  GgufFiles g;
  g.text = std::move(text);
  if (!is_qwen35_gguf(*g.text))
    fail(ErrorKind::kInvalidArgument, g.text->name(), ": general.architecture is '",
         gguf_meta_string(*g.text, "general.architecture"), "', not 'qwen35'");
  if (mmproj_path.empty())
    fail(ErrorKind::kInvalidArgument, g.text->name(), " is a Qwen3.5 text GGUF (LightOnOCR-3-0.8B / -4B): give its "
         "vision encoder with --mmproj MMPROJ.gguf (locr reads pages, which needs the image encoder)");
  g.mmproj = open_mmproj(mmproj_path, "qwen3vl_merger", ErrorKind::kInvalidArgument,
                         "the mmproj of a Qwen3.5 model (LightOnOCR-3-0.8B / -4B) has projector type "
                         "'qwen3vl_merger' (is it another model's mmproj?)");
  return g;
}

namespace {

// The id of a special token by its text; -1 when the vocabulary has none.
int token_id(const io::GgufFile& f, const char* text, bool required) {
  const int id = gguf_token_id(f, text);
  if (id < 0 && required)
    fail(ErrorKind::kInvalidArgument, f.name(), ": tokenizer.ggml.tokens has no ", text, " token, which a Qwen3.5 ",
         "prompt with images needs");
  return id;
}

json text_config(const io::GgufFile& f) {
  const std::string a = "qwen35.";
  json t;
  const io::GgufTensor* emb = f.find("token_embd.weight");
  if (!emb || emb->ne.size() != 2)
    fail(ErrorKind::kNotFound, f.name(), ": the text GGUF has no 2-D tensor 'token_embd.weight'");
  t["vocab_size"] = emb->ne[1];
  t["tie_word_embeddings"] = f.find("output.weight") == nullptr;
  t["hidden_size"] = gguf_meta_i32(f, a + "embedding_length", 0, true);
  t["intermediate_size"] = gguf_meta_i32(f, a + "feed_forward_length", 0, true);
  const int layers = gguf_meta_i32(f, a + "block_count", 0, true);
  t["num_hidden_layers"] = layers;
  t["num_attention_heads"] = gguf_meta_i32(f, a + "attention.head_count", 0, true);
  t["num_key_value_heads"] = gguf_meta_i32(f, a + "attention.head_count_kv", 0, true);
  const int head_dim = gguf_meta_i32(f, a + "attention.key_length", 0, true);
  const int vlen = gguf_meta_i32(f, a + "attention.value_length", head_dim);
  if (vlen != head_dim)
    fail(ErrorKind::kUnsupported, f.name(), ": ", a, "attention.value_length ", vlen, " differs from key_length ",
         head_dim, "; Qwen3.5's gated attention has one head_dim");
  t["head_dim"] = head_dim;
  t["rms_norm_eps"] = gguf_meta_float(f, a + "attention.layer_norm_rms_epsilon", 1e-6);
  t["max_position_embeddings"] = gguf_meta_i32(f, a + "context_length", 262144);
  t["linear_conv_kernel_dim"] = gguf_meta_i32(f, a + "ssm.conv_kernel", 0, true);
  t["linear_key_head_dim"] = gguf_meta_i32(f, a + "ssm.state_size", 0, true);
  t["linear_num_key_heads"] = gguf_meta_i32(f, a + "ssm.group_count", 0, true);
  const int nv = gguf_meta_i32(f, a + "ssm.time_step_rank", 0, true);
  const int inner = gguf_meta_i32(f, a + "ssm.inner_size", 0, true);
  if (inner % nv != 0)
    fail(ErrorKind::kInvalidArgument, f.name(), ": ", a, "ssm.inner_size ", inner, " is not a multiple of ",
         a, "ssm.time_step_rank ", nv, " (value heads)");
  t["linear_num_value_heads"] = nv;
  t["linear_value_head_dim"] = inner / nv;
  json rope = {{"rope_type", "default"}, {"mrope_interleaved", true}};
  rope["rope_theta"] = gguf_meta_float(f, a + "rope.freq_base", 1e7);
  const int rot = gguf_meta_i32(f, a + "rope.dimension_count", head_dim / 4);
  rope["partial_rotary_factor"] = static_cast<double>(rot) / head_dim;
  if (const json* s = gguf_meta(f, a + "rope.dimension_sections")) {
    if (!s->is_array() || s->size() < 3 || (s->size() > 3 && (*s)[3] != 0))
      fail(ErrorKind::kUnsupported, f.name(), ": ", a, "rope.dimension_sections ", s->dump(), " is not the (T, H, W) "
           "sections of Qwen3.5's multimodal RoPE");
    rope["mrope_section"] = {(*s)[0], (*s)[1], (*s)[2]};
  }
  t["rope_parameters"] = rope;
  if (const json* r = gguf_meta(f, a + "attention.recurrent_layers")) {
    if (!r->is_array() || static_cast<int>(r->size()) < layers)
      fail(ErrorKind::kInvalidArgument, f.name(), ": ", a, "attention.recurrent_layers is not one flag per layer");
    json types = json::array();
    for (int i = 0; i < layers; ++i) types.push_back((*r)[i].get<bool>() ? "linear_attention" : "full_attention");
    t["layer_types"] = types;
  } else {
    t["full_attention_interval"] = gguf_meta_i32(f, a + "full_attention_interval", 4);
  }
  return t;
}

json vision_config(const io::GgufFile& m) {
  json v;
  v["depth"] = gguf_meta_i32(m, "clip.vision.block_count", 0, true);
  v["hidden_size"] = gguf_meta_i32(m, "clip.vision.embedding_length", 0, true);
  v["intermediate_size"] = gguf_meta_i32(m, "clip.vision.feed_forward_length", 0, true);
  v["num_heads"] = gguf_meta_i32(m, "clip.vision.attention.head_count", 0, true);
  v["patch_size"] = gguf_meta_i32(m, "clip.vision.patch_size", 0, true);
  v["spatial_merge_size"] = gguf_meta_i32(m, "clip.vision.spatial_merge_size", 2);
  v["out_hidden_size"] = gguf_meta_i32(m, "clip.vision.projection_dim", 0, true);
  v["in_channels"] = 3;
  // The converter splits the Conv3d over its two frames (it supports no other temporal patch).
  v["temporal_patch_size"] = 2;
  const io::GgufTensor* pos = m.find("v.position_embd.weight");
  if (!pos || pos->ne.size() != 2)
    fail(ErrorKind::kNotFound, m.name(), ": the mmproj has no 2-D tensor 'v.position_embd.weight'");
  v["num_position_embeddings"] = pos->ne[1];
  v["hidden_act"] = gguf_meta_bool(m, "clip.use_gelu", false) ? "gelu_pytorch_tanh" : "silu";
  json ds = json::array();
  if (const json* d = gguf_meta(m, "clip.vision.is_deepstack_layers"); d && d->is_array())
    for (size_t i = 0; i < d->size(); ++i)
      if ((*d)[i].is_boolean() && (*d)[i].get<bool>()) ds.push_back(i);
  v["deepstack_visual_indexes"] = ds;
  return v;
}

}  // namespace

Config gguf_config(const GgufFiles& f) {
  json j;
  j["model_type"] = "qwen3_5";
  j["text_config"] = text_config(*f.text);
  j["vision_config"] = vision_config(*f.mmproj);
  j["image_token_id"] = token_id(*f.text, "<|image_pad|>", true);
  j["vision_start_token_id"] = token_id(*f.text, "<|vision_start|>", true);
  j["vision_end_token_id"] = token_id(*f.text, "<|vision_end|>", true);
  const int video = token_id(*f.text, "<|video_pad|>", false);
  if (video >= 0) j["video_token_id"] = video;
  return Config::from_json(j, f.text->name() + " + " + f.mmproj->name());
}

ProcessorConfig gguf_processor_config(const GgufFiles& f, const std::string& dir) {
  const io::GgufFile& m = *f.mmproj;
  const std::string beside = io::join_path(dir, "preprocessor_config.json");
  ProcessorConfig pc = load_processor_config(dir);  // the defaults when there is no file
  if (io::file_exists(beside)) {
    LOCR_INFO("gguf: image processor from ", beside, " (next to the GGUF)");
  } else {
    pc.patch_size = gguf_meta_i32(m, "clip.vision.patch_size", 0, true);
    pc.merge_size = gguf_meta_i32(m, "clip.vision.spatial_merge_size", 2);
    gguf_mean_std(m, &pc.image_mean, &pc.image_std);
    LOCR_INFO("gguf: image processor: patch ", pc.patch_size, ", merge ", pc.merge_size, ", mean/std from the mmproj; "
              "pixel bounds ", pc.min_pixels, " .. ", pc.max_pixels, " (LightOnOCR-3's; not in GGUF: put the model's "
              "preprocessor_config.json next to the GGUF to use its own)");
  }
  return pc;
}

namespace {

// An F32 [rows, cols] matrix the Matrix owns.
Matrix f32_matrix(int64_t rows, int64_t cols, float** data) {
  auto t = std::make_shared<Tensor>(Tensor::empty(DType::kF32, rows == 1 ? std::vector<int64_t>{cols}
                                                                         : std::vector<int64_t>{rows, cols}));
  Matrix m = Matrix::from_tensor(*t);
  m.holder = t;
  *data = t->data<float>();
  return m;
}

// A vector of value-head values as F32, through `f` per element.
Matrix head_vector(GgufBinder& b, const std::string& name, int64_t n, float (*f)(float)) {
  const std::vector<float> v = b.floats(name, {n});
  float* d = nullptr;
  Matrix m = f32_matrix(1, n, &d);
  for (int64_t i = 0; i < n; ++i) d[i] = f(v[static_cast<size_t>(i)]);
  return m;
}

// ssm_a = -exp(A_log) -> A_log.
float a_log_of(float a) { return static_cast<float>(std::log(-static_cast<double>(a))); }

Linear linear(GgufBinder& b, const std::string& p, int64_t out, int64_t in) {
  return Linear{b.get(p + ".weight", {out, in}), b.vec(p + ".bias", out)};
}

}  // namespace

Weights load_gguf_weights(const GgufFiles& f, const Config& cfg, DType dequantize_to, bool keep_quantized) {
  if (dequantize_to != DType::kF32 && dequantize_to != DType::kBF16)
    fail(ErrorKind::kInvalidArgument, "quantized GGUF tensors dequantize to F32 or BF16, not ", dtype_name(dequantize_to));
  Weights w;
  const TextConfig& t = cfg.text;
  const int64_t H = t.hidden_size, hd = t.head_dim, I = t.intermediate_size;
  GgufBinder b(f.text, "Qwen3.5", dequantize_to, nullptr, keep_quantized);
  w.text.embed_tokens = b.get("token_embd.weight", {t.vocab_size, H});
  const int64_t nv = t.linear_num_value_heads, vd = t.linear_value_head_dim, vw = nv * vd, C = t.conv_dim();
  // Value heads outnumbering key heads (the 4B): the file's tiled order is kept throughout the
  // DeltaNet layers (every value-head axis is in it) and the kernel told so (DeltaNetParams::tiled).
  w.text.tiled_v_heads = t.linear_num_value_heads > t.linear_num_key_heads;
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights L;
    L.full_attention = t.full_attention[i];
    L.input_layernorm = b.vec(p + "attn_norm.weight", H);  // stored as 1 + w
    L.post_attention_layernorm = b.vec(p + "post_attention_norm.weight", H);
    if (L.full_attention) {
      const int64_t nq = t.num_attention_heads, nkv = t.num_key_value_heads;
      auto [q, gate] = split_query_gate(b.get(p + "attn_q.weight", {2 * nq * hd, H}), nq, hd);
      L.attn.qgkv.parts = {q, gate, b.get(p + "attn_k.weight", {nkv * hd, H}), b.get(p + "attn_v.weight", {nkv * hd, H})};
      L.attn.q_norm = b.vec(p + "attn_q_norm.weight", hd);
      L.attn.k_norm = b.vec(p + "attn_k_norm.weight", hd);
      L.attn.o_proj = b.get(p + "attn_output.weight", {H, nq * hd});
    } else {
      L.linear.in_proj.parts = {b.get(p + "attn_qkv.weight", {C, H}), b.get(p + "attn_gate.weight", {vw, H}),
                                b.get(p + "ssm_beta.weight", {nv, H}), b.get(p + "ssm_alpha.weight", {nv, H})};
      L.linear.conv = b.get(p + "ssm_conv1d.weight", {C, t.linear_conv_kernel_dim});
      L.linear.a_log = head_vector(b, p + "ssm_a", nv, a_log_of);
      L.linear.dt_bias = b.vec(p + "ssm_dt.bias", nv);
      L.linear.norm = b.vec(p + "ssm_norm.weight", vd);  // stored as w (transformers' gated norm)
      L.linear.out_proj = b.get(p + "ssm_out.weight", {H, vw});
    }
    L.gate_up.parts = {b.get(p + "ffn_gate.weight", {I, H}), b.get(p + "ffn_up.weight", {I, H})};
    L.down_proj = b.get(p + "ffn_down.weight", {H, I});
    w.text.layers.push_back(std::move(L));
  }
  w.text.norm = b.vec("output_norm.weight", H);
  w.text.lm_head = t.tie_word_embeddings ? w.text.embed_tokens : b.get("output.weight", {t.vocab_size, H});
  b.finish();

  GgufBinder vb(f.mmproj, "Qwen3.5", dequantize_to, nullptr, keep_quantized);
  const VisionConfig& v = cfg.vision;
  const int64_t V = v.hidden_size, VI = v.intermediate_size, M = V * v.spatial_merge_size * v.spatial_merge_size;
  const int64_t Cin = v.in_channels, P = v.patch_size, T = v.temporal_patch_size;
  {
    // The Conv3d [V, C, T, p, p] from its frames [V, C, p, p] (.weight: t = 0, .weight.1: t = 1),
    // flattened in (c, t, y, x) order as transformers' weight is.
    const std::vector<float> f0 = vb.floats("v.patch_embd.weight", {V, Cin, P, P});
    const std::vector<float> f1 = vb.floats("v.patch_embd.weight.1", {V, Cin, P, P});
    float* d = nullptr;
    w.vision.patch_embed.w = f32_matrix(V, Cin * T * P * P, &d);
    for (int64_t o = 0; o < V; ++o)
      for (int64_t c = 0; c < Cin; ++c)
        for (int64_t tt = 0; tt < T; ++tt)
          std::memcpy(d + ((o * Cin + c) * T + tt) * P * P, (tt == 0 ? f0 : f1).data() + (o * Cin + c) * P * P,
                      static_cast<size_t>(P * P) * sizeof(float));
    w.vision.patch_embed.b = vb.vec("v.patch_embd.bias", V);
  }
  w.vision.pos_embed = vb.get("v.position_embd.weight", {v.num_position_embeddings, V});
  for (int i = 0; i < v.depth; ++i) {
    const std::string p = "v.blk." + std::to_string(i) + ".";
    VisionBlockWeights B;
    B.norm1_w = vb.vec(p + "ln1.weight", V);
    B.norm1_b = vb.vec(p + "ln1.bias", V);
    B.norm2_w = vb.vec(p + "ln2.weight", V);
    B.norm2_b = vb.vec(p + "ln2.bias", V);
    B.qkv = linear(vb, p + "attn_qkv", 3 * V, V);
    B.proj = linear(vb, p + "attn_out", V, V);
    B.fc1 = linear(vb, p + "ffn_up", VI, V);
    B.fc2 = linear(vb, p + "ffn_down", V, VI);
    w.vision.blocks.push_back(std::move(B));
  }
  w.vision.merger_norm_w = vb.vec("v.post_ln.weight", V);
  w.vision.merger_norm_b = vb.vec("v.post_ln.bias", V);
  w.vision.merger_fc1 = linear(vb, "mm.0", M, M);
  w.vision.merger_fc2 = linear(vb, "mm.2", v.out_hidden_size, M);
  vb.finish();
  return w;
}

namespace {

// The byte range of a file's tensor data.
struct Span {
  const char* begin = nullptr;
  const char* end = nullptr;
  explicit Span(const io::GgufFile& f) {
    for (const io::GgufTensor& t : f.tensors()) {
      const std::string_view d = f.data(t);
      if (!begin || d.data() < begin) begin = d.data();
      if (!end || d.data() + d.size() > end) end = d.data() + d.size();
    }
  }
  bool holds(const void* p) const { return p >= begin && p < end; }
};

}  // namespace

void drop_packed_copies(Weights& w, const GgufFiles& f) {
  const Span text(*f.text), mmproj(*f.mmproj);
  auto drop = [&](Matrix& m, bool unread) {
    if (!m.data || text.holds(m.data) || mmproj.holds(m.data) || !(unread || m.packed)) return;
    m.data = nullptr;
    m.holder.reset();
  };
  auto stack = [&](StackedMatrix& s) {
    for (Matrix& p : s.parts) drop(p, s.fused.rows > 0);
  };
  for (LayerWeights& L : w.text.layers) {
    if (L.full_attention) {
      stack(L.attn.qgkv);
      drop(L.attn.o_proj, false);
    } else {
      stack(L.linear.in_proj);
      drop(L.linear.out_proj, false);
    }
    stack(L.gate_up);
    drop(L.down_proj, false);
  }
  if (w.text.lm_head.data != w.text.embed_tokens.data) drop(w.text.lm_head, false);
  drop(w.vision.patch_embed.w, false);
  for (VisionBlockWeights& B : w.vision.blocks)
    for (Linear* l : {&B.qkv, &B.proj, &B.fc1, &B.fc2}) drop(l->w, false);
  drop(w.vision.merger_fc1.w, false);
  drop(w.vision.merger_fc2.w, false);
}

}  // namespace locr::model::qwen35
