#include "runtime/loop_guard.h"

namespace locr::runtime {

uint64_t LoopGuard::ngram_hash(size_t end) const {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = end - cfg_.ngram; i < end; ++i) {
    h ^= static_cast<uint32_t>(tokens_[i]);
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

bool LoopGuard::push(int32_t token) {
  if (!cfg_.enabled || cfg_.ngram <= 0 || cfg_.window < cfg_.ngram) return false;
  tokens_.push_back(token);
  ++n_;
  if (tokens_.size() > static_cast<size_t>(cfg_.ngram)) tokens_.pop_front();
  if (tokens_.size() < static_cast<size_t>(cfg_.ngram)) return false;
  const uint64_t h = ngram_hash(tokens_.size());
  hashes_.push_back(h);
  ++counts_[h];
  // Keep the n-grams that lie entirely inside the newest `window` tokens.
  const size_t max_grams = static_cast<size_t>(cfg_.window - cfg_.ngram + 1);
  if (hashes_.size() > max_grams) {
    auto it = counts_.find(hashes_.front());
    if (--it->second == 0) counts_.erase(it);
    hashes_.pop_front();
  }
  return n_ >= cfg_.window && static_cast<int64_t>(counts_.size()) <= cfg_.max_distinct;
}

}  // namespace locr::runtime
