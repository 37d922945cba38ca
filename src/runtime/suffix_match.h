// The lookup under the model-free drafters: where in a token sequence (`haystack`) the longest
// suffix of another (`seq`, the context or output so far) occurs, so that what followed it there
// can be proposed. Plain scans, O(haystack length x match length) per call: a page's corpus or a
// sequence's context of a few thousand tokens costs microseconds, against milliseconds per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace locr::runtime {

// Among occurrences of the longest suffix, which one wins.
enum class MatchPrefer {
  kEarliest,  // the first in the haystack (vLLM's n-gram proposer)
  kLatest,    // the last (the most recent, for a haystack that is the sequence itself)
  kNearest,   // the one whose continuation starts nearest at or after `anchor`, else nearest before
};

struct SuffixMatch {
  int length = 0;   // tokens matched; 0: none
  size_t next = 0;  // haystack index of the first token after the match
};

// The longest n <= max_n such that seq's last n tokens occur in `haystack` ending before its last
// token (so at least one token follows), and which occurrence per `prefer`. `haystack` may be
// `seq` itself or a prefix of it: an occurrence must end at most at haystack.size() - 1, so the
// suffix never matches itself. length 0 when nothing matches (or seq is empty).
SuffixMatch find_suffix_match(std::span<const int32_t> haystack, std::span<const int32_t> seq, int max_n,
                              MatchPrefer prefer = MatchPrefer::kEarliest, size_t anchor = 0);

}  // namespace locr::runtime
