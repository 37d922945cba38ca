// `locr quantize` for LightOnOCR-2: a model directory to llama.cpp's two GGUF files; see gguf_export.h.
#include "model/lightonocr/gguf_export.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "io/gguf_writer.h"
#include "io/safetensors.h"
#include "model/gguf_export_parts.h"
#include "model/gguf_export_vocab.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/gguf_checkpoint.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/lightonocr/weights.h"

namespace locr::model {

using nlohmann::json;
using io::GgmlType;
using namespace export_detail;

GgufExportResult export_gguf(const std::string& dir, const std::string& text_path, const std::string& mmproj_path,
                             GgufOutType type) {
  if (!io::is_directory(dir))
    fail(ErrorKind::kNotFound, "model directory not found: ", dir, " (locr quantize reads a Hugging Face model "
         "directory: config.json, tokenizer.json, *.safetensors)");
  check_dir(text_path);
  check_dir(mmproj_path);
  if (std::filesystem::weakly_canonical(text_path) == std::filesystem::weakly_canonical(mmproj_path))
    fail(ErrorKind::kInvalidArgument, "the text GGUF and the mmproj GGUF would be the same file: ", text_path);

  const ModelConfig cfg = ModelConfig::from_file(io::join_path(dir, "config.json"));
  const json raw = read_json(io::join_path(dir, "config.json"));
  const json vraw = raw.contains("vision_config") && raw["vision_config"].is_object() ? raw["vision_config"] : json::object();
  const ProcessorConfig pc = load_processor_config(dir, 28);
  const io::SafetensorsSet st = io::SafetensorsSet::open_dir(dir);
  const ModelWeights w = load_weights(st, cfg);
  const TextConfig& t = cfg.text;
  const bool k_mix = type == GgufOutType::kQ4_K_M;
  const GgmlType wt = weight_type(type);
  // The mmproj of a q4_k_m export is the q8_0 one: llama-quantize does not take a clip model, and
  // Q8_0 is the smallest type llama.cpp's converter writes for it.
  const GgufOutType mm_type = k_mix ? GgufOutType::kQ8_0 : type;
  const GgmlType mwt = weight_type(mm_type);

  // The text model: the checkpoint's order by name (lm_head.weight, then model.language_model.*:
  // embed_tokens, layers.N in string order, norm), each layer's tensors by their HF names.
  std::vector<Item> text;
  auto mat = [&](std::vector<Item>& v, std::string name, const Matrix& m, GgmlType ty) {
    v.push_back({std::move(name), &m, ne_of(m, false), ty, {}});
  };
  auto vec = [&](std::vector<Item>& v, std::string name, const Matrix& m) {
    v.push_back({std::move(name), &m, ne_of(m, true), GgmlType::kF32, {}});
  };
  const bool untied = w.text.lm_head.data != w.text.embed_tokens.data;
  if (untied) mat(text, "output.weight", w.text.lm_head, wt);
  mat(text, "token_embd.weight", w.text.embed_tokens, wt);
  std::vector<int> order(static_cast<size_t>(t.num_hidden_layers));
  for (int i = 0; i < t.num_hidden_layers; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [](int a, int b) { return std::to_string(a) < std::to_string(b); });
  for (int i : order) {
    const TextLayerWeights& L = w.text.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    vec(text, p + "attn_norm.weight", L.input_layernorm);
    mat(text, p + "ffn_down.weight", L.down_proj, wt);
    mat(text, p + "ffn_gate.weight", L.gate_proj, wt);
    mat(text, p + "ffn_up.weight", L.up_proj, wt);
    vec(text, p + "ffn_norm.weight", L.post_attention_layernorm);
    vec(text, p + "attn_k_norm.weight", L.k_norm);
    mat(text, p + "attn_k.weight", L.k_proj, wt);
    mat(text, p + "attn_output.weight", L.o_proj, wt);
    vec(text, p + "attn_q_norm.weight", L.q_norm);
    mat(text, p + "attn_q.weight", L.q_proj, wt);
    mat(text, p + "attn_v.weight", L.v_proj, wt);
  }
  vec(text, "output_norm.weight", w.text.norm);

  // The mmproj: v.* (vision_encoder) then mm.* (vision_projection), by HF name.
  std::vector<Item> mm;
  const VisionConfig& v = cfg.vision;
  if (w.has_vision) {
    // patch_embd and patch_merger: F16 in an f16 file, F32 otherwise (MmprojModel.tensor_force_quant).
    const GgmlType forced = mm_type == GgufOutType::kF16 ? GgmlType::kF16 : GgmlType::kF32;
    vec(mm, "v.pre_ln.weight", w.vision.ln_pre);
    mm.push_back({"v.patch_embd.weight", &w.vision.patch_conv,
                  {v.patch_size, v.patch_size, v.num_channels, v.hidden_size}, forced, {}});
    // LlamaModel.permute on q/k: GGUF row unpermute_rows[r] holds HF row r.
    const std::vector<int64_t> row_of = unpermute_rows(v.num_attention_heads, v.hidden_size / v.num_attention_heads);
    std::vector<int64_t> row_from(row_of.size());
    for (size_t r = 0; r < row_of.size(); ++r) row_from[static_cast<size_t>(row_of[r])] = static_cast<int64_t>(r);
    std::vector<int> vorder(static_cast<size_t>(v.num_hidden_layers));
    for (int i = 0; i < v.num_hidden_layers; ++i) vorder[i] = i;
    std::sort(vorder.begin(), vorder.end(), [](int a, int b) { return std::to_string(a) < std::to_string(b); });
    for (int i : vorder) {
      const VisionLayerWeights& L = w.vision.layers[i];
      const std::string p = "v.blk." + std::to_string(i) + ".";
      mat(mm, p + "attn_k.weight", L.k_proj, mwt);
      mm.back().row_from = row_from;
      mat(mm, p + "attn_out.weight", L.o_proj, mwt);
      mat(mm, p + "attn_q.weight", L.q_proj, mwt);
      mm.back().row_from = row_from;
      mat(mm, p + "attn_v.weight", L.v_proj, mwt);
      vec(mm, p + "ln1.weight", L.attention_norm);
      mat(mm, p + "ffn_down.weight", L.down_proj, mwt);
      mat(mm, p + "ffn_gate.weight", L.gate_proj, mwt);
      mat(mm, p + "ffn_up.weight", L.up_proj, mwt);
      vec(mm, p + "ln2.weight", L.ffn_norm);
    }
    mat(mm, "mm.1.weight", w.projector.linear_1, mwt);
    mat(mm, "mm.2.weight", w.projector.linear_2, mwt);
    vec(mm, "mm.input_norm.weight", w.projector.norm);
    mat(mm, "mm.patch_merger.weight", w.projector.merging_layer, forced);
  }

  GgufExportResult res;
  if (k_mix) std::stable_sort(text.begin(), text.end(), llama_tensor_order);  // llama-quantize's order
  settle_types(text, mm, k_mix, t.num_hidden_layers, !untied, text_path, mmproj_path, &res);

  const std::string name = model_name(dir);
  {
    io::GgufWriter g;
    add_general(g, "qwen3", "model", dir, name, text);
    g.add_u32("qwen3.block_count", static_cast<uint32_t>(t.num_hidden_layers));
    g.add_u32("qwen3.context_length", static_cast<uint32_t>(t.max_position_embeddings));
    g.add_u32("qwen3.embedding_length", static_cast<uint32_t>(t.hidden_size));
    g.add_u32("qwen3.feed_forward_length", static_cast<uint32_t>(t.intermediate_size));
    g.add_u32("qwen3.attention.head_count", static_cast<uint32_t>(t.num_attention_heads));
    g.add_u32("qwen3.attention.head_count_kv", static_cast<uint32_t>(t.num_key_value_heads));
    g.add_f32("qwen3.rope.freq_base", static_cast<float>(t.rope_theta));
    g.add_f32("qwen3.attention.layer_norm_rms_epsilon", t.rms_norm_eps);
    g.add_u32("qwen3.attention.key_length", static_cast<uint32_t>(t.head_dim));
    g.add_u32("qwen3.attention.value_length", static_cast<uint32_t>(t.head_dim));
    if (!k_mix) {
      g.add_u32("general.file_type", file_type(type));
      g.add_u32("general.quantization_version", 2);
    }
    add_gguf_vocab(g, dir, t.vocab_size);
    if (k_mix) {  // llama-quantize sets these two last (gguf_set_val_u32 removes, then appends, a key)
      g.add_u32("general.quantization_version", 2);
      g.add_u32("general.file_type", file_type(type));
    }
    add_tensors(g, text);
    res.text_tensors = static_cast<int>(g.tensor_count());
    res.text_bytes = g.write(text_path);
  }
  if (!w.has_vision) {
    LOCR_WARN("quantize: the model has no vision encoder; no mmproj written");
    return res;
  }
  {
    io::GgufWriter g;
    add_general(g, "clip", "mmproj", dir, name, mm);
    add_clip_vision(g, {file_type(mm_type), static_cast<uint32_t>(t.hidden_size), static_cast<uint32_t>(v.image_size),
                        static_cast<uint32_t>(v.patch_size), static_cast<uint32_t>(v.hidden_size),
                        static_cast<uint32_t>(v.intermediate_size), static_cast<uint32_t>(v.num_hidden_layers),
                        static_cast<uint32_t>(v.num_attention_heads), pc.image_mean, pc.image_std});
    g.add_string("clip.projector_type", "lightonocr");
    g.add_f32("clip.vision.attention.layer_norm_epsilon",
              vraw.contains("layer_norm_eps") && vraw["layer_norm_eps"].is_number() ? vraw["layer_norm_eps"].get<float>()
                                                                                    : 1e-5f);
    const std::string act = vraw.value("hidden_act", std::string("silu"));
    if (act == "silu") g.add_bool("clip.use_silu", true);
    else if (act == "gelu") g.add_bool("clip.use_gelu", true);
    else fail(ErrorKind::kUnsupported, dir, "/config.json: vision_config.hidden_act '", act, "' (silu or gelu)");
    g.add_u32("clip.vision.spatial_merge_size", static_cast<uint32_t>(cfg.spatial_merge_size));
    g.add_u32("general.quantization_version", 2);
    add_tensors(g, mm);
    res.mmproj_tensors = static_cast<int>(g.tensor_count());
    res.mmproj_bytes = g.write(mmproj_path);
  }
  return res;
}

}  // namespace locr::model
