#include "runtime/ngram_drafter.h"

#include <algorithm>

#include "core/error.h"
#include "runtime/suffix_match.h"

namespace locr::runtime {
namespace {

void check_bounds(int min_n, int max_n) {
  if (min_n < 1 || max_n < min_n)
    fail(ErrorKind::kInvalidArgument, "prompt_lookup_min (", min_n, ") and prompt_lookup_max (", max_n,
         ") must satisfy 1 <= prompt_lookup_min <= prompt_lookup_max");
}

}  // namespace

std::vector<int32_t> ngram_propose(std::span<const int32_t> context, int min_n, int max_n, int k, int max_model_len) {
  check_bounds(min_n, max_n);
  const size_t total = context.size();
  if (total < static_cast<size_t>(min_n) || k <= 0) return {};
  if (max_model_len > 0) {
    if (total >= static_cast<size_t>(max_model_len)) return {};
    k = std::min<int64_t>(k, static_cast<int64_t>(max_model_len) - static_cast<int64_t>(total));
  }
  const SuffixMatch m = find_suffix_match(context, context, max_n, MatchPrefer::kEarliest);
  if (m.length < min_n) return {};
  const size_t n = std::min(static_cast<size_t>(k), total - m.next);
  return std::vector<int32_t>(context.begin() + static_cast<ptrdiff_t>(m.next),
                              context.begin() + static_cast<ptrdiff_t>(m.next + n));
}

NgramDrafter::NgramDrafter(std::vector<int32_t> prompt, NgramOptions opts)
    : Drafter(opts.num_speculative_tokens, opts.backoff), opts_(opts), prompt_len_(prompt.size()),
      context_(std::move(prompt)) {
  check_bounds(opts_.prompt_lookup_min, opts_.prompt_lookup_max);
}

std::vector<int32_t> NgramDrafter::lookup(std::span<const int32_t> output, int max_tokens) {
  // The output only grows between steps; re-copying it keeps this correct if a caller rewinds.
  context_.resize(prompt_len_);
  context_.insert(context_.end(), output.begin(), output.end());
  return ngram_propose(context_, opts_.prompt_lookup_min, opts_.prompt_lookup_max, max_tokens, opts_.max_model_len);
}

}  // namespace locr::runtime
