#include "runtime/draft_sim.h"

#include <algorithm>
#include <vector>

#include "runtime/drafter.h"

namespace locr::runtime {

void DraftSimStats::add(const DraftSimStats& o) {
  steps += o.steps;
  target_tokens += o.target_tokens;
  drafted += o.drafted;
  accepted += o.accepted;
  draft_steps += o.draft_steps;
  zero_accept_steps += o.zero_accept_steps;
}

DraftSimStats simulate_drafting(Drafter& drafter, std::span<const int32_t> target) {
  DraftSimStats s;
  s.target_tokens = static_cast<int64_t>(target.size());
  size_t pos = 0;
  while (pos < target.size()) {
    std::vector<int32_t> draft = drafter.propose(target.first(pos));
    // The engine never drafts past what the request may still write; here: the target's end.
    if (draft.size() > target.size() - pos) draft.resize(target.size() - pos);
    size_t acc = 0;
    while (acc < draft.size() && draft[acc] == target[pos + acc]) ++acc;
    ++s.steps;
    if (!draft.empty()) {
      ++s.draft_steps;
      s.drafted += static_cast<int64_t>(draft.size());
      s.accepted += static_cast<int64_t>(acc);
      if (acc == 0) ++s.zero_accept_steps;
      drafter.accepted(static_cast<int>(draft.size()), static_cast<int>(acc));
    }
    pos += std::min(acc + 1, target.size() - pos);
  }
  return s;
}

}  // namespace locr::runtime
