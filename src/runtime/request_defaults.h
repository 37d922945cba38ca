// What every front end (`locr serve`, `locr ocr --model`, `locr generate` / `chat`) starts a request
// from, read from the model's generation_config.json in one place: sampling (temperature/top_p/top_k
// when do_sample, else greedy), the repetition penalty, max_new_tokens, the EOS ids, the loop guard.
// The front ends reach it through runtime/request_path.h, which adds the request's own values.
#pragma once

#include <cstdint>
#include <vector>

#include "model/generation_config.h"
#include "runtime/loop_guard.h"
#include "runtime/token_selector.h"

namespace locr::runtime {

struct RequestDefaults {
  SamplingParams sampling;
  Penalties penalties;
  int max_new_tokens = 0;        // 0: none (up to the context)
  std::vector<int32_t> eos_ids;
  LoopGuardConfig loop_guard;    // on, with the guard's default window

  // A request of these defaults generating at most `max_tokens` tokens.
  DecodeParams decode(int max_tokens) const;
};

RequestDefaults request_defaults(const model::GenerationConfig& g);

}  // namespace locr::runtime
