// vLLM's n-gram ("prompt lookup") drafter, method "ngram" of --speculative-config: the context is
// the prompt's token ids followed by the output so far; the longest n-gram, n from
// prompt_lookup_max down to prompt_lookup_min, that ends the context and occurs earlier in it is
// looked up, and the up to K tokens that followed its FIRST occurrence are proposed (as
// vllm/v1/spec_decode/ngram_proposer.py: `_find_longest_matched_ngram_and_propose_tokens` keeps the
// earliest position among the longest matches; its test "Multiple 3-gram matched, but always pick
// the first one"). Fewer than K when the context ends sooner; none when the context is shorter than
// prompt_lookup_min or the draft would pass max_model_len. Unlike vLLM, NgramDrafter also backs off
// (drafter.h); ngram_propose() is the lookup alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/drafter.h"

namespace locr::runtime {

struct NgramOptions {
  int num_speculative_tokens = 8;
  // vLLM's defaults when neither is given are 5 and 5; with one given, the other takes its value.
  int prompt_lookup_max = 5;
  int prompt_lookup_min = 5;
  // 0: no limit; else no draft reaches past this many context tokens (vLLM's max_model_len cap).
  int max_model_len = 0;
  BackoffOptions backoff;
};

// The proposal for `context` (prompt + output), at most k tokens. Throws kInvalidArgument unless
// 1 <= min_n <= max_n.
std::vector<int32_t> ngram_propose(std::span<const int32_t> context, int min_n, int max_n, int k,
                                   int max_model_len = 0);

class NgramDrafter final : public Drafter {
 public:
  // `prompt`: the ids of the request's prompt that the lookup may search (its text tokens).
  NgramDrafter(std::vector<int32_t> prompt, NgramOptions opts);
  std::string_view name() const override { return "ngram"; }

 protected:
  std::vector<int32_t> lookup(std::span<const int32_t> output, int max_tokens) override;

 private:
  NgramOptions opts_;
  size_t prompt_len_;
  std::vector<int32_t> context_;  // prompt, then the output as last seen
};

}  // namespace locr::runtime
