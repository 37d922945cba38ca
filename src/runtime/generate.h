// Single-sequence generation for the CLI (`locr generate`, `locr dump`): image encoding, prefill,
// then decode steps with sampling until an EOS id or max_tokens. The serving engine (many
// sequences, paged KV) lives in runtime/engine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/executor.h"
#include "model/lighton_ocr.h"
#include "model/taps.h"
#include "runtime/loop_guard.h"
#include "runtime/request_defaults.h"
#include "runtime/sampler.h"

namespace locr::runtime {

struct GenerateOptions {
  int max_tokens = 256;
  SamplingParams sampling;
  Penalties penalties;           // applied as the serving engine applies them (runtime/request_defaults.h)
  std::vector<int32_t> eos_ids;  // stop (and keep the token) when one is produced
  bool ignore_eos = false;
  LoopGuardConfig loop_guard;    // stops degenerate repetition (finish_reason "stop")
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  std::string finish_reason;  // "stop" (EOS or loop guard) or "length"
  std::string stop_reason;    // "repetition" when the loop guard stopped it
  double vision_s = 0, prefill_s = 0, decode_s = 0;
};

// Hooks for parity dumps: hidden states of the prompt, last-position logits, image encoding.
struct GenerateHooks {
  std::function<void(int, const float*, int64_t rows)> on_hidden;  // prompt hidden states
  std::function<void(const float* logits, int64_t vocab)> on_prompt_logits;
  std::function<void(const model::ImageEncoding&)> on_images;
  std::function<bool(int32_t)> on_token;  // return false to stop
  // Named taps (model/taps.h) recorded over the image encoding and the prompt's prefill step;
  // fails (kUnsupported) when the executor cannot record them.
  model::Taps* taps = nullptr;
};

// Runs on an executor made for this call (the model's backend; KV sized for the prompt + max_tokens).
GenerateResult generate(const model::LightOnOcr& m, const model::Prompt& prompt, const GenerateOptions& opts,
                        const GenerateHooks& hooks = {});
// Runs on `exec`, whose KV pool must hold prompt + max_tokens positions (blocks 0.. are used).
GenerateResult generate(const model::LightOnOcr& m, model::Executor& exec, const model::Prompt& prompt,
                        const GenerateOptions& opts, const GenerateHooks& hooks = {});
// Executor options for one sequence of up to `positions` tokens whose prompt is `prompt_len`.
model::ExecutorOptions single_sequence_options(int64_t prompt_len, int64_t positions);

// Options starting from the defaults every front end uses (runtime/request_defaults.h):
// sampling, penalties, EOS ids, loop guard; max_tokens from max_new_tokens, else `max_tokens`.
GenerateOptions generate_options(const RequestDefaults& d, int max_tokens);

}  // namespace locr::runtime
