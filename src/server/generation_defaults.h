// The generation defaults requests start from, as vLLM's ModelConfig.get_diff_sampling_param:
// generation_config.json (--generation-config auto) or vLLM's own (--generation-config vllm:
// temperature 1, top_p 1, no top_k), with --override-generation-config JSON merged over either.
// Keys used: temperature, top_p, top_k, repetition_penalty, max_new_tokens (max_tokens too);
// others are logged and ignored, as vLLM ignores them.
#pragma once

#include <nlohmann/json.hpp>

#include "model/generation_config.h"

namespace locr::server {

// vLLM's defaults (sampling on, temperature 1), keeping the model's stop tokens.
model::GenerationConfig vllm_generation_defaults(const model::GenerationConfig& model_config);

// `base` with the keys of `overrides` (a JSON object) set. A sampling key (temperature, top_p,
// top_k) turns sampling on, as vLLM applies them whatever do_sample says. Throws locr::Error
// kInvalidArgument for a value of the wrong type or range.
model::GenerationConfig apply_generation_overrides(model::GenerationConfig base, const nlohmann::json& overrides);

}  // namespace locr::server
