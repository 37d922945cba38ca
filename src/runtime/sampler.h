// Token sampling from a logits row: greedy, temperature, top-k, top-p, min-p, with a per-request
// seeded generator so a given seed reproduces the same tokens.
//
// No full sort of the vocabulary: candidates are narrowed with partial selection (nth_element over
// the top-k, or over a growing prefix for top-p) before any ordering.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace locr::runtime {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;        // 1 = off
  int top_k = 0;             // 0 or -1 = off
  float min_p = 0.0f;        // 0 = off
  uint64_t seed = 0;
  bool has_seed = false;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  // Returns the chosen token id. `logits` may be modified (scaled) in place.
  int32_t sample(float* logits, int64_t vocab);
  // Speculative sampling against a drafted token (a point-mass draft): returns `draft` with the
  // probability p(draft) that sample() would give it, else a token drawn from p with `draft`
  // removed and renormalised, so the result is distributed exactly as sample()'s (greedy: argmax).
  // The caller accepts the draft when the result equals it.
  int32_t sample_with_draft(float* logits, int64_t vocab, int32_t draft);
  static int32_t argmax(const float* logits, int64_t vocab);

 private:
  // The candidate set of temperature / top-k / top-p / min-p: idx_[0, n) with their weights
  // w_[0, n) relative to the top logit (unnormalised); *sum their total, in index order.
  int64_t candidates(const float* logits, int64_t vocab, double* sum);

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<int32_t> idx_;
  std::vector<double> w_;
};

}  // namespace locr::runtime
