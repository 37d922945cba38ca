// What every front end (`locr serve`, `locr ocr --model`, `locr generate` / `chat`) starts a request
// from, read from the model's generation_config.json in one place: sampling (temperature/top_p/top_k
// when do_sample, else greedy), the repetition penalty, max_new_tokens, the EOS ids, the loop guard.
// And the logits penalties themselves, applied by the serving engine and the CLI loop alike, so the
// same request gives the same tokens whichever path runs it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "model/config.h"
#include "runtime/loop_guard.h"
#include "runtime/sampler.h"

namespace locr::runtime {

struct Penalties {
  float repetition = 1.0f;  // transformers' rule over prompt and output (1 = off)
  float presence = 0.0f;    // OpenAI's rules over the output (0 = off)
  float frequency = 0.0f;
  bool any() const { return repetition != 1.0f || presence != 0.0f || frequency != 0.0f; }
};

// Applies `p` to logits[vocab] in place: each distinct id of `context` (prompt + output so far)
// divided (positive) or multiplied (negative) by `repetition`; then each output id t loses
// presence + frequency * out_counts[t].
void apply_penalties(const Penalties& p, const std::vector<int32_t>& context,
                     const std::unordered_map<int32_t, int>& out_counts, float* logits, int64_t vocab);

struct RequestDefaults {
  SamplingParams sampling;
  Penalties penalties;
  int max_new_tokens = 0;        // 0: none (up to the context)
  std::vector<int32_t> eos_ids;
  LoopGuardConfig loop_guard;    // on, with the guard's default window
};

RequestDefaults request_defaults(const model::GenerationConfig& g);

}  // namespace locr::runtime
