#include "model/lightonocr/config.h"

#include "core/error.h"
#include "model/json_fields.h"
#include "model/lightonocr/config_check.h"
#include "io/file.h"

namespace locr::model {

using nlohmann::json;


ModelConfig ModelConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(ErrorKind::kInvalidArgument, source, " is not a JSON object");
  ModelConfig c;
  read_field(j, "model_type", &c.model_type, source);
  if (!c.model_type.empty() && c.model_type != "mistral3" && c.model_type != "lighton_ocr" &&
      c.model_type != "lightonocr")
    fail(ErrorKind::kUnsupported, source, ": model_type '", c.model_type,
         "' is not a LightOnOCR model (expected \"mistral3\" or \"lighton_ocr\")");
  if (!j.contains("text_config") || !j["text_config"].is_object())
    fail(ErrorKind::kInvalidArgument, source, ": missing \"text_config\" object");
  if (!j.contains("vision_config") || !j["vision_config"].is_object())
    fail(ErrorKind::kInvalidArgument, source, ": missing \"vision_config\" object");

  const json& t = j["text_config"];
  const std::string tw = source + " text_config";
  TextConfig& tc = c.text;
  read_field(t, "hidden_size", &tc.hidden_size, tw);
  read_field(t, "intermediate_size", &tc.intermediate_size, tw);
  read_field(t, "num_hidden_layers", &tc.num_hidden_layers, tw);
  read_field(t, "num_attention_heads", &tc.num_attention_heads, tw);
  tc.num_key_value_heads = tc.num_attention_heads;
  read_field(t, "num_key_value_heads", &tc.num_key_value_heads, tw);
  tc.head_dim = tc.num_attention_heads > 0 ? tc.hidden_size / tc.num_attention_heads : 0;
  read_field(t, "head_dim", &tc.head_dim, tw);
  read_field(t, "vocab_size", &tc.vocab_size, tw);
  read_field(t, "rms_norm_eps", &tc.rms_norm_eps, tw);
  read_field(t, "rope_theta", &tc.rope_theta, tw);
  if (t.contains("rope_parameters") && t["rope_parameters"].is_object()) {
    const json& rp = t["rope_parameters"];
    read_field(rp, "rope_theta", &tc.rope_theta, tw + " rope_parameters");
  }
  read_field(t, "max_position_embeddings", &tc.max_position_embeddings, tw);
  read_field(t, "tie_word_embeddings", &tc.tie_word_embeddings, tw);
  // transformers keeps the flag on the composite config too; the top level wins when present.
  read_field(j, "tie_word_embeddings", &tc.tie_word_embeddings, source);
  for (auto [v, k] : {std::pair{tc.hidden_size, "hidden_size"}, {tc.intermediate_size, "intermediate_size"},
                      {tc.num_hidden_layers, "num_hidden_layers"}, {tc.num_attention_heads, "num_attention_heads"},
                      {tc.num_key_value_heads, "num_key_value_heads"}, {tc.head_dim, "head_dim"},
                      {tc.vocab_size, "vocab_size"}})
    require_positive(v, k, tw);
  if (tc.num_attention_heads % tc.num_key_value_heads != 0)
    fail(ErrorKind::kInvalidArgument, tw, ": num_attention_heads (", tc.num_attention_heads,
         ") is not a multiple of num_key_value_heads (", tc.num_key_value_heads, ")");
  if (tc.head_dim % 2 != 0) fail(ErrorKind::kInvalidArgument, tw, ": head_dim must be even for RoPE");
  check_text_config_keys(t, tc.num_hidden_layers, tw);

  const json& v = j["vision_config"];
  const std::string vw = source + " vision_config";
  VisionConfig& vc = c.vision;
  read_field(v, "hidden_size", &vc.hidden_size, vw);
  read_field(v, "intermediate_size", &vc.intermediate_size, vw);
  read_field(v, "num_hidden_layers", &vc.num_hidden_layers, vw);
  read_field(v, "num_attention_heads", &vc.num_attention_heads, vw);
  // transformers' Pixtral derives head_dim from hidden_size / num_attention_heads and ignores a
  // configured value; do the same.
  vc.head_dim = vc.num_attention_heads > 0 ? vc.hidden_size / vc.num_attention_heads : 0;
  read_field(v, "patch_size", &vc.patch_size, vw);
  read_field(v, "image_size", &vc.image_size, vw);
  read_field(v, "num_channels", &vc.num_channels, vw);
  read_field(v, "rope_theta", &vc.rope_theta, vw);
  if (v.contains("rope_parameters") && v["rope_parameters"].is_object())
    read_field(v["rope_parameters"], "rope_theta", &vc.rope_theta, vw + " rope_parameters");
  for (auto [val, k] : {std::pair{vc.hidden_size, "hidden_size"}, {vc.intermediate_size, "intermediate_size"},
                        {vc.num_hidden_layers, "num_hidden_layers"}, {vc.num_attention_heads, "num_attention_heads"},
                        {vc.head_dim, "head_dim"}, {vc.patch_size, "patch_size"}, {vc.image_size, "image_size"}})
    require_positive(val, k, vw);
  if (vc.head_dim % 4 != 0) fail(ErrorKind::kInvalidArgument, vw, ": head_dim must be a multiple of 4 for 2-D RoPE");
  if (vc.num_channels != 3) fail(ErrorKind::kUnsupported, vw, ": num_channels must be 3, got ", vc.num_channels);
  check_vision_config_keys(v, vw);

  // image_token_id (hub / vLLM form) or image_token_index (transformers and the 0.9B variants).
  if (j.contains("image_token_id")) read_field(j, "image_token_id", &c.image_token_id, source);
  else read_field(j, "image_token_index", &c.image_token_id, source);
  read_field(j, "spatial_merge_size", &c.spatial_merge_size, source);
  read_field(j, "projector_hidden_act", &c.projector_hidden_act, source);
  read_field(j, "multimodal_projector_bias", &c.multimodal_projector_bias, source);
  c.projector_norm_eps = tc.rms_norm_eps;
  check_top_config_keys(j, source);
  if (c.projector_hidden_act != "gelu")
    fail(ErrorKind::kUnsupported, source, ": projector_hidden_act '", c.projector_hidden_act, "' (only \"gelu\")");
  if (c.spatial_merge_size != 2) fail(ErrorKind::kUnsupported, source, ": spatial_merge_size must be 2");
  int vfl = -1;
  read_field(j, "vision_feature_layer", &vfl, source);
  if (vfl != -1) fail(ErrorKind::kUnsupported, source, ": vision_feature_layer ", vfl, " (only -1)");
  if (c.image_token_id < 0 || c.image_token_id >= tc.vocab_size)
    fail(ErrorKind::kInvalidArgument, source, ": image token id ", c.image_token_id, " outside the vocabulary");
  return c;
}

ModelConfig ModelConfig::from_file(const std::string& path) { return from_json(read_json_file(path), path); }

}  // namespace locr::model
