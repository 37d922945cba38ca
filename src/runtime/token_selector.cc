#include "runtime/token_selector.h"

#include <algorithm>
#include <cmath>

namespace locr::runtime {

namespace {
bool contains(const std::vector<int32_t>& v, int32_t t) { return std::find(v.begin(), v.end(), t) != v.end(); }
}  // namespace

void apply_penalties(const Penalties& p, const std::vector<int32_t>& context,
                     const std::unordered_map<int32_t, int>& out_counts, float* logits, int64_t vocab) {
  if (p.repetition != 1.0f) {
    std::vector<char> seen(vocab, 0);
    for (int32_t t : context)
      if (t >= 0 && t < vocab && !seen[t]) {
        seen[t] = 1;
        logits[t] = logits[t] > 0 ? logits[t] / p.repetition : logits[t] * p.repetition;
      }
  }
  if (p.presence != 0.0f || p.frequency != 0.0f)
    for (const auto& [t, c] : out_counts)
      if (t >= 0 && t < vocab) logits[t] -= p.presence + p.frequency * c;
}

TokenSelector::TokenSelector(DecodeParams p, int64_t max_new)
    : p_(std::move(p)), max_new_(max_new), sampler_(p_.sampling), guard_(p_.loop_guard) {}

bool TokenSelector::device_may_sample() const {
  return p_.forced_ids.empty() && !p_.penalties.any() && p_.logprobs <= 0 && n_ >= p_.min_tokens;
}

std::optional<Selection> TokenSelector::select(float* logits, int64_t vocab, const std::vector<int32_t>& context,
                                              int32_t draft) {
  Selection sel;
  // Log-probabilities of the raw model distribution (before penalties and temperature).
  float lse = 0;
  if (p_.logprobs >= 0) {
    raw_.assign(logits, logits + vocab);
    float mx = -INFINITY;
    for (int64_t i = 0; i < vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
    lse = mx + static_cast<float>(std::log(sum));
    if (p_.logprobs > 0) {
      const int64_t k = std::min<int64_t>(p_.logprobs, vocab);
      std::vector<int32_t> idx(vocab);
      for (int64_t i = 0; i < vocab; ++i) idx[i] = static_cast<int32_t>(i);
      auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
      std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), better);
      std::sort(idx.begin(), idx.begin() + k, better);
      for (int64_t i = 0; i < k; ++i) sel.top.push_back({idx[i], logits[idx[i]] - lse});
    }
  }
  // Penalties: repetition (transformers' rule over prompt and output), presence/frequency
  // (OpenAI's rule over the output), and min_tokens holding back EOS.
  apply_penalties(p_.penalties, context, out_counts_, logits, vocab);
  if (n_ < p_.min_tokens)
    for (int32_t t : p_.eos_ids)
      if (t >= 0 && t < vocab) logits[t] = -INFINITY;
  if (!p_.forced_ids.empty()) {
    // A forced decode (testing): the model's logits are computed and reported, not sampled.
    const bool past_end = static_cast<size_t>(n_) >= p_.forced_ids.size();
    if (past_end && p_.eos_ids.empty()) return std::nullopt;
    forced_end_ = past_end;
    sel.token = past_end ? p_.eos_ids.front() : p_.forced_ids[static_cast<size_t>(n_)];
    if (p_.logprobs >= 0) sel.logprob = sel.token >= 0 && sel.token < vocab ? raw_[sel.token] - lse : -INFINITY;
    return sel;
  }
  sel.token = draft >= 0 && draft < vocab ? sampler_.sample_with_draft(logits, vocab, draft)
                                          : sampler_.sample(logits, vocab);
  if (p_.logprobs >= 0) sel.logprob = raw_[sel.token] - lse;
  return sel;
}

std::optional<Finish> TokenSelector::accept(int32_t token) {
  ++n_;
  ++out_counts_[token];
  if (contains(p_.stop_token_ids, token)) return Finish{FinishReason::kStop, StopReason::token_id(token), {}};
  if (!p_.ignore_eos && contains(p_.eos_ids, token)) return Finish{};
  // A forced output is emitted whole.
  if (p_.forced_ids.empty() && guard_.push(token)) return Finish{FinishReason::kStop, StopReason::repetition(), {}};
  if (n_ >= max_new_) return Finish{FinishReason::kLength, {}, {}};
  if (forced_end_) return Finish{};  // ignore_eos does not extend a forced output
  return std::nullopt;
}

}  // namespace locr::runtime
