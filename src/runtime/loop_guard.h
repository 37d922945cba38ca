// Loop guard: detects degenerate repetition while decoding, so a request that has started to
// cycle stops early (finish_reason "stop", stop_reason "repetition") instead of burning tokens up
// to max_tokens.
//
// Over the newest `window` generated tokens it counts the distinct n-grams (n = `ngram`). Ordinary
// text — tables with changing cell contents included — has nearly as many distinct n-grams as
// positions; a model caught in a loop repeats a short unit, so the window holds about one n-gram
// per token of the unit, plus a few per glitch ("ororor...Qoror..." loops are near- not exactly
// periodic). The guard fires when the count is at most `max_distinct`, i.e. the window is covered
// by a repeated unit of at most ~max_distinct tokens. Cost: O(1) amortised per token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace locr::runtime {

struct LoopGuardConfig {
  bool enabled = true;
  int window = 512;        // newest generated tokens examined
  int ngram = 8;           // n-gram length
  int max_distinct = 128;  // fire when the window holds at most this many distinct n-grams
};

class LoopGuard {
 public:
  explicit LoopGuard(const LoopGuardConfig& cfg = {}) : cfg_(cfg) {}
  // Feeds the next generated token; returns true when the window has become a loop.
  bool push(int32_t token);
  // Distinct n-grams in the current window (for diagnostics).
  int64_t distinct() const { return static_cast<int64_t>(counts_.size()); }

 private:
  uint64_t ngram_hash(size_t end) const;  // hash of the n-gram ending at tokens_[end - 1]

  LoopGuardConfig cfg_;
  std::deque<int32_t> tokens_;  // newest window + ngram tokens
  std::deque<uint64_t> hashes_; // n-gram hashes inside the window, oldest first
  std::unordered_map<uint64_t, int> counts_;
  int64_t n_ = 0;
};

}  // namespace locr::runtime
