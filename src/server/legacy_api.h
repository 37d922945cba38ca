// vLLM's legacy demo server (`python -m vllm.entrypoints.api_server`): POST /generate with
// {"prompt": "...", "stream": bool, <vLLM SamplingParams fields>} answered with
// {"text": [prompt + completion, ...]} (one per n), or streamed as such objects, each the prompt
// plus the text so far, ended by a NUL byte. This file holds the request's parsing and the
// response shapes (pure functions); the handler is generate_handler.cc.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace locr::server {

struct LegacyGenerateRequest {
  std::string prompt;
  bool stream = false;
  // The sampling fields as parse_gen_params reads them (Api::kCompletions), with vLLM's
  // SamplingParams defaults where the request gives none (temperature 1, top_p 1, max_tokens 16):
  // the legacy server builds SamplingParams(**fields) and never reads generation_config.json.
  nlohmann::json sampling;
};

// 400 (ApiError, naming the field) for a missing or non-string prompt, a non-boolean stream, a
// field that is not one of SamplingParams' (vLLM fails those with a TypeError), and SamplingParams
// features locr does not have when set to anything but their defaults.
LegacyGenerateRequest parse_legacy_generate(const nlohmann::json& body);

// {"text": [prompt + texts[0], prompt + texts[1], ...]}
nlohmann::json legacy_text_json(const std::string& prompt, const std::vector<std::string>& texts);

// The separator after each streamed object, as vLLM's api_server and its api_client.py use it.
constexpr char kLegacyStreamDelimiter = '\0';

}  // namespace locr::server
