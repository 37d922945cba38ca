// OpenAI request parsing and validation (vLLM's accepted fields and limits): typed field access
// that names the offending field, the sampling/generation parameters shared by chat and
// completions, chat messages (text and image parts) and completion prompts. Everything here
// throws ApiError (400/404) and touches no engine. Response shapes are in openai_response.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/token_selector.h"
#include "server/server_context.h"

namespace locr::server {

using nlohmann::json;

// The body as a JSON object (400 on malformed JSON or a non-object).
json parse_body(const std::string& body);
// The served name the request asks for (the primary name when `model` is absent); 404 if unknown.
std::string check_model(const json& body, const ServerContext& ctx);

// Typed optional fields: absent or null -> nullopt; wrong type -> 400 naming the field.
std::optional<double> opt_number(const json& body, const char* key);
std::optional<int64_t> opt_int(const json& body, const char* key);
std::optional<bool> opt_bool(const json& body, const char* key);
std::optional<std::string> opt_string(const json& body, const char* key);

enum class Api { kChat, kCompletions };

// Everything about how to generate, validated; the same for every choice of a request.
struct GenParams {
  runtime::SamplingParams sampling;  // has_seed set when the request gave a seed
  int max_tokens = -1;               // -1: up to max_model_len (and generation_config max_new_tokens)
  int min_tokens = 0;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  std::optional<bool> loop_guard;    // locr extension; unset: the server default (off with ignore_eos)
  std::optional<runtime::SpeculativeConfig> speculative;  // speculative_config; unset: --speculative-config
  std::string draft_text;            // text-layer drafts from this text (a previous OCR, the document's text)
  bool skip_special_tokens = true;
  bool include_stop_str_in_output = false;
  runtime::Penalties penalties;      // repetition_penalty, presence_penalty, frequency_penalty
  int logprobs = -1;                 // -1: none; k: the chosen token's and the top k
  // > 0: each choice keeps statistics of its sampled tokens' log-probabilities (/v1/ocr's page
  // confidence), counting those with probability below this; the engine computes the chosen
  // token's log-probability from the logits it samples from, at no extra pass.
  float confidence_threshold = 0;
  bool tokens_as_ids = false;        // return_tokens_as_token_ids
  int n = 1;
  bool echo = false;                 // completions only
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage_stats = false;
};

GenParams parse_gen_params(const json& body, Api api, const ServerContext& ctx);

// A chat request's messages in the form the chat template expects (image parts replaced by
// {"type": "image"}), and the image URLs in order.
struct ChatInput {
  json messages;
  std::vector<std::string> image_urls;
  json template_kwargs;  // chat_template_kwargs (an object), or null
};
ChatInput parse_chat_messages(const json& body);

// One completion prompt: text, or token ids.
struct CompletionPrompt {
  bool is_tokens = false;
  std::string text;
  std::vector<int32_t> ids;
};
std::vector<CompletionPrompt> parse_completion_prompts(const json& body, int32_t vocab_size);

}  // namespace locr::server
