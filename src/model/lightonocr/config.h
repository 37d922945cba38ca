// LightOnOCR-2's model configuration parsed from a Hugging Face `config.json`, in either form:
//   hub / vLLM form:         model_type "mistral3", image_token_id
//   transformers form:       model_type "lighton_ocr", image_token_index
// Field names keep the HF spelling. Validated once at load; the model code trusts it afterwards.
// Keys that would change the math are either read here or refused (model/lightonocr/config_check.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/text_config.h"

namespace locr::model {

struct VisionConfig {
  int hidden_size = 1024;
  int intermediate_size = 4096;
  int num_hidden_layers = 24;
  int num_attention_heads = 16;
  int head_dim = 64;
  int patch_size = 14;
  int image_size = 1540;
  int num_channels = 3;
  double rope_theta = 10000.0;
  float norm_eps = 1e-5f;  // hard-coded in Pixtral, not in config.json
};

struct ModelConfig {
  std::string model_type;  // as written in config.json
  TextConfig text;
  VisionConfig vision;
  int image_token_id = 151655;
  int spatial_merge_size = 2;
  std::string projector_hidden_act = "gelu";
  bool multimodal_projector_bias = false;
  float projector_norm_eps = 1e-6f;  // HF uses text_config.rms_norm_eps

  static ModelConfig from_json(const nlohmann::json& j, const std::string& source = "config.json");
  static ModelConfig from_file(const std::string& path);
};

}  // namespace locr::model
