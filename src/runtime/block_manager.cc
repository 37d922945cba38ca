#include "runtime/block_manager.h"

#include "core/error.h"

namespace locr::runtime {

BlockManager::BlockManager(int64_t n_blocks, int block_size, bool prefix_caching)
    : n_blocks_(n_blocks), block_size_(block_size), prefix_caching_(prefix_caching), blocks_(n_blocks) {
  LOCR_CHECK(n_blocks > 0 && block_size > 0);
  free_.reserve(n_blocks);
  for (int64_t i = n_blocks - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
}

int64_t BlockManager::reuse_prefix(const std::vector<BlockHash>& hashes, std::vector<int32_t>& table) {
  if (!prefix_caching_) return 0;
  int64_t n = 0;
  for (const BlockHash& h : hashes) {
    ++prefix_queries_;
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    Block& b = blocks_[it->second];
    if (b.ref == 0) evictable_.erase(b.lru);
    ++b.ref;
    table.push_back(it->second);
    ++prefix_hits_;
    ++n;
  }
  return n;
}

int32_t BlockManager::allocate() {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else if (!evictable_.empty()) {
    id = evictable_.front();
    evictable_.pop_front();
    Block& b = blocks_[id];
    by_hash_.erase(b.hash);
    b.cached = false;
  } else {
    return -1;
  }
  blocks_[id].ref = 1;
  return id;
}

void BlockManager::publish(int32_t block, const BlockHash& hash) {
  if (!prefix_caching_) return;
  Block& b = blocks_[block];
  if (b.cached) return;
  auto [it, inserted] = by_hash_.emplace(hash, block);
  if (!inserted) return;  // another block already holds this content
  b.hash = hash;
  b.cached = true;
}

void BlockManager::release(const std::vector<int32_t>& table) {
  for (int32_t id : table) {
    Block& b = blocks_[id];
    LOCR_CHECK(b.ref > 0, "double free of KV block ", id);
    if (--b.ref > 0) continue;
    if (b.cached) {
      evictable_.push_back(id);
      b.lru = std::prev(evictable_.end());
    } else {
      free_.push_back(id);
    }
  }
}

}  // namespace locr::runtime
