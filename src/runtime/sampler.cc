#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace locr::runtime {

Sampler::Sampler(const SamplingParams& p) : p_(p) {
  rng_.seed(p.has_seed ? p.seed : std::random_device{}());
}

int32_t Sampler::argmax(const float* logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;  // first maximum wins, as torch.argmax
  return static_cast<int32_t>(best);
}

int64_t Sampler::candidates(const float* logits, int64_t vocab, double* sum_out) {
  const float inv_t = 1.0f / p_.temperature;
  // Candidate set: top-k by partial selection; otherwise the whole vocabulary, narrowed for top-p
  // by selecting progressively larger heads until they hold p of the mass.
  int64_t k = (p_.top_k > 0 && p_.top_k < vocab) ? p_.top_k : vocab;
  idx_.resize(vocab);
  std::iota(idx_.begin(), idx_.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (k < vocab) std::nth_element(idx_.begin(), idx_.begin() + k, idx_.end(), by_logit);
  const float mx = logits[argmax(logits, vocab)];
  // Softmax over the candidates (unnormalised weights relative to the max).
  double total = 0;
  for (int64_t i = 0; i < k; ++i) total += std::exp((logits[idx_[i]] - mx) * inv_t);
  int64_t n = k;
  if (p_.top_p < 1.0f || p_.min_p > 0.0f) {
    // Order only as much of the head as needed: grow the sorted prefix geometrically.
    int64_t sorted = std::min<int64_t>(k, 64);
    for (;;) {
      std::partial_sort(idx_.begin(), idx_.begin() + sorted, idx_.begin() + k, by_logit);
      double cum = 0;
      int64_t cut = -1;
      for (int64_t i = 0; i < sorted; ++i) {
        const double w = std::exp((logits[idx_[i]] - mx) * inv_t);
        if (p_.min_p > 0.0f && w < p_.min_p) {  // relative to the top token's probability
          cut = std::max<int64_t>(i, 1);
          break;
        }
        cum += w;
        if (p_.top_p < 1.0f && cum >= p_.top_p * total) {
          cut = i + 1;
          break;
        }
      }
      if (cut >= 0) {
        n = cut;
        break;
      }
      if (sorted == k) break;
      sorted = std::min(k, sorted * 4);
    }
  }
  w_.resize(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    w_[i] = std::exp((logits[idx_[i]] - mx) * inv_t);
    sum += w_[i];
  }
  *sum_out = sum;
  return n;
}

int32_t Sampler::sample(float* logits, int64_t vocab) {
  if (p_.temperature <= 0.0f || p_.top_k == 1) return argmax(logits, vocab);
  double sum = 0;
  const int64_t n = candidates(logits, vocab, &sum);
  std::uniform_real_distribution<double> u(0.0, sum);
  double r = u(rng_), acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc += w_[i];
    if (r < acc) return idx_[i];
  }
  return idx_[n - 1];
}

int32_t Sampler::sample_with_draft(float* logits, int64_t vocab, int32_t draft) {
  if (p_.temperature <= 0.0f || p_.top_k == 1) return argmax(logits, vocab);
  double sum = 0;
  const int64_t n = candidates(logits, vocab, &sum);
  double wx = 0;
  for (int64_t i = 0; i < n; ++i)
    if (idx_[i] == draft) wx = w_[i];
  // Accept with probability p(draft) = wx / sum.
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (wx > 0 && u01(rng_) * sum < wx) return draft;
  const double rest = sum - wx;
  if (!(rest > 0)) return draft;  // the draft is the only candidate (then it was accepted above)
  // Rejected: a token from p without the draft, renormalised.
  std::uniform_real_distribution<double> u(0.0, rest);
  double r = u(rng_), acc = 0;
  int32_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (idx_[i] == draft) continue;
    acc += w_[i];
    last = idx_[i];
    if (r < acc) return idx_[i];
  }
  return last;
}

}  // namespace locr::runtime
