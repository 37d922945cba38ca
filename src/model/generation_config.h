// Generation defaults from a model directory's generation_config.json, as both families read them
// (a GGUF model's: gguf_generation_config, model/gguf_model_meta.h).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace locr::model {

struct GenerationConfig {
  std::vector<int> eos_token_ids;  // any of these stops generation
  int bos_token_id = -1;
  int pad_token_id = -1;
  bool do_sample = false;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float repetition_penalty = 1.0f;
  int max_new_tokens = -1;

  static GenerationConfig from_json(const nlohmann::json& j);
};

}  // namespace locr::model
