#include "server/legacy_api.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "server/errors.h"

namespace locr::server {

using json = nlohmann::json;

namespace {

// SamplingParams fields that parse_gen_params reads (or refuses when not at their default:
// best_of != n, use_beam_search, logit_bias, prompt_logprobs, structured_outputs).
const std::set<std::string> kSampling = {
    "n",           "best_of",          "presence_penalty", "frequency_penalty", "repetition_penalty",
    "temperature", "top_p",            "top_k",            "min_p",             "seed",
    "stop",        "stop_token_ids",   "ignore_eos",       "max_tokens",        "min_tokens",
    "logprobs",    "prompt_logprobs",  "skip_special_tokens", "include_stop_str_in_output",
    "logit_bias",  "use_beam_search",  "structured_outputs",
    "loop_guard",  // locr's own (docs/api.md), as on the OpenAI routes
};

bool is_default(const json& v) {
  return v.is_null() || v == false || ((v.is_array() || v.is_object()) && v.empty());
}

[[noreturn]] void unsupported(const std::string& key, const std::string& why) {
  bad_request(str("'", key, "' is not supported by this server: ", why), key);
}

}  // namespace

LegacyGenerateRequest parse_legacy_generate(const json& body) {
  LegacyGenerateRequest r;
  auto p = body.find("prompt");
  if (p == body.end() || p->is_null()) bad_request("'prompt' is required", "prompt");
  if (!p->is_string()) bad_request("'prompt' must be a string", "prompt");
  r.prompt = p->get<std::string>();
  if (auto s = body.find("stream"); s != body.end() && !s->is_null()) {
    if (!s->is_boolean()) bad_request("'stream' must be a boolean", "stream");
    r.stream = s->get<bool>();
  }
  r.sampling = json::object();
  for (const auto& [k, v] : body.items()) {
    if (k == "prompt" || k == "stream") continue;
    if (kSampling.count(k)) {
      r.sampling[k] = v;
      continue;
    }
    // SamplingParams fields locr has no use for, taken at their defaults only.
    if (k == "detokenize" || k == "spaces_between_special_tokens") {
      if (!v.is_null() && v != true) unsupported(k, "the text is always detokenized, special tokens joined without spaces");
    } else if (k == "length_penalty") {
      if (!v.is_null() && !(v.is_number() && v.get<double>() == 1.0)) unsupported(k, "beam search is not implemented");
    } else if (k == "early_stopping") {
      if (!is_default(v)) unsupported(k, "beam search is not implemented");
    } else if (k == "truncate_prompt_tokens" || k == "output_kind" || k == "guided_decoding" ||
               k == "allowed_token_ids" || k == "bad_words" || k == "logits_processors" || k == "extra_args") {
      if (!is_default(v)) unsupported(k, "not implemented");
    } else {
      // vLLM's SamplingParams(**fields) raises a TypeError (a 500) for these.
      bad_request(str("'", k, "' is not a field of this endpoint: POST /generate takes 'prompt', 'stream' and vLLM's "
                      "SamplingParams fields (see docs/api.md)"),
                  k);
    }
  }
  // SamplingParams' defaults, not the model's generation_config.json (the legacy server never reads it).
  const json defaults = {{"temperature", 1.0}, {"top_p", 1.0},        {"top_k", 0},
                         {"min_p", 0.0},       {"presence_penalty", 0.0}, {"frequency_penalty", 0.0},
                         {"repetition_penalty", 1.0}, {"max_tokens", 16}};
  // An explicit "max_tokens": null is SamplingParams' None (up to the context) and stays null.
  for (const auto& [k, v] : defaults.items())
    if (!r.sampling.contains(k) || (r.sampling[k].is_null() && k != "max_tokens")) r.sampling[k] = v;
  return r;
}

json legacy_text_json(const std::string& prompt, const std::vector<std::string>& texts) {
  json out = json::array();
  for (const std::string& t : texts) out.push_back(prompt + t);
  return {{"text", std::move(out)}};
}

}  // namespace locr::server
