#include "server/generation_defaults.h"

#include "core/error.h"
#include "core/log.h"

namespace locr::server {

model::GenerationConfig vllm_generation_defaults(const model::GenerationConfig& model_config) {
  model::GenerationConfig g;
  g.eos_token_ids = model_config.eos_token_ids;
  g.bos_token_id = model_config.bos_token_id;
  g.pad_token_id = model_config.pad_token_id;
  g.do_sample = true;
  return g;
}

model::GenerationConfig apply_generation_overrides(model::GenerationConfig g, const nlohmann::json& o) {
  if (o.is_null()) return g;
  if (!o.is_object())
    fail(ErrorKind::kInvalidArgument, "--override-generation-config expects a JSON object such as '{\"temperature\": 0.2}'");
  auto number = [&](const std::string& k, double lo, double hi) {
    const auto& v = o.at(k);
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
      fail(ErrorKind::kInvalidArgument, "--override-generation-config: '", k, "' must be a number in [", lo, ", ", hi,
           "], got ", v.dump());
    return v.get<double>();
  };
  auto integer = [&](const std::string& k, int64_t lo) {
    const auto& v = o.at(k);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > (int64_t{1} << 30))
      fail(ErrorKind::kInvalidArgument, "--override-generation-config: '", k, "' must be an integer >= ", lo, ", got ",
           v.dump());
    return static_cast<int>(v.get<int64_t>());
  };
  for (const auto& [k, v] : o.items()) {
    if (k == "temperature") {
      g.temperature = static_cast<float>(number(k, 0, 1e6));
      g.do_sample = true;  // temperature 0 is greedy either way
    } else if (k == "top_p") {
      g.top_p = static_cast<float>(number(k, 1e-9, 1));
      g.do_sample = true;
    } else if (k == "top_k") {
      const int t = integer(k, -1);
      g.top_k = t < 0 ? 0 : t;
      g.do_sample = true;
    } else if (k == "repetition_penalty") {
      g.repetition_penalty = static_cast<float>(number(k, 1e-9, 1e6));
    } else if (k == "max_new_tokens" || k == "max_tokens") {
      g.max_new_tokens = integer(k, 1);
    } else {
      LOCR_WARN("note: --override-generation-config '", k, "' is not a generation default locr applies; ignored");
    }
  }
  return g;
}

}  // namespace locr::server
