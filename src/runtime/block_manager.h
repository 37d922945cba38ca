// Paged KV cache bookkeeping (no tensor data here): fixed-size blocks, a block table per
// sequence, reference counts, and prefix caching of full blocks by content key.
//
// A full block's key is a SHA-256 chained over its parent's key, its token ids and the digests of
// the images in it (runtime/block_hash.h), so equal prefixes map to equal block chains and
// different ones never meet. Freed blocks that hold a cached prefix stay findable until the
// allocator needs them (LRU eviction). Not thread-safe: owned by the engine thread.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "runtime/block_hash.h"

namespace locr::runtime {

class BlockManager {
 public:
  BlockManager(int64_t n_blocks, int block_size, bool prefix_caching);

  int block_size() const { return block_size_; }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t n_free() const { return static_cast<int64_t>(free_.size() + evictable_.size()); }
  double usage() const { return 1.0 - static_cast<double>(n_free()) / static_cast<double>(n_blocks_); }
  bool prefix_caching() const { return prefix_caching_; }

  // Blocks needed to hold n tokens.
  int64_t blocks_for(int64_t n_tokens) const { return (n_tokens + block_size_ - 1) / block_size_; }

  // Looks up the longest cached prefix of full blocks for `hashes` (one per full block of the
  // prompt). Takes a reference on each hit block and appends it to `table`. Returns the number
  // of blocks reused.
  int64_t reuse_prefix(const std::vector<BlockHash>& hashes, std::vector<int32_t>& table);

  // Allocates one block (fresh or evicting the least recently freed cached block). Returns -1 if
  // none is available.
  int32_t allocate();
  // Marks a full block as holding content `hash` so later requests can reuse it.
  void publish(int32_t block, const BlockHash& hash);
  // Drops one reference to each block of `table`.
  void release(const std::vector<int32_t>& table);

  uint64_t prefix_hits() const { return prefix_hits_; }
  uint64_t prefix_queries() const { return prefix_queries_; }

 private:
  struct Block {
    int ref = 0;
    BlockHash hash{};
    bool cached = false;
    std::list<int32_t>::iterator lru;
  };
  int64_t n_blocks_;
  int block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;                    // never-used or uncached free blocks
  std::list<int32_t> evictable_;                 // free but cached, least recently freed first
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_hash_;
  uint64_t prefix_hits_ = 0, prefix_queries_ = 0;
};

}  // namespace locr::runtime
