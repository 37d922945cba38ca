// Per-request token selection, the one implementation the serving engine and the single-sequence
// loop (`locr generate`, runtime/generate.h) share, so the two cannot disagree on a request:
// DecodeParams (everything that decides a request's tokens) and TokenSelector, which for each
// step takes the logits row and gives the next token — log-probabilities of the raw distribution,
// then the penalties, min_tokens holding EOS back, a forced output or the sampler — and, once the
// token is known, the finish decision: a stop token id, EOS, the loop guard, max_tokens.
// Not here: text (runtime/text_output.h), scheduling and KV (runtime/engine.h).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/finish.h"
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

// Everything that decides a request's tokens, whichever loop runs it.
struct DecodeParams {
  SamplingParams sampling;
  Penalties penalties;
  int max_tokens = 16;                   // most generated tokens
  int min_tokens = 0;                    // EOS ids are masked until this many were generated
  std::vector<int32_t> eos_ids;          // model EOS ids: stop (keeping the token) unless ignore_eos
  std::vector<int32_t> stop_token_ids;   // extra stop ids (always honoured; stop_reason the id)
  bool ignore_eos = false;
  int logprobs = -1;                     // -1: none; k >= 0: the chosen token's and the top k
  LoopGuardConfig loop_guard;            // stop on degenerate repetition (stop_reason "repetition")
  // Testing (`--debug-forced-output`): when not empty, output token k is forced_ids[k] instead of
  // a sampled one, then eos_ids[0] (finish_reason "stop"; without an EOS id the request just
  // stops). The model still runs every step, so timings, KV and logprobs are real: a reported
  // logprob is the model's log-probability of the forced token. Such requests sample on the host,
  // and the loop guard does not cut them short.
  std::vector<int32_t> forced_ids;
};

struct TopLogprob {
  int32_t token;
  float logprob;
};

// One step's choice.
struct Selection {
  int32_t token = -1;
  float logprob = 0;             // of the raw model distribution, when logprobs >= 0
  std::vector<TopLogprob> top;   // the top `logprobs` alternatives
};

class TokenSelector {
 public:
  // `max_new`: the most tokens this request may generate (its max_tokens, capped by what the
  // context leaves after the prompt).
  TokenSelector(DecodeParams p, int64_t max_new);

  const DecodeParams& params() const { return p_; }
  int64_t n_generated() const { return n_; }
  int64_t max_new() const { return max_new_; }

  // Whether a device may choose the next token from p.sampling alone: nothing the host does to
  // logits applies (no penalty, no top-logprob list, no min_tokens holding EOS back, no forced output).
  bool device_may_sample() const;
  // The next token from logits[vocab] (changed in place) given `context` (prompt + output so far):
  // the raw distribution's log-probabilities when asked, then penalties, min_tokens, then the
  // forced output or the sampler. nullopt: the request ends here without a token (a forced output
  // past its end without an EOS id; finish_reason "stop").
  // `draft` >= 0 (speculative decoding): the token drafted for this position; a sampled request
  // then draws with the speculative rule (Sampler::sample_with_draft: the draft kept with its
  // probability, else a token from the rest), which gives the same distribution as without it.
  std::optional<Selection> select(float* logits, int64_t vocab, const std::vector<int32_t>& context,
                                  int32_t draft = -1);
  // Records the step's token (from select() or a device) and says whether the request ends with
  // it: a stop token id, EOS (unless ignore_eos), the loop guard, max_new, the end of a forced output.
  std::optional<Finish> accept(int32_t token);

 private:
  DecodeParams p_;
  int64_t max_new_;
  int64_t n_ = 0;
  bool forced_end_ = false;  // the token being selected is the EOS after a forced output
  Sampler sampler_;
  LoopGuard guard_;
  std::unordered_map<int32_t, int> out_counts_;
  std::vector<float> raw_;
};

}  // namespace locr::runtime
