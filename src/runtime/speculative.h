// Speculative decoding's configuration and drafter choice: vLLM's --speculative-config JSON
// ({"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_max": N, "prompt_lookup_min": M}),
// locr's "text-layer" method (drafts from a document's own text: a PDF page's text layer or a
// client's draft text; runtime/text_layer_drafter.h), and "replay" (drafts from a given token
// sequence at the output's position: `locr perf --spec-replay`, the mechanism's ceiling).
//
// The engine (runtime/engine.h) verifies a sequence's drafts in one decoder pass of 1 + K rows
// whose logits equal one-row decode steps bit for bit (model/executor.h, n_logits), and keeps
// the longest prefix of drafts equal to the tokens its TokenSelector chooses, plus the token it
// chose after them: a greedy request's output is the same with or without speculation; a sampled
// one draws with the speculative rule (Sampler::sample_with_draft), the same distribution.
// Requests with a forced output do not speculate, nor sequences on executors without multi-row
// logits (CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/drafter.h"

namespace locr::runtime {

struct SpeculativeConfig {
  enum class Method { kNone, kNgram, kTextLayer, kReplay };
  Method method = Method::kNone;
  int num_speculative_tokens = 0;  // K, 1..kMaxSpeculativeTokens
  int prompt_lookup_max = 0;       // ngram: longest n-gram looked up (0: vLLM's default)
  int prompt_lookup_min = 0;       // ngram: shortest (0: vLLM's default)
  bool backoff = true;             // draft less after misses (runtime/drafter.h)

  bool enabled() const { return method != Method::kNone && num_speculative_tokens > 0; }
  std::string method_name() const;
};

// The most drafts verified per step (the CPU attention's per-row path takes 1 + 16 rows).
constexpr int kMaxSpeculativeTokens = 16;

// vLLM's --speculative-config (and a request's "speculative_config"): an object with "method"
// ("ngram", "text-layer"; "[ngram]" as older vLLM spells it), "num_speculative_tokens",
// "prompt_lookup_max", "prompt_lookup_min", and locr's "backoff". null or false: off. Throws
// locr::Error kInvalidArgument naming the key, kUnsupported for draft models (EAGLE, MTP, a "model").
SpeculativeConfig parse_speculative_config(const nlohmann::json& j);

// The drafter of one sequence: `prompt_text` (the prompt's ids without image tokens) for ngram,
// `corpus` for text-layer (the document's text, tokenised) and replay (the tokens to replay).
std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& c, std::vector<int32_t> prompt_text,
                                      std::vector<int32_t> corpus);

// Replays `tokens`: proposes tokens[n .. n + K) after an output of n tokens (back-off as given;
// none by default).
class ReplayDrafter final : public Drafter {
 public:
  ReplayDrafter(std::vector<int32_t> tokens, int k, BackoffOptions backoff = {false, 0});
  std::string_view name() const override { return "replay"; }

 protected:
  std::vector<int32_t> lookup(std::span<const int32_t> output, int max_tokens) override;

 private:
  std::vector<int32_t> tokens_;
};

}  // namespace locr::runtime
