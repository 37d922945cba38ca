#include "model/lightonocr/config_check.h"

#include <algorithm>
#include <initializer_list>

#include "core/error.h"
#include "core/log.h"

namespace locr::model {

using nlohmann::json;

namespace {

bool set(const json& obj, const char* key) { return obj.contains(key) && !obj[key].is_null(); }

[[noreturn]] void refuse(const std::string& where, const char* key, const json& value, const std::string& why) {
  fail(ErrorKind::kUnsupported, where, ": ", key, " = ", value.dump(), " is not supported (", why, ")");
}

// A boolean key that locr implements only as `want`.
void require_bool(const json& obj, const char* key, bool want, const std::string& where, const std::string& why) {
  if (!set(obj, key)) return;
  if (!obj[key].is_boolean() || obj[key].get<bool>() != want) refuse(where, key, obj[key], why);
}

// A string key that locr implements only as one of `allowed`.
void require_string(const json& obj, const char* key, std::initializer_list<const char*> allowed,
                    const std::string& where, const std::string& why) {
  if (!set(obj, key)) return;
  const json& v = obj[key];
  if (v.is_string() && std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return v.get<std::string>() == a; }))
    return;
  refuse(where, key, v, why);
}

void require_one(const json& obj, const char* key, const std::string& where, const std::string& why) {
  if (!set(obj, key)) return;
  if (!obj[key].is_number() || obj[key].get<double>() != 1.0) refuse(where, key, obj[key], why);
}

// rope_parameters (transformers v5) or rope_scaling (older): only the unscaled RoPE, named
// "default" (and, for Pixtral's 2-D RoPE, "axial" as transformers v5 writes it).
void check_rope(const json& obj, const char* key, const std::string& where, bool vision = false) {
  if (!set(obj, key)) return;
  const json& rp = obj[key];
  if (!rp.is_object()) refuse(where, key, rp, "expected an object with rope_type \"default\"");
  const std::string w = where + " " + key;
  for (const auto& [k, v] : rp.items())
    if (v.is_object()) refuse(w, k.c_str(), v, "per-layer-type RoPE parameters");
  for (const char* type_key : {"rope_type", "type"}) {
    if (vision) require_string(rp, type_key, {"default", "axial"}, w, "only Pixtral's unscaled 2-D RoPE");
    else require_string(rp, type_key, {"default"}, w, "only \"default\" RoPE");
  }
  require_one(rp, "partial_rotary_factor", w, "RoPE over the whole head only");
}

// Keys of neighbouring architectures that change the math whenever they are set.
void refuse_foreign(const json& obj, const std::string& where,
                    std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (set(obj, k) && !(obj[k].is_boolean() && !obj[k].get<bool>()) && !(obj[k].is_number() && obj[k].get<double>() == 0))
      refuse(where, k, obj[k], "not part of the LightOnOCR architecture");
}

void warn_unknown(const json& obj, const std::string& where, std::initializer_list<const char*> known) {
  std::string unknown;
  for (const auto& item : obj.items()) {
    const std::string& k = item.key();  // not a structured binding: clang 14 cannot capture one
    if (std::none_of(known.begin(), known.end(), [&](const char* n) { return k == n; }))
      unknown += (unknown.empty() ? "'" : ", '") + k + "'";
  }
  if (!unknown.empty())
    LOCR_WARN(where, ": key(s) ", unknown, " not known to locr and ignored; if one changes the model's math, the "
              "output will be wrong");
}

}  // namespace

void check_text_config_keys(const json& t, int n_layers, const std::string& where) {
  require_string(t, "model_type", {"qwen3"}, where, "the decoder is Qwen3");
  require_bool(t, "attention_bias", false, where, "q/k/v/o projections without bias");
  require_bool(t, "mlp_bias", false, where, "MLP projections without bias");
  require_string(t, "hidden_act", {"silu"}, where, "the MLP is SwiGLU (silu)");
  require_bool(t, "use_sliding_window", false, where, "full attention in every layer");
  require_bool(t, "use_qk_norm", true, where, "Qwen3 always normalises q and k per head");
  if (set(t, "layer_types")) {
    const json& lt = t["layer_types"];
    if (!lt.is_array() || static_cast<int>(lt.size()) != n_layers)
      fail(ErrorKind::kInvalidArgument, where, ": layer_types = ", lt.dump().substr(0, 200), " must list ", n_layers,
           " layer types (num_hidden_layers)");
    for (size_t i = 0; i < lt.size(); ++i)
      if (!lt[i].is_string() || lt[i].get<std::string>() != "full_attention")
        fail(ErrorKind::kUnsupported, where, ": layer_types[", i, "] = ", lt[i].dump(),
             " is not supported (only \"full_attention\"; sliding-window attention is not implemented)");
  }
  check_rope(t, "rope_parameters", where);
  check_rope(t, "rope_scaling", where);
  require_one(t, "partial_rotary_factor", where, "RoPE over the whole head only");
  refuse_foreign(t, where, {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
                            "logits_scaling", "embedding_multiplier", "residual_multiplier", "attention_multiplier",
                            "scale_emb", "num_experts", "num_local_experts", "moe_intermediate_size",
                            "qkv_bias", "no_rope_layers", "use_mrope"});
  warn_unknown(t, where,
               {// read by config.cc
                "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "head_dim", "vocab_size", "rms_norm_eps", "rope_theta", "rope_parameters", "rope_scaling",
                "max_position_embeddings", "tie_word_embeddings",
                // checked above
                "model_type", "attention_bias", "mlp_bias", "hidden_act", "use_sliding_window", "use_qk_norm",
                "layer_types", "partial_rotary_factor",
                // inert: metadata, training-only, or only meaningful with sliding windows (refused)
                "architectures", "attention_dropout", "bos_token_id", "eos_token_id", "pad_token_id",
                "initializer_range", "max_window_layers", "sliding_window", "use_cache", "dtype", "torch_dtype",
                "transformers_version", "_name_or_path"});
}

void check_vision_config_keys(const json& v, const std::string& where) {
  require_string(v, "model_type", {"pixtral"}, where, "the vision encoder is Pixtral");
  require_string(v, "hidden_act", {"silu"}, where, "Pixtral's gated MLP uses silu");
  check_rope(v, "rope_parameters", where, /*vision=*/true);
  check_rope(v, "rope_scaling", where, /*vision=*/true);
  refuse_foreign(v, where, {"attention_bias", "mlp_bias", "qkv_bias", "use_bias"});
  warn_unknown(v, where,
               {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "patch_size",
                "image_size", "num_channels", "rope_theta", "rope_parameters", "rope_scaling", "model_type",
                "hidden_act",
                // ignored as transformers' Pixtral ignores it (derived from hidden_size / heads)
                "head_dim",
                "attention_dropout", "initializer_range", "dtype", "torch_dtype", "transformers_version",
                "_name_or_path", "architectures"});
}

void check_top_config_keys(const json& j, const std::string& where) {
  require_bool(j, "multimodal_projector_bias", false, where, "the projector's linear layers have no bias");
  warn_unknown(j, where,
               {"model_type", "text_config", "vision_config", "image_token_id", "image_token_index",
                "spatial_merge_size", "projector_hidden_act", "multimodal_projector_bias", "vision_feature_layer",
                "tie_word_embeddings", "architectures", "dtype", "torch_dtype", "transformers_version",
                "_name_or_path", "eos_token_id", "pad_token_id", "bos_token_id", "use_cache",
                "transformers.js_config"});
}

}  // namespace locr::model
