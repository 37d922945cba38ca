#include "model/qwen35/config.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "model/json_fields.h"

namespace locr::model::qwen35 {

using nlohmann::json;

namespace {

// A key whose value would change the math but that this implementation does not support.
template <typename T>
void require_value(const json& obj, const char* key, const T& expected, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return;
  T v{};
  read_field(obj, key, &v, where);
  if (!(v == expected))
    fail(ErrorKind::kUnsupported, where, ": '", key, "' = ", obj[key].dump(), " is not supported (only ",
         json(expected).dump(), ")");
}

void parse_text(const json& t, TextConfig& c, const std::string& w) {
  read_field(t, "vocab_size", &c.vocab_size, w);
  read_field(t, "hidden_size", &c.hidden_size, w);
  read_field(t, "intermediate_size", &c.intermediate_size, w);
  read_field(t, "num_hidden_layers", &c.num_hidden_layers, w);
  read_field(t, "num_attention_heads", &c.num_attention_heads, w);
  read_field(t, "num_key_value_heads", &c.num_key_value_heads, w);
  read_field(t, "head_dim", &c.head_dim, w);
  read_field(t, "rms_norm_eps", &c.rms_norm_eps, w);
  read_field(t, "tie_word_embeddings", &c.tie_word_embeddings, w);
  read_field(t, "max_position_embeddings", &c.max_position_embeddings, w);
  read_field(t, "linear_conv_kernel_dim", &c.linear_conv_kernel_dim, w);
  read_field(t, "linear_key_head_dim", &c.linear_key_head_dim, w);
  read_field(t, "linear_value_head_dim", &c.linear_value_head_dim, w);
  read_field(t, "linear_num_key_heads", &c.linear_num_key_heads, w);
  read_field(t, "linear_num_value_heads", &c.linear_num_value_heads, w);
  require_value(t, "hidden_act", std::string("silu"), w);
  require_value(t, "attention_bias", false, w);
  // Flat rope keys (older configs) first, rope_parameters over them.
  read_field(t, "rope_theta", &c.rope_theta, w);
  read_field(t, "partial_rotary_factor", &c.partial_rotary_factor, w);
  if (t.contains("rope_parameters") && t["rope_parameters"].is_object()) {
    const json& rp = t["rope_parameters"];
    const std::string rw = w + " rope_parameters";
    require_value(rp, "rope_type", std::string("default"), rw);
    require_value(rp, "mrope_interleaved", true, rw);
    read_field(rp, "rope_theta", &c.rope_theta, rw);
    read_field(rp, "partial_rotary_factor", &c.partial_rotary_factor, rw);
    if (rp.contains("mrope_section") && !rp["mrope_section"].is_null()) {
      std::vector<int> s;
      read_field(rp, "mrope_section", &s, rw);
      if (s.size() != 3) fail(ErrorKind::kInvalidArgument, rw, ": mrope_section must have 3 entries");
      c.mrope_section = {s[0], s[1], s[2]};
    }
  }
  for (auto [v, k] : {std::pair{c.vocab_size, "vocab_size"}, {c.hidden_size, "hidden_size"},
                      {c.intermediate_size, "intermediate_size"}, {c.num_hidden_layers, "num_hidden_layers"},
                      {c.num_attention_heads, "num_attention_heads"}, {c.num_key_value_heads, "num_key_value_heads"},
                      {c.head_dim, "head_dim"}, {c.linear_conv_kernel_dim, "linear_conv_kernel_dim"},
                      {c.linear_key_head_dim, "linear_key_head_dim"}, {c.linear_value_head_dim, "linear_value_head_dim"},
                      {c.linear_num_key_heads, "linear_num_key_heads"},
                      {c.linear_num_value_heads, "linear_num_value_heads"}})
    require_positive(v, k, w);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail(ErrorKind::kInvalidArgument, w, ": num_attention_heads (", c.num_attention_heads,
         ") is not a multiple of num_key_value_heads (", c.num_key_value_heads, ")");
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0)
    fail(ErrorKind::kInvalidArgument, w, ": linear_num_value_heads (", c.linear_num_value_heads,
         ") is not a multiple of linear_num_key_heads (", c.linear_num_key_heads, ")");
  const int rot = c.rotary_dim();
  if (rot <= 0 || rot % 2 != 0 || rot > c.head_dim)
    fail(ErrorKind::kInvalidArgument, w, ": partial_rotary_factor ", c.partial_rotary_factor, " of head_dim ",
         c.head_dim, " gives no even rotary width");
  for (int s : c.mrope_section)
    if (s < 0) fail(ErrorKind::kInvalidArgument, w, ": negative mrope_section entry");

  // layer_types, else every full_attention_interval-th layer is full attention (default 4).
  c.full_attention.assign(c.num_hidden_layers, false);
  if (t.contains("layer_types") && !t["layer_types"].is_null()) {
    std::vector<std::string> types;
    read_field(t, "layer_types", &types, w);
    if (static_cast<int>(types.size()) != c.num_hidden_layers)
      fail(ErrorKind::kInvalidArgument, w, ": layer_types has ", types.size(), " entries for ", c.num_hidden_layers,
           " layers");
    for (int i = 0; i < c.num_hidden_layers; ++i) {
      if (types[i] == "full_attention") {
        c.full_attention[i] = true;
      } else if (types[i] != "linear_attention") {
        fail(ErrorKind::kUnsupported, w, ": layer_types[", i, "] = \"", types[i],
             "\" (expected \"linear_attention\" or \"full_attention\")");
      }
    }
  } else {
    int interval = 4;
    read_field(t, "full_attention_interval", &interval, w);
    require_positive(interval, "full_attention_interval", w);
    for (int i = 0; i < c.num_hidden_layers; ++i) c.full_attention[i] = (i + 1) % interval == 0;
  }
}

void parse_vision(const json& v, VisionConfig& c, const std::string& w) {
  read_field(v, "depth", &c.depth, w);
  read_field(v, "hidden_size", &c.hidden_size, w);
  read_field(v, "intermediate_size", &c.intermediate_size, w);
  read_field(v, "num_heads", &c.num_heads, w);
  read_field(v, "in_channels", &c.in_channels, w);
  read_field(v, "patch_size", &c.patch_size, w);
  read_field(v, "temporal_patch_size", &c.temporal_patch_size, w);
  read_field(v, "spatial_merge_size", &c.spatial_merge_size, w);
  read_field(v, "out_hidden_size", &c.out_hidden_size, w);
  read_field(v, "num_position_embeddings", &c.num_position_embeddings, w);
  require_value(v, "hidden_act", std::string("gelu_pytorch_tanh"), w);
  if (v.contains("rope_parameters") && v["rope_parameters"].is_object())
    read_field(v["rope_parameters"], "rope_theta", &c.rope_theta, w + " rope_parameters");
  if (v.contains("deepstack_visual_indexes") && v["deepstack_visual_indexes"].is_array() &&
      !v["deepstack_visual_indexes"].empty())
    fail(ErrorKind::kUnsupported, w, ": deepstack_visual_indexes (Qwen3-VL's DeepStack) is not part of Qwen3.5");
  for (auto [x, k] : {std::pair{c.depth, "depth"}, {c.hidden_size, "hidden_size"},
                      {c.intermediate_size, "intermediate_size"}, {c.num_heads, "num_heads"},
                      {c.in_channels, "in_channels"}, {c.patch_size, "patch_size"},
                      {c.temporal_patch_size, "temporal_patch_size"}, {c.spatial_merge_size, "spatial_merge_size"},
                      {c.out_hidden_size, "out_hidden_size"}, {c.num_position_embeddings, "num_position_embeddings"}})
    require_positive(x, k, w);
  if (c.hidden_size % c.num_heads != 0 || c.head_dim() % 4 != 0)
    fail(ErrorKind::kInvalidArgument, w, ": hidden_size ", c.hidden_size, " over ", c.num_heads,
         " heads gives no head width that is a multiple of 4 (2-D rotary)");
  if (c.grid_side() * c.grid_side() != c.num_position_embeddings)
    fail(ErrorKind::kInvalidArgument, w, ": num_position_embeddings ", c.num_position_embeddings,
         " is not a square");
}

}  // namespace

int TextConfig::n_full_layers() const {
  int n = 0;
  for (bool f : full_attention) n += f;
  return n;
}

int VisionConfig::grid_side() const {
  int s = static_cast<int>(std::lround(std::sqrt(static_cast<double>(num_position_embeddings))));
  return s;
}

bool is_qwen35_config(const json& j) {
  return j.is_object() && j.contains("model_type") && j["model_type"].is_string() &&
         j["model_type"].get<std::string>() == "qwen3_5";
}

Config Config::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) fail(ErrorKind::kInvalidArgument, source, " is not a JSON object");
  Config c;
  read_field(j, "model_type", &c.model_type, source);
  if (c.model_type != "qwen3_5")
    fail(ErrorKind::kUnsupported, source, ": model_type '", c.model_type, "' is not a Qwen3.5 model (\"qwen3_5\")");
  for (const char* sub : {"text_config", "vision_config"})
    if (!j.contains(sub) || !j[sub].is_object())
      fail(ErrorKind::kInvalidArgument, source, ": missing \"", sub, "\" object");
  parse_text(j["text_config"], c.text, source + " text_config");
  // transformers keeps the flag on the composite config as well; the top level wins when present.
  read_field(j, "tie_word_embeddings", &c.text.tie_word_embeddings, source);
  parse_vision(j["vision_config"], c.vision, source + " vision_config");
  read_field(j, "image_token_id", &c.image_token_id, source);
  read_field(j, "video_token_id", &c.video_token_id, source);
  read_field(j, "vision_start_token_id", &c.vision_start_token_id, source);
  read_field(j, "vision_end_token_id", &c.vision_end_token_id, source);
  if (c.vision.out_hidden_size != c.text.hidden_size)
    fail(ErrorKind::kInvalidArgument, source, ": vision out_hidden_size ", c.vision.out_hidden_size,
         " differs from the text hidden_size ", c.text.hidden_size);
  for (int id : {c.image_token_id, c.vision_start_token_id, c.vision_end_token_id})
    if (id < 0 || id >= c.text.vocab_size)
      fail(ErrorKind::kInvalidArgument, source, ": special token id ", id, " is outside the vocabulary of ",
           c.text.vocab_size);
  return c;
}

Config Config::from_file(const std::string& path) { return from_json(read_json_file(path), path); }

}  // namespace locr::model::qwen35
