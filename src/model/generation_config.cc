#include "model/generation_config.h"

#include "model/json_fields.h"

namespace locr::model {

using nlohmann::json;

GenerationConfig GenerationConfig::from_json(const json& j) {
  GenerationConfig g;
  if (!j.is_object()) return g;
  const std::string w = "generation_config.json";
  if (j.contains("eos_token_id")) {
    if (j["eos_token_id"].is_array()) {
      for (const auto& e : j["eos_token_id"])
        if (e.is_number_integer()) g.eos_token_ids.push_back(e.get<int>());
    } else if (j["eos_token_id"].is_number_integer()) {
      g.eos_token_ids.push_back(j["eos_token_id"].get<int>());
    }
  }
  read_field(j, "bos_token_id", &g.bos_token_id, w);
  read_field(j, "pad_token_id", &g.pad_token_id, w);
  read_field(j, "do_sample", &g.do_sample, w);
  read_field(j, "temperature", &g.temperature, w);
  read_field(j, "top_p", &g.top_p, w);
  read_field(j, "top_k", &g.top_k, w);
  read_field(j, "repetition_penalty", &g.repetition_penalty, w);
  read_field(j, "max_new_tokens", &g.max_new_tokens, w);
  return g;
}

}  // namespace locr::model
