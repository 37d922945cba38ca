// Drafter-only simulation of greedy speculative decoding (`locr draft-sim`): as if the target model
// had written exactly `target`, each step the drafter proposes up to K tokens given the target's
// first `pos` tokens, the accepted count is the longest prefix of the draft equal to the target's
// next tokens, and the step emits accepted + 1 target tokens (the verified bonus token; at the end of
// the target just what is left). The drafter is told the accepted count (its back-off runs as in the
// engine). No model is run.
#pragma once

#include <cstdint>
#include <span>

namespace locr::runtime {

class Drafter;

struct DraftSimStats {
  int64_t steps = 0;              // decode steps (forward passes) to produce the target
  int64_t target_tokens = 0;
  int64_t drafted = 0;            // draft tokens verified
  int64_t accepted = 0;           // of them accepted
  int64_t draft_steps = 0;        // steps that verified at least one draft token
  int64_t zero_accept_steps = 0;  // steps that drafted and had none accepted (wasted verification)

  // target tokens per step (1 without drafts); 0 for an empty target.
  double tokens_per_step() const { return steps ? static_cast<double>(target_tokens) / steps : 0.0; }
  // accepted / drafted; 0 when nothing was drafted.
  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  // Decode speedup if one step costs 1 + verify_cost per draft token it verifies (verify_cost: a
  // verified row's cost relative to a one-token step): target_tokens / sum(1 + verify_cost * drafted).
  double speedup(double verify_cost) const {
    const double cost = static_cast<double>(steps) + verify_cost * static_cast<double>(drafted);
    return cost > 0 ? static_cast<double>(target_tokens) / cost : 0.0;
  }
  void add(const DraftSimStats& o);
};

DraftSimStats simulate_drafting(Drafter& drafter, std::span<const int32_t> target);

}  // namespace locr::runtime
