#include "runtime/speculative.h"

#include <algorithm>

#include "core/error.h"
#include "runtime/ngram_drafter.h"
#include "runtime/text_layer_drafter.h"

namespace locr::runtime {

std::string SpeculativeConfig::method_name() const {
  switch (method) {
    case Method::kNgram: return "ngram";
    case Method::kTextLayer: return "text-layer";
    case Method::kReplay: return "replay";
    case Method::kNone: break;
  }
  return "none";
}

namespace {

int int_field(const nlohmann::json& j, const char* key, int lo, int hi) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
    fail(ErrorKind::kInvalidArgument, "speculative config: '", key, "' must be an integer in [", lo, ", ", hi, "], got ",
         it->dump());
  return it->get<int>();
}

}  // namespace

SpeculativeConfig parse_speculative_config(const nlohmann::json& j) {
  SpeculativeConfig c;
  if (j.is_null() || (j.is_boolean() && !j.get<bool>())) return c;
  if (!j.is_object()) fail(ErrorKind::kInvalidArgument, "speculative config must be a JSON object, got ", j.dump());
  if (j.empty()) return c;  // {}: off, as vLLM takes it
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "model" || k == "draft_model" || k == "draft_tensor_parallel_size" || k == "quantization")
      fail(ErrorKind::kUnsupported, "speculative config: draft models are not supported ('", k, "'); use \"method\": "
           "\"ngram\" or \"text-layer\"");
    if (k != "method" && k != "num_speculative_tokens" && k != "prompt_lookup_max" && k != "prompt_lookup_min" &&
        k != "backoff")
      fail(ErrorKind::kInvalidArgument, "speculative config: unknown key '", k, "' (known: method, "
           "num_speculative_tokens, prompt_lookup_max, prompt_lookup_min, backoff)");
  }
  const std::string method = j.value("method", std::string("ngram"));
  if (method == "ngram" || method == "[ngram]") c.method = SpeculativeConfig::Method::kNgram;
  else if (method == "text-layer" || method == "text_layer") c.method = SpeculativeConfig::Method::kTextLayer;
  else if (method == "replay") c.method = SpeculativeConfig::Method::kReplay;
  else
    fail(ErrorKind::kUnsupported, "speculative config: method '", method, "' is not supported (supported: ngram, "
         "text-layer); draft models, EAGLE and MTP need a second model locr does not run");
  c.num_speculative_tokens = int_field(j, "num_speculative_tokens", 1, kMaxSpeculativeTokens);
  if (c.num_speculative_tokens == 0)
    fail(ErrorKind::kInvalidArgument, "speculative config: 'num_speculative_tokens' is required (1 to ",
         kMaxSpeculativeTokens, ")");
  c.prompt_lookup_max = int_field(j, "prompt_lookup_max", 1, 64);
  c.prompt_lookup_min = int_field(j, "prompt_lookup_min", 1, 64);
  if (c.prompt_lookup_max && c.prompt_lookup_min && c.prompt_lookup_min > c.prompt_lookup_max)
    fail(ErrorKind::kInvalidArgument, "speculative config: prompt_lookup_min ", c.prompt_lookup_min,
         " is more than prompt_lookup_max ", c.prompt_lookup_max);
  if (auto it = j.find("backoff"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) fail(ErrorKind::kInvalidArgument, "speculative config: 'backoff' must be true or false");
    c.backoff = it->get<bool>();
  }
  return c;
}

std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& c, std::vector<int32_t> prompt_text,
                                      std::vector<int32_t> corpus) {
  BackoffOptions bo;
  bo.enabled = c.backoff;
  switch (c.method) {
    case SpeculativeConfig::Method::kNgram: {
      NgramOptions o;
      o.num_speculative_tokens = c.num_speculative_tokens;
      // vLLM: with one bound given, the other takes its value; neither: 5 and 5.
      const int mx = c.prompt_lookup_max ? c.prompt_lookup_max : (c.prompt_lookup_min ? c.prompt_lookup_min : 5);
      const int mn = c.prompt_lookup_min ? c.prompt_lookup_min : (c.prompt_lookup_max ? c.prompt_lookup_max : 5);
      o.prompt_lookup_max = mx;
      o.prompt_lookup_min = std::min(mn, mx);
      o.backoff = bo;
      return std::make_unique<NgramDrafter>(std::move(prompt_text), o);
    }
    case SpeculativeConfig::Method::kTextLayer: {
      TextLayerOptions o;
      o.num_speculative_tokens = c.num_speculative_tokens;
      if (c.prompt_lookup_max) o.max_n = c.prompt_lookup_max;
      if (c.prompt_lookup_min) o.min_n = std::min(c.prompt_lookup_min, o.max_n);
      o.backoff = bo;
      return std::make_unique<TextLayerDrafter>(std::move(corpus), o);
    }
    case SpeculativeConfig::Method::kReplay:
      return std::make_unique<ReplayDrafter>(std::move(corpus), c.num_speculative_tokens, bo);
    case SpeculativeConfig::Method::kNone: break;
  }
  return nullptr;
}

ReplayDrafter::ReplayDrafter(std::vector<int32_t> tokens, int k, BackoffOptions backoff)
    : Drafter(k, backoff), tokens_(std::move(tokens)) {}

std::vector<int32_t> ReplayDrafter::lookup(std::span<const int32_t> output, int max_tokens) {
  const size_t n = output.size();
  if (n >= tokens_.size()) return {};
  const size_t end = std::min(tokens_.size(), n + static_cast<size_t>(max_tokens));
  return std::vector<int32_t>(tokens_.begin() + static_cast<long>(n), tokens_.begin() + static_cast<long>(end));
}

}  // namespace locr::runtime
