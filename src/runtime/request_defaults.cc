#include "runtime/request_defaults.h"

namespace locr::runtime {

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

RequestDefaults request_defaults(const model::GenerationConfig& g) {
  RequestDefaults d;
  if (g.do_sample) {
    d.sampling.temperature = g.temperature;
    d.sampling.top_p = g.top_p;
    d.sampling.top_k = g.top_k;
  } else {
    d.sampling.temperature = 0.0f;
  }
  d.penalties.repetition = g.repetition_penalty;
  d.max_new_tokens = g.max_new_tokens > 0 ? g.max_new_tokens : 0;
  d.eos_ids.assign(g.eos_token_ids.begin(), g.eos_token_ids.end());
  return d;
}

}  // namespace locr::runtime
