// `locr perf --spec-replay K`: the ceiling of speculative decoding on this machine. The page prompt
// is decoded greedily by the serving engine (N tokens, `batch` sequences at once), then decoded
// again with each sequence's own first-run tokens as drafts, K per step (every draft right): both
// decode rates, and whether the tokens are identical (runtime/speculative.h); and a third time with
// drafts that never match, to measure what the back-off leaves of a miss's cost.
#pragma once

#include <cstdint>

#include "model/lightonocr/lighton_ocr.h"

namespace locr::app {

struct SpecReplayResult {
  double plain_tok_s = 0;   // decode tokens per second without drafts (all sequences together)
  double replay_tok_s = 0;  // with the replayed drafts
  bool identical = true;    // every replayed output equals its first run
  int64_t drafted = 0, accepted = 0;  // draft tokens of the replay runs
  // Drafts that are always wrong (each first-run token + 1), with the drafters' back-off: the cost
  // of speculating where nothing matches (a scan, a page whose text layer is not what is written).
  double miss_tok_s = 0;
  int64_t miss_drafted = 0, miss_accepted = 0;
};

// Medians over `repeat` runs of each. The sequences' prompts differ in their first token (no shared
// KV), and a warm-up run fills the prefix cache, so each measured run decodes its whole batch
// together from the first token.
SpecReplayResult spec_replay(const model::LightOnOcr& m, const model::Prompt& prompt, int gen, int batch, int k,
                             int repeat);

}  // namespace locr::app
