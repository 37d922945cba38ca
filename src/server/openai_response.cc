#include "server/openai_response.h"

#include "runtime/detokenizer.h"

namespace locr::server {

std::string token_text(const tokenizer::Tokenizer& tok, int32_t id);

namespace {

std::string id_text(int32_t id) { return "token_id:" + std::to_string(id); }

// Ids past the tokenizer's vocabulary (padding rows of the embedding) have no text.
std::string raw_bytes(const tokenizer::Tokenizer& tok, int32_t id) {
  return id >= 0 && id < tok.vocab_size() ? tok.token_bytes(id) : std::string();
}


json bytes_of(const tokenizer::Tokenizer& tok, int32_t id) {
  json b = json::array();
  for (unsigned char c : raw_bytes(tok, id)) b.push_back(static_cast<int>(c));
  return b;
}

// JSON numbers cannot be -inf; vLLM clamps the same way.
double finite(float lp) { return lp < -9999.0f ? -9999.0 : static_cast<double>(lp); }

}  // namespace

std::string token_text(const tokenizer::Tokenizer& tok, int32_t id) { return runtime::utf8_sanitize(raw_bytes(tok, id)); }

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"completion_tokens", completion_tokens},
          {"prompt_tokens_details", nullptr}};
}

json chat_logprobs_json(const std::vector<TokenLogprob>& lps, const tokenizer::Tokenizer& tok, bool as_ids) {
  auto token_text = [&](const tokenizer::Tokenizer& t, int32_t id) { return as_ids ? id_text(id) : server::token_text(t, id); };
  json content = json::array();
  for (const auto& lp : lps) {
    json top = json::array();
    for (const auto& t : lp.top)
      top.push_back({{"token", token_text(tok, t.token)}, {"logprob", finite(t.logprob)}, {"bytes", bytes_of(tok, t.token)}});
    content.push_back({{"token", token_text(tok, lp.token)},
                       {"logprob", finite(lp.logprob)},
                       {"bytes", bytes_of(tok, lp.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, const tokenizer::Tokenizer& tok, int64_t& offset,
                              bool as_ids) {
  auto token_text = [&](const tokenizer::Tokenizer& t, int32_t id) { return as_ids ? id_text(id) : server::token_text(t, id); };
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& lp : lps) {
    const std::string text = token_text(tok, lp.token);
    tokens.push_back(text);
    token_lps.push_back(finite(lp.logprob));
    json top = json::object();
    for (const auto& t : lp.top) top[token_text(tok, t.token)] = finite(t.logprob);
    if (!lp.top.empty() && !top.contains(text)) top[text] = finite(lp.logprob);
    tops.push_back(lp.top.empty() ? json(nullptr) : std::move(top));
    offsets.push_back(offset);
    offset += static_cast<int64_t>(text.size());
  }
  return {{"text_offset", std::move(offsets)},
          {"token_logprobs", std::move(token_lps)},
          {"tokens", std::move(tokens)},
          {"top_logprobs", std::move(tops)}};
}

json chat_response(const ResponseHead& h, const Generation& g, bool logprobs, const tokenizer::Tokenizer& tok, bool as_ids) {
  json choices = json::array();
  const auto& rs = g.results();
  for (size_t i = 0; i < rs.size(); ++i) {
    choices.push_back({{"index", i},
                       {"message", {{"role", h.role}, {"content", rs[i].text}, {"tool_calls", json::array()}}},
                       {"logprobs", logprobs ? chat_logprobs_json(rs[i].logprobs, tok, as_ids) : json(nullptr)},
                       {"finish_reason", finish_reason_json(rs[i].finish_reason)},
                       {"stop_reason", rs[i].stop_reason}});
  }
  return {{"id", h.id},
          {"object", "chat.completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(g.prompt_tokens(), g.completion_tokens())},
          {"prompt_logprobs", nullptr}};
}

json chat_chunk(const ResponseHead& h, int index, const json& delta, const json& logprobs, const json& finish_reason,
                const json& stop_reason) {
  json choice = {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  if (!finish_reason.is_null()) choice["stop_reason"] = stop_reason;
  return {{"id", h.id},
          {"object", "chat.completion.chunk"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array({std::move(choice)})}};
}

json completion_response(const ResponseHead& h, const Generation& g, bool logprobs, const tokenizer::Tokenizer& tok,
                         bool as_ids) {
  json choices = json::array();
  const auto& rs = g.results();
  for (size_t i = 0; i < rs.size(); ++i) {
    const int prompt = static_cast<int>(i) / g.n_per_prompt();
    const std::string& echo = g.prompts()[prompt].echo_text;
    int64_t offset = static_cast<int64_t>(echo.size());
    choices.push_back({{"index", i},
                       {"text", echo + rs[i].text},
                       {"logprobs", logprobs ? completion_logprobs_json(rs[i].logprobs, tok, offset, as_ids) : json(nullptr)},
                       {"finish_reason", finish_reason_json(rs[i].finish_reason)},
                       {"stop_reason", rs[i].stop_reason},
                       {"prompt_logprobs", nullptr}});
  }
  return {{"id", h.id},
          {"object", "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(g.prompt_tokens(), g.completion_tokens())}};
}

json completion_chunk(const ResponseHead& h, int index, const std::string& text, const json& logprobs,
                      const json& finish_reason, const json& stop_reason) {
  json choice = {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  choice["stop_reason"] = finish_reason.is_null() ? json(nullptr) : stop_reason;
  return {{"id", h.id},
          {"object", "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array({std::move(choice)})}};
}

json usage_chunk(const ResponseHead& h, const char* object, int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"id", h.id},
          {"object", object},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array()},
          {"usage", usage_json(prompt_tokens, completion_tokens)}};
}

}  // namespace locr::server
