#include "model/lightonocr/gguf_checkpoint.h"

#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "model/gguf_binder.h"
#include "model/gguf_model_meta.h"

namespace locr::model {

using nlohmann::json;

GgufCheckpoint open_gguf_checkpoint(const std::string& text_path, const std::string& mmproj_path) {
  GgufCheckpoint ck;
  ck.text = io::GgufFile::open(text_path);
  const std::string arch = gguf_meta_string(*ck.text, "general.architecture");
  if (arch == "clip")
    fail(ErrorKind::kInvalidArgument, text_path, " is an mmproj (general.architecture 'clip'): give the text GGUF "
         "(arch 'qwen3') as the model and this file with --mmproj");
  if (arch != "qwen3")
    fail(ErrorKind::kUnsupported, text_path, ": general.architecture is '", arch, "'; a LightOnOCR text GGUF is "
         "'qwen3' (LightOnOCR's decoder converted by llama.cpp's Qwen3 converter)");
  if (mmproj_path.empty()) return ck;
  ck.mmproj = open_mmproj(mmproj_path, "lightonocr", ErrorKind::kUnsupported,
                          "locr runs LightOnOCR, whose mmproj has projector type 'lightonocr'");
  return ck;
}

ModelConfig gguf_model_config(const GgufCheckpoint& ck) {
  const io::GgufFile& f = *ck.text;
  ModelConfig c;
  c.model_type = "gguf:qwen3";
  TextConfig& t = c.text;
  t.hidden_size = gguf_meta_i32(f, "qwen3.embedding_length", 0, true);
  t.intermediate_size = gguf_meta_i32(f, "qwen3.feed_forward_length", 0, true);
  t.num_hidden_layers = gguf_meta_i32(f, "qwen3.block_count", 0, true);
  t.num_attention_heads = gguf_meta_i32(f, "qwen3.attention.head_count", 0, true);
  t.num_key_value_heads =
      gguf_meta_i32(f, "qwen3.attention.head_count_kv", t.num_attention_heads);
  t.head_dim = gguf_meta_i32(f, "qwen3.attention.key_length", t.hidden_size / t.num_attention_heads);
  const int64_t vlen = gguf_meta_int(f, "qwen3.attention.value_length", t.head_dim);
  if (vlen != t.head_dim)
    fail(ErrorKind::kUnsupported, f.name(), ": qwen3.attention.value_length ", vlen, " differs from key_length ",
         t.head_dim, "; LightOnOCR's decoder has one head_dim");
  if (t.num_key_value_heads <= 0 || t.head_dim <= 0 || t.num_attention_heads % t.num_key_value_heads != 0)
    fail(ErrorKind::kInvalidArgument, f.name(), ": head counts ", t.num_attention_heads, "/", t.num_key_value_heads,
         " and head_dim ", t.head_dim, " do not describe a grouped-query attention");
  t.rms_norm_eps = static_cast<float>(gguf_meta_float(f, "qwen3.attention.layer_norm_rms_epsilon", 1e-6));
  t.rope_theta = gguf_meta_float(f, "qwen3.rope.freq_base", 1e6);
  t.max_position_embeddings = gguf_meta_i32(f, "qwen3.context_length", 16384);
  for (const char* k : {"qwen3.rope.scaling.type", "qwen3.rope.dimension_count", "qwen3.expert_count",
                        "qwen3.attention.sliding_window"}) {
    if (!f.has(k)) continue;
    const json& v = f.metadata()[k];
    const bool inert = (std::strcmp(k, "qwen3.rope.scaling.type") == 0 && v.is_string() && v == "none") ||
                       (std::strcmp(k, "qwen3.rope.dimension_count") == 0 && v.is_number_integer() &&
                        v.get<int64_t>() == t.head_dim);
    if (!inert)
      fail(ErrorKind::kUnsupported, f.name(), ": metadata ", k, " = ", v.dump(), " is not supported (LightOnOCR's "
           "decoder has plain full RoPE over head_dim, full attention and no experts)");
  }
  const io::GgufTensor* emb = f.find("token_embd.weight");
  if (!emb) fail(ErrorKind::kNotFound, f.name(), ": text GGUF is missing tensor 'token_embd.weight'");
  if (emb->ne.size() != 2) fail(ErrorKind::kInvalidArgument, f.name(), ": 'token_embd.weight' is not 2-D");
  if (emb->ne[1] > (1 << 30)) fail(ErrorKind::kInvalidArgument, f.name(), ": 'token_embd.weight' has too many rows");
  t.vocab_size = static_cast<int>(emb->ne[1]);
  t.tie_word_embeddings = f.find("output.weight") == nullptr;

  // Not in GGUF: the image token. LightOnOCR's is <|image_pad|> (151655 in the real vocabulary).
  c.image_token_id = gguf_token_id(f, "<|image_pad|>");
  if (c.image_token_id < 0) {
    c.image_token_id = 151655;
    LOCR_INFO("gguf: ", f.name(), ": no <|image_pad|> in tokenizer.ggml.tokens; image token id ", c.image_token_id,
              " (LightOnOCR's default)");
  }
  // HF's projector RMSNorm uses text_config.rms_norm_eps (llama.cpp uses the clip eps, 1e-5).
  c.projector_norm_eps = t.rms_norm_eps;
  c.projector_hidden_act = "gelu";  // exact erf GELU, as HF (llama.cpp: tanh approximation)
  c.multimodal_projector_bias = false;
  if (!ck.mmproj) return c;

  const io::GgufFile& m = *ck.mmproj;
  VisionConfig& v = c.vision;
  v.hidden_size = gguf_meta_i32(m, "clip.vision.embedding_length", 0, true);
  v.intermediate_size =
      gguf_meta_i32(m, "clip.vision.feed_forward_length", 0, true);
  v.num_hidden_layers = gguf_meta_i32(m, "clip.vision.block_count", 0, true);
  v.num_attention_heads =
      gguf_meta_i32(m, "clip.vision.attention.head_count", 0, true);
  if (v.hidden_size % v.num_attention_heads != 0)
    fail(ErrorKind::kInvalidArgument, m.name(), ": clip.vision.embedding_length ", v.hidden_size,
         " is not a multiple of the head count ", v.num_attention_heads);
  v.head_dim = v.hidden_size / v.num_attention_heads;  // Pixtral: hidden / heads
  v.patch_size = gguf_meta_i32(m, "clip.vision.patch_size", 0, true);
  v.image_size = gguf_meta_i32(m, "clip.vision.image_size", 1540);
  v.norm_eps = static_cast<float>(gguf_meta_float(m, "clip.vision.attention.layer_norm_epsilon", 1e-5));
  v.rope_theta = 10000.0;  // not in the mmproj; Pixtral's (llama.cpp hard-codes it too)
  c.spatial_merge_size = gguf_meta_i32(m, "clip.vision.spatial_merge_size", 2);
  const int64_t proj_dim = gguf_meta_int(m, "clip.vision.projection_dim", t.hidden_size);
  if (proj_dim != t.hidden_size)
    fail(ErrorKind::kInvalidArgument, m.name(), ": clip.vision.projection_dim ", proj_dim,
         " differs from the text model's embedding_length ", t.hidden_size, " (", f.name(),
         "): the mmproj belongs to another model");
  if (gguf_meta_bool(m, "clip.use_gelu", false) || !gguf_meta_bool(m, "clip.use_silu", true))
    fail(ErrorKind::kUnsupported, m.name(), ": the vision MLP activation is not SiLU (clip.use_silu / "
         "clip.use_gelu); LightOnOCR's Pixtral encoder uses SiLU");
  return c;
}

ProcessorConfig gguf_processor_config(const GgufCheckpoint& ck, int align) {
  ProcessorConfig pc;
  if (align != 14 && align != 28) fail(ErrorKind::kInvalidArgument, "--image-align must be 14 or 28, got ", align);
  pc.align = align;
  if (!ck.mmproj) return pc;
  const io::GgufFile& m = *ck.mmproj;
  pc.longest_edge = gguf_meta_i32(m, "clip.vision.image_size", 1540);
  pc.patch_size = gguf_meta_i32(m, "clip.vision.patch_size", 14);
  pc.spatial_merge_size = gguf_meta_i32(m, "clip.vision.spatial_merge_size", 2);
  gguf_mean_std(m, &pc.image_mean, &pc.image_std);
  return pc;
}

std::vector<int64_t> unpermute_rows(int64_t n_heads, int64_t head_dim) {
  std::vector<int64_t> row_of(static_cast<size_t>(n_heads * head_dim));
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t j = 0; j < half; ++j) row_of[h * head_dim + s * half + j] = h * head_dim + 2 * j + s;
  return row_of;
}

ModelWeights load_gguf_weights(const GgufCheckpoint& ck, const ModelConfig& cfg, DType dequantize_to,
                               kernels::Ops* pack, bool keep_quantized) {
  if (dequantize_to != DType::kF32 && dequantize_to != DType::kBF16)
    fail(ErrorKind::kInvalidArgument, "quantized GGUF tensors dequantize to F32 or BF16, not ", dtype_name(dequantize_to));
  ModelWeights w;
  const TextConfig& t = cfg.text;
  const int64_t H = t.hidden_size, hd = t.head_dim;
  GgufBinder b(ck.text, "LightOnOCR", dequantize_to, pack, keep_quantized);
  w.text.embed_tokens = b.get("token_embd.weight", {t.vocab_size, H});
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    TextLayerWeights L;
    L.input_layernorm = b.vec(p + "attn_norm.weight", H);
    L.q_proj = b.get(p + "attn_q.weight", {t.num_attention_heads * hd, H});
    L.k_proj = b.get(p + "attn_k.weight", {t.num_key_value_heads * hd, H});
    L.v_proj = b.get(p + "attn_v.weight", {t.num_key_value_heads * hd, H});
    L.o_proj = b.get(p + "attn_output.weight", {H, t.num_attention_heads * hd});
    L.q_norm = b.vec(p + "attn_q_norm.weight", hd);
    L.k_norm = b.vec(p + "attn_k_norm.weight", hd);
    L.post_attention_layernorm = b.vec(p + "ffn_norm.weight", H);
    L.gate_proj = b.get(p + "ffn_gate.weight", {t.intermediate_size, H});
    L.up_proj = b.get(p + "ffn_up.weight", {t.intermediate_size, H});
    L.down_proj = b.get(p + "ffn_down.weight", {H, t.intermediate_size});
    w.text.layers.push_back(std::move(L));
  }
  w.text.norm = b.vec("output_norm.weight", H);
  w.text.lm_head = b.has("output.weight") ? b.get("output.weight", {t.vocab_size, H}) : w.text.embed_tokens;
  b.finish();

  w.has_vision = ck.mmproj != nullptr;
  if (!w.has_vision) return w;
  GgufBinder vb(ck.mmproj, "LightOnOCR", dequantize_to, pack, keep_quantized);
  const VisionConfig& v = cfg.vision;
  const int64_t V = v.hidden_size, p = v.patch_size;
  const int64_t A = static_cast<int64_t>(v.num_attention_heads) * v.head_dim;
  // The converter permuted q/k rows for ggml's interleaved 2-D RoPE; locr rotates halves as HF.
  const std::vector<int64_t> qk_rows = unpermute_rows(v.num_attention_heads, v.head_dim);
  w.vision.patch_conv = vb.get("v.patch_embd.weight", {V, 3 * p * p});
  w.vision.ln_pre = vb.vec("v.pre_ln.weight", V);
  for (int i = 0; i < v.num_hidden_layers; ++i) {
    const std::string lp = "v.blk." + std::to_string(i) + ".";
    VisionLayerWeights L;
    L.attention_norm = vb.vec(lp + "ln1.weight", V);
    L.q_proj = vb.get(lp + "attn_q.weight", {A, V}, &qk_rows);
    L.k_proj = vb.get(lp + "attn_k.weight", {A, V}, &qk_rows);
    L.v_proj = vb.get(lp + "attn_v.weight", {A, V});
    L.o_proj = vb.get(lp + "attn_out.weight", {V, A});
    L.ffn_norm = vb.vec(lp + "ln2.weight", V);
    L.gate_proj = vb.get(lp + "ffn_gate.weight", {v.intermediate_size, V});
    L.up_proj = vb.get(lp + "ffn_up.weight", {v.intermediate_size, V});
    L.down_proj = vb.get(lp + "ffn_down.weight", {V, v.intermediate_size});
    w.vision.layers.push_back(std::move(L));
  }
  const int64_t m2 = static_cast<int64_t>(cfg.spatial_merge_size) * cfg.spatial_merge_size;
  w.projector.norm = vb.vec("mm.input_norm.weight", V);
  w.projector.merging_layer = vb.get("mm.patch_merger.weight", {V, V * m2});
  w.projector.linear_1 = vb.get("mm.1.weight", {H, V});
  w.projector.linear_2 = vb.get("mm.2.weight", {H, H});
  vb.finish();
  return w;
}

}  // namespace locr::model
