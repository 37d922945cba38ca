#include "runtime/drafter.h"

#include <algorithm>

#include "core/error.h"

namespace locr::runtime {

DraftBackoff::DraftBackoff(int k, BackoffOptions opts)
    : k_(k), opts_(opts), length_(opts.enabled ? std::clamp(opts.start, 1, std::max(1, k)) : k) {
  if (k < 1) fail(ErrorKind::kInvalidArgument, "num_speculative_tokens must be at least 1, not ", k);
  if (opts_.max_skip < 0) fail(ErrorKind::kInvalidArgument, "the back-off's max_skip must be >= 0");
}

int DraftBackoff::allow() {
  if (!opts_.enabled) return k_;
  if (skip_ > 0) {
    --skip_;
    return 0;
  }
  return length_;
}

void DraftBackoff::report(int drafted, int accepted) {
  if (!opts_.enabled || drafted <= 0) return;
  if (accepted > 0) {
    misses_ = 0;
    skip_ = 0;
    length_ = std::min(k_, length_ * 2);
    return;
  }
  ++misses_;
  length_ = std::max(1, length_ / 2);
  // 2^(misses-1) - 1 steps, computed without overflowing for long streaks.
  const int shift = std::min(misses_ - 1, 20);
  skip_ = std::min(opts_.max_skip, (1 << shift) - 1);
}

Drafter::Drafter(int k, BackoffOptions backoff) : k_(k), backoff_(k, backoff) {}

std::vector<int32_t> Drafter::propose(std::span<const int32_t> output) {
  const int n = backoff_.allow();
  if (n <= 0) return {};
  std::vector<int32_t> draft = lookup(output, n);
  if (static_cast<int>(draft.size()) > n) draft.resize(static_cast<size_t>(n));
  return draft;
}

void Drafter::accepted(int drafted, int accepted) {
  if (drafted <= 0) return;
  accepted = std::clamp(accepted, 0, drafted);
  backoff_.report(drafted, accepted);
  on_accepted(drafted, accepted);
}

}  // namespace locr::runtime
