#include "server/openai_schema.h"

#include <cmath>

#include "server/errors.h"
#include "server/json_surrogates.h"

namespace locr::server {

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "number";
  }
}

[[noreturn]] void wrong_type(const char* key, const char* expected, const json& v) {
  bad_request(str("'", key, "' must be ", expected, ", got ", type_name(v)), key);
}

bool present(const json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

void check_range(const char* key, double v, double lo, double hi, bool lo_open = false) {
  if (std::isnan(v) || v < lo || v > hi || (lo_open && v == lo))
    bad_request(str("'", key, "' must be in ", lo_open ? "(" : "[", lo, ", ", hi, "], got ", v), key);
}

void refuse_unless_default(const json& body, const char* key, const char* why) {
  if (!present(body, key)) return;
  const json& v = body.at(key);
  if ((v.is_array() || v.is_object()) && v.empty()) return;
  if (v.is_boolean() && !v.get<bool>()) return;
  bad_request(str("'", key, "' is not supported by this server: ", why), key);
}

int32_t token_id(const json& v, const char* key, int32_t vocab) {
  if (!v.is_number_integer()) wrong_type(key, "a list of integer token ids", v);
  const int64_t id = v.get<int64_t>();
  if (id < 0 || id >= vocab) bad_request(str("token id ", id, " in '", key, "' is out of range [0, ", vocab, ")"), key);
  return static_cast<int32_t>(id);
}

}  // namespace

json parse_body(const std::string& body) {
  json j;
  try {
    // A lone surrogate escape ("\ud800") is taken as Python's json takes it (U+FFFD once encoded).
    if (has_surrogate_escape(body)) j = json::parse(replace_lone_surrogates(body));
    else j = json::parse(body);
  } catch (const json::parse_error& e) {
    bad_request(str("the request body is not valid JSON: ", e.what()));
  } catch (const json::out_of_range& e) {
    // A number past double's range (1e999): nlohmann refuses it (406) where Python reads inf.
    bad_request(str("the request body has a number out of range: ", e.what()));
  }
  if (!j.is_object()) bad_request(str("the request body must be a JSON object, got ", type_name(j)));
  return j;
}

std::string check_model(const json& body, const ServerContext& ctx) {
  auto name = opt_string(body, "model");
  if (!name) return ctx.model_name();
  if (!ctx.serves(*name)) throw ApiError(404, str("The model `", *name, "` does not exist."), "model");
  return *name;
}

std::optional<double> opt_number(const json& body, const char* key) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (!v.is_number()) wrong_type(key, "a number", v);
  return v.get<double>();
}

std::optional<int64_t> opt_int(const json& body, const char* key) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  // Accept 128.0 as pydantic does, refuse 1.5.
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::abs(v.get<double>()) < 9e15)
    return static_cast<int64_t>(v.get<double>());
  wrong_type(key, "an integer", v);
}

std::optional<bool> opt_bool(const json& body, const char* key) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (!v.is_boolean()) wrong_type(key, "a boolean", v);
  return v.get<bool>();
}

std::optional<std::string> opt_string(const json& body, const char* key) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (!v.is_string()) wrong_type(key, "a string", v);
  return v.get<std::string>();
}

GenParams parse_gen_params(const json& body, Api api, const ServerContext& ctx) {
  const int32_t vocab = ctx.model().vocab_size();
  GenParams p;
  {  // the defaults `locr generate` and `locr ocr` start from too (runtime/request_path.h)
    const runtime::RequestDefaults& d = ctx.request_path().defaults();
    p.sampling = d.sampling;
    p.penalties = d.penalties;
  }

  if (auto v = opt_number(body, "temperature")) {
    check_range("temperature", *v, 0, 1e6);
    p.sampling.temperature = *v < 1e-5 ? 0.0f : static_cast<float>(*v);
  }
  if (auto v = opt_number(body, "top_p")) {
    check_range("top_p", *v, 0, 1, /*lo_open=*/true);
    p.sampling.top_p = static_cast<float>(*v);
  }
  if (auto v = opt_int(body, "top_k")) {
    if (*v < -1) bad_request(str("'top_k' must be -1 or 0 (off) or at least 1, got ", *v), "top_k");
    p.sampling.top_k = static_cast<int>(std::min<int64_t>(*v, vocab));
  }
  if (auto v = opt_number(body, "min_p")) {
    check_range("min_p", *v, 0, 1);
    p.sampling.min_p = static_cast<float>(*v);
  }
  if (auto v = opt_int(body, "seed")) {
    p.sampling.seed = static_cast<uint64_t>(*v);
    p.sampling.has_seed = true;
  }
  if (auto v = opt_number(body, "presence_penalty")) {
    check_range("presence_penalty", *v, -2, 2);
    p.penalties.presence = static_cast<float>(*v);
  }
  if (auto v = opt_number(body, "frequency_penalty")) {
    check_range("frequency_penalty", *v, -2, 2);
    p.penalties.frequency = static_cast<float>(*v);
  }
  if (auto v = opt_number(body, "repetition_penalty")) {
    if (!(*v > 0) || *v > 1e6) bad_request(str("'repetition_penalty' must be > 0, got ", *v), "repetition_penalty");
    p.penalties.repetition = static_cast<float>(*v);
  }

  std::optional<int64_t> max_tokens = opt_int(body, "max_tokens");
  if (api == Api::kChat)
    if (auto v = opt_int(body, "max_completion_tokens")) max_tokens = v;
  if (max_tokens) {
    if (*max_tokens < 1) bad_request(str("'max_tokens' must be at least 1, got ", *max_tokens), "max_tokens");
    p.max_tokens = static_cast<int>(std::min<int64_t>(*max_tokens, 1 << 30));
  }
  if (auto v = opt_int(body, "min_tokens")) {
    if (*v < 0) bad_request(str("'min_tokens' must be >= 0, got ", *v), "min_tokens");
    if (max_tokens && *v > *max_tokens)
      bad_request(str("'min_tokens' (", *v, ") must be <= 'max_tokens' (", *max_tokens, ")"), "min_tokens");
    p.min_tokens = static_cast<int>(std::min<int64_t>(*v, 1 << 30));
  }

  if (present(body, "stop")) {
    const json& s = body.at("stop");
    if (s.is_string()) {
      if (!s.get<std::string>().empty()) p.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const auto& x : s) {
        if (!x.is_string()) wrong_type("stop", "a string or a list of strings", s);
        if (!x.get<std::string>().empty()) p.stop.push_back(x.get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or a list of strings", s);
    }
  }
  if (present(body, "stop_token_ids")) {
    const json& s = body.at("stop_token_ids");
    if (!s.is_array()) wrong_type("stop_token_ids", "a list of integer token ids", s);
    for (const auto& x : s) p.stop_token_ids.push_back(token_id(x, "stop_token_ids", vocab));
  }
  if (auto v = opt_bool(body, "ignore_eos")) p.ignore_eos = *v;
  if (auto v = opt_bool(body, "loop_guard")) p.loop_guard = *v;
  // Speculative decoding (locr extension fields, also inside vLLM's vllm_xargs): the request's own
  // speculative_config over --speculative-config (false or null: off), and draft_text, a text the
  // output is expected to follow (a previous OCR, the document's own text) for the text-layer drafter.
  for (const json* src : {&body, body.contains("vllm_xargs") && body["vllm_xargs"].is_object() ? &body["vllm_xargs"] : nullptr}) {
    if (!src) continue;
    if (auto it = src->find("speculative_config"); it != src->end()) {
      try {
        p.speculative = runtime::parse_speculative_config(*it);
      } catch (const locr::Error& e) {
        bad_request(e.what(), "speculative_config");
      }
    }
    if (auto v = opt_string(*src, "draft_text")) p.draft_text = *v;
  }
  if (auto v = opt_bool(body, "skip_special_tokens")) p.skip_special_tokens = *v;
  if (auto v = opt_bool(body, "include_stop_str_in_output")) p.include_stop_str_in_output = *v;

  const int max_lp = ctx.opts().max_logprobs;
  if (api == Api::kChat) {
    const bool want = opt_bool(body, "logprobs").value_or(false);
    auto top = opt_int(body, "top_logprobs");
    if (top) {
      if (*top < 0 || *top > max_lp)
        bad_request(str("'top_logprobs' must be in [0, ", max_lp, "], got ", *top), "top_logprobs");
      if (!want && *top > 0) bad_request("when using 'top_logprobs', 'logprobs' must be set to true", "top_logprobs");
    }
    if (want) p.logprobs = static_cast<int>(top.value_or(0));
  } else {
    if (present(body, "logprobs") && body.at("logprobs").is_boolean()) wrong_type("logprobs", "an integer", body.at("logprobs"));
    if (auto v = opt_int(body, "logprobs")) {
      if (*v < 0 || *v > max_lp) bad_request(str("'logprobs' must be in [0, ", max_lp, "], got ", *v), "logprobs");
      p.logprobs = static_cast<int>(*v);
    }
    if (auto v = opt_bool(body, "echo")) p.echo = *v;
    if (auto v = opt_string(body, "suffix"); v && !v->empty())
      bad_request("'suffix' is not supported by this server", "suffix");
  }

  if (auto v = opt_bool(body, "return_tokens_as_token_ids")) p.tokens_as_ids = *v;
  if (auto v = opt_int(body, "n")) {
    if (*v < 1 || *v > ctx.opts().max_n) bad_request(str("'n' must be in [1, ", ctx.opts().max_n, "], got ", *v), "n");
    p.n = static_cast<int>(*v);
  }
  if (auto v = opt_int(body, "best_of"); v && *v != p.n)
    bad_request("'best_of' is not supported by this server (use n)", "best_of");
  refuse_unless_default(body, "use_beam_search", "beam search is not implemented");
  refuse_unless_default(body, "logit_bias", "logit bias is not implemented");
  refuse_unless_default(body, "prompt_logprobs", "prompt log-probabilities are not implemented");
  for (const char* k : {"guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs"})
    refuse_unless_default(body, k, "structured output is not implemented");
  if (present(body, "response_format")) {
    const json& rf = body.at("response_format");
    if (!rf.is_object()) wrong_type("response_format", "an object", rf);
    // (json::value() would throw a type_error, a 500, for a non-string type.)
    if (present(rf, "type") && !rf.at("type").is_string())
      wrong_type("response_format", "an object whose 'type' is a string", rf.at("type"));
    if (present(rf, "type") && rf.at("type").get<std::string>() != "text")
      bad_request("'response_format' other than {\"type\": \"text\"} is not supported by this server", "response_format");
  }
  if (api == Api::kChat) {
    refuse_unless_default(body, "tools", "tool calling is not implemented");
    if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null() && !(tc->is_string() && *tc == "none"))
      bad_request("'tool_choice' is not supported by this server (tool calling is not implemented)", "tool_choice");
  }

  if (auto v = opt_bool(body, "stream")) p.stream = *v;
  if (present(body, "stream_options")) {
    const json& so = body.at("stream_options");
    if (!so.is_object()) wrong_type("stream_options", "an object", so);
    if (!p.stream) bad_request("'stream_options' can only be set when 'stream' is true", "stream_options");
    if (auto v = opt_bool(so, "include_usage")) p.include_usage = *v;
    if (auto v = opt_bool(so, "continuous_usage_stats")) p.continuous_usage_stats = *v;
  }
  if (p.echo && p.logprobs >= 0) bad_request("'echo' with 'logprobs' (prompt log-probabilities) is not supported", "echo");
  return p;
}

ChatInput parse_chat_messages(const json& body) {
  ChatInput ci;
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) bad_request("'messages' is required", "messages");
  if (!it->is_array()) wrong_type("messages", "a list of messages", *it);
  if (it->empty()) bad_request("'messages' must not be empty", "messages");
  ci.messages = json::array();
  for (const auto& m : *it) {
    if (!m.is_object()) wrong_type("messages", "a list of message objects", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad_request("each message needs a string 'role'", "messages");
    json out = {{"role", *role}};
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      out["content"] = "";
    } else if (content->is_string()) {
      out["content"] = *content;
    } else if (content->is_array()) {
      json parts = json::array();
      for (const auto& part : *content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
          bad_request("each content part must be an object with a string 'type'", "messages");
        const std::string type = part["type"];
        if (type == "text" || type == "input_text") {  // input_text: the Responses API's name, as vLLM takes it
          if (!part.contains("text") || !part["text"].is_string())
            bad_request(str("a '", type, "' content part needs a string 'text'"), "messages");
          parts.push_back({{"type", "text"}, {"text", part["text"]}});
        } else if (type == "image_url") {
          const json iu = part.value("image_url", json());
          std::string url;
          if (iu.is_string()) url = iu;
          else if (iu.is_object() && iu.contains("url") && iu["url"].is_string()) url = iu["url"];
          else bad_request("an 'image_url' content part needs 'image_url': {\"url\": \"...\"}", "messages");
          ci.image_urls.push_back(std::move(url));
          parts.push_back({{"type", "image"}});
        } else {
          bad_request(str("unsupported content part type '", type, "' (supported: text, input_text, image_url)"), "messages");
        }
      }
      out["content"] = std::move(parts);
    } else {
      wrong_type("messages", "messages whose 'content' is a string or a list of parts", *content);
    }
    ci.messages.push_back(std::move(out));
  }
  // vLLM's chat_template_kwargs: extra variables of the chat template (e.g. enable_thinking).
  if (auto kw = body.find("chat_template_kwargs"); kw != body.end() && !kw->is_null()) {
    if (!kw->is_object()) wrong_type("chat_template_kwargs", "an object", *kw);
    ci.template_kwargs = *kw;
  }
  return ci;
}

std::vector<CompletionPrompt> parse_completion_prompts(const json& body, int32_t vocab_size) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) bad_request("'prompt' is required", "prompt");
  const json& p = *it;
  std::vector<CompletionPrompt> out;
  auto from_ids = [&](const json& arr) {
    CompletionPrompt cp;
    cp.is_tokens = true;
    for (const auto& x : arr) cp.ids.push_back(token_id(x, "prompt", vocab_size));
    if (cp.ids.empty()) bad_request("the prompt is empty", "prompt");
    return cp;
  };
  if (p.is_string()) {
    out.push_back({false, p.get<std::string>(), {}});
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    out.push_back(from_ids(p));
  } else if (p.is_array() && !p.empty()) {
    for (const auto& x : p) {
      if (x.is_string()) out.push_back({false, x.get<std::string>(), {}});
      else if (x.is_array()) out.push_back(from_ids(x));
      else wrong_type("prompt", "a string, a list of strings, or token ids", x);
    }
  } else if (p.is_array()) {
    bad_request("'prompt' must not be empty", "prompt");
  } else {
    wrong_type("prompt", "a string, a list of strings, or token ids", p);
  }
  return out;
}

}  // namespace locr::server
