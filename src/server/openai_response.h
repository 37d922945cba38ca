// OpenAI response shapes (as vLLM fills them): chat.completion and chat.completion.chunk,
// text_completion (whole and streamed), usage, and log-probabilities in the chat form
// ({"content": [{token, logprob, bytes, top_logprobs}]}) and the completions form
// ({tokens, token_logprobs, top_logprobs, text_offset}). Pure functions of their inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "server/generation.h"

namespace locr::server {

using nlohmann::json;

// Fields every response object of one request shares.
struct ResponseHead {
  std::string id;       // chatcmpl-... / cmpl-...
  int64_t created = 0;  // unix seconds
  std::string model;    // the served name the client asked for
  std::string role = "assistant";  // chat: the message role (--response-role)
};

json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// as_ids: tokens as "token_id:N" (vLLM's return_tokens_as_token_ids).
json chat_logprobs_json(const std::vector<TokenLogprob>& lps, const tokenizer::Tokenizer& tok, bool as_ids = false);
// `offset`: text offset of the first token (continues across streamed chunks).
json completion_logprobs_json(const std::vector<TokenLogprob>& lps, const tokenizer::Tokenizer& tok, int64_t& offset,
                              bool as_ids = false);

json chat_response(const ResponseHead& h, const Generation& g, bool logprobs, const tokenizer::Tokenizer& tok,
                   bool as_ids = false);
json chat_chunk(const ResponseHead& h, int index, const json& delta, const json& logprobs,
                const json& finish_reason, const json& stop_reason);

json completion_response(const ResponseHead& h, const Generation& g, bool logprobs, const tokenizer::Tokenizer& tok,
                         bool as_ids = false);
json completion_chunk(const ResponseHead& h, int index, const std::string& text, const json& logprobs,
                      const json& finish_reason, const json& stop_reason);

// The final usage-only chunk of a stream (stream_options.include_usage).
json usage_chunk(const ResponseHead& h, const char* object, int64_t prompt_tokens, int64_t completion_tokens);

}  // namespace locr::server
