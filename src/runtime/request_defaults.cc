#include "runtime/request_defaults.h"

namespace locr::runtime {

DecodeParams RequestDefaults::decode(int max_tokens) const {
  DecodeParams d;
  d.sampling = sampling;
  d.penalties = penalties;
  d.max_tokens = max_tokens;
  d.eos_ids = eos_ids;
  d.loop_guard = loop_guard;
  return d;
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
