// The keys of config.json that change the math. Each one is either implemented (read by
// config.cc) or refused here with a message naming the key and its value, so a configuration
// locr cannot run never loads and runs silently wrong. Keys known to be inert (metadata,
// training-only settings) pass; any other key is logged once as a warning, naming it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace locr::model {

// text_config (a Qwen3 decoder). `n_layers` is the configured num_hidden_layers.
void check_text_config_keys(const nlohmann::json& t, int n_layers, const std::string& where);
// vision_config (a Pixtral encoder).
void check_vision_config_keys(const nlohmann::json& v, const std::string& where);
// The composite (top-level) keys.
void check_top_config_keys(const nlohmann::json& j, const std::string& where);

}  // namespace locr::model
