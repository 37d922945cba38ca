// Single-sequence generation for the CLI (`locr generate`, `locr dump`): image encoding, prefill,
// then one decode step per token, each chosen by the TokenSelector the serving engine uses
// (runtime/token_selector.h: penalties, min_tokens, sampler, forced output, and the finish: stop
// token ids, EOS, loop guard, max_tokens), so a request gives the same tokens here and in
// `locr serve`. The serving engine (many sequences, paged KV) lives in runtime/engine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/executor.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/taps.h"
#include "runtime/finish.h"
#include "runtime/token_selector.h"

namespace locr::runtime {

struct GenerateResult {
  std::vector<int32_t> tokens;
  FinishReason finish_reason = FinishReason::kLength;  // kStop: EOS, a stop token id, the loop guard, on_token
  StopReason stop_reason;                              // the stop token id, or repetition (the loop guard)
  double vision_s = 0, prefill_s = 0, decode_s = 0;
};

// Hooks for parity dumps: hidden states of the prompt, last-position logits, image encoding.
struct GenerateHooks {
  std::function<void(int, const float*, int64_t rows)> on_hidden;  // prompt hidden states
  std::function<void(const float* logits, int64_t vocab)> on_prompt_logits;
  std::function<void(const model::ImageEncoding&)> on_images;
  std::function<bool(int32_t)> on_token;  // each token; return false to stop (finish_reason stop: a stop string)
  // Named taps (model/taps.h) recorded over the image encoding and the prompt's prefill step;
  // fails (kUnsupported) when the executor cannot record them.
  model::Taps* taps = nullptr;
};

// Runs on an executor made for this call (the model's backend; KV sized for the prompt + max_tokens).
GenerateResult generate(const model::Model& m, const model::Prompt& prompt, const DecodeParams& opts,
                        const GenerateHooks& hooks = {});
// Runs on `exec`, whose KV pool must hold prompt + max_tokens positions (blocks 0.. are used).
GenerateResult generate(const model::Model& m, model::Executor& exec, const model::Prompt& prompt,
                        const DecodeParams& opts, const GenerateHooks& hooks = {});
// Executor options for one sequence of up to `positions` tokens whose prompt is `prompt_len`.
model::ExecutorOptions single_sequence_options(int64_t prompt_len, int64_t positions);

}  // namespace locr::runtime
