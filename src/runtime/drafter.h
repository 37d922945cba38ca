// Drafters for speculative decoding: per sequence, each step, a drafter proposes up to K token ids
// that the target model may write next; the engine verifies them in one forward pass and reports
// back how many were accepted. Drafters here are model-free lookups (ngram_drafter.h,
// text_layer_drafter.h); this file holds the interface and the back-off every drafter shares.
//
// One Drafter object belongs to one sequence (it keeps that sequence's back-off state and lookup
// position); it is not safe to use from several threads at once. The calling pattern:
//
//   auto draft = drafter.propose(output_ids);   // output_ids: everything generated so far
//   ... verify draft, accept n of them (plus the model's own next token) ...
//   drafter.accepted(draft.size(), n);
//
// propose() may return fewer tokens than K, or none (no match, or backing off); an empty draft
// needs no accepted() call (one with drafted 0 is ignored).
//
// Back-off (DraftBackoff): a drafter that keeps missing costs verification work for nothing. A
// drafter starts with short drafts (`start` tokens, 2 by default) and each step with an accepted
// token doubles the length (up to K): 2, 4, 8 on a page that matches, so a page that never does
// pays for 2 rows, not K. After a step whose draft had no token accepted, the length is halved
// (down to 1), and from the second miss in a row on the drafter also sits out steps: 2^(misses-1)
// - 1 of them (1, 3, 7, ..., at most max_skip). Any accepted token ends the streak. In the steady
// state of a page where nothing matches this is one 1-token draft every max_skip + 1 steps (1/33 of
// a draft token per step by default), against K per step without back-off. Measured costs behind
// the defaults: a verified row costs 0.2 of a decode step at batch 1 and ~0.45 of a sequence's
// share of the step at batch 8 on a 2-core CPU (docs/benchmarks.md): 1/33 of that is under 1.5%.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace locr::runtime {

struct BackoffOptions {
  bool enabled = true;
  // Most steps sat out after a streak of misses.
  int max_skip = 32;
  // The first draft's length (capped at K); doubled by each step with an accepted token.
  int start = 2;
};

class DraftBackoff {
 public:
  DraftBackoff(int k, BackoffOptions opts = {});
  // The draft length allowed this step: 0 while sitting out (each call counts one step), else the
  // current length (1..K). K when back-off is disabled.
  int allow();
  void report(int drafted, int accepted);

  int length() const { return length_; }
  int misses() const { return misses_; }
  int skip_left() const { return skip_; }

 private:
  int k_;
  BackoffOptions opts_;
  int length_;
  int misses_ = 0;
  int skip_ = 0;
};

class Drafter {
 public:
  // k: num_speculative_tokens, the most tokens proposed per step (>= 1).
  explicit Drafter(int k, BackoffOptions backoff = {});
  virtual ~Drafter() = default;

  // Up to K draft ids to follow `output` (the sequence's output ids so far).
  std::vector<int32_t> propose(std::span<const int32_t> output);
  // How many of the last proposal's `drafted` tokens the target accepted (a prefix).
  void accepted(int drafted, int accepted);

  int k() const { return k_; }
  const DraftBackoff& backoff() const { return backoff_; }
  virtual std::string_view name() const = 0;

 protected:
  // The lookup itself: up to `max_tokens` (>= 1) ids, no back-off.
  virtual std::vector<int32_t> lookup(std::span<const int32_t> output, int max_tokens) = 0;
  // Told after the back-off saw the result (for lookup state such as a corpus position).
  virtual void on_accepted(int drafted, int accepted) {
    (void)drafted;
    (void)accepted;
  }

 private:
  int k_;
  DraftBackoff backoff_;
};

}  // namespace locr::runtime
