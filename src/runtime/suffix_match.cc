#include "runtime/suffix_match.h"

#include <algorithm>

namespace locr::runtime {

SuffixMatch find_suffix_match(std::span<const int32_t> haystack, std::span<const int32_t> seq, int max_n,
                              MatchPrefer prefer, size_t anchor) {
  SuffixMatch best;
  if (seq.empty() || haystack.size() < 2 || max_n < 1) return best;
  const size_t cap = std::min(static_cast<size_t>(max_n), seq.size());
  const int32_t last = seq.back();
  size_t best_key = 0;
  // e: the occurrence ends just before haystack[e] (the first continuation token), e <= size - 1.
  for (size_t e = 1; e < haystack.size(); ++e) {
    if (haystack[e - 1] != last) continue;
    size_t n = 1;
    while (n < cap && n < e && haystack[e - 1 - n] == seq[seq.size() - 1 - n]) ++n;
    const int len = static_cast<int>(n);
    size_t key = 0;
    if (prefer == MatchPrefer::kNearest)  // continuations at or after the anchor first, nearest first
      key = e >= anchor ? e - anchor : haystack.size() + (anchor - e);
    bool better = len > best.length;
    if (!better && len == best.length) {
      if (prefer == MatchPrefer::kLatest) better = true;  // e grows: the later occurrence
      else if (prefer == MatchPrefer::kNearest) better = key < best_key;
    }
    if (better) {
      best.length = len;
      best.next = e;
      best_key = key;
    }
  }
  return best;
}

}  // namespace locr::runtime
