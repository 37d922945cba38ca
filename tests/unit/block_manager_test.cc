#include <gtest/gtest.h>

#include "runtime/block_manager.h"

namespace locr::runtime {
namespace {

TEST(BlockManager, AllocateReleaseAndExhaust) {
  BlockManager bm(3, 4, false);
  EXPECT_EQ(bm.blocks_for(9), 3);
  std::vector<int32_t> t;
  for (int i = 0; i < 3; ++i) t.push_back(bm.allocate());
  EXPECT_EQ(bm.allocate(), -1);
  EXPECT_EQ(bm.n_free(), 0);
  EXPECT_DOUBLE_EQ(bm.usage(), 1.0);
  bm.release(t);
  EXPECT_EQ(bm.n_free(), 3);
}

TEST(BlockManager, PrefixReuseAndEviction) {
  BlockManager bm(4, 2, true);
  const int32_t toks[] = {1, 2, 3, 4, 5};
  const uint64_t h0 = BlockManager::chain_hash(0, toks, 2, 0);
  const uint64_t h1 = BlockManager::chain_hash(h0, toks + 2, 2, 0);
  EXPECT_NE(h0, BlockManager::chain_hash(0, toks, 2, 1));  // the extra key (image content) matters
  std::vector<int32_t> a = {bm.allocate(), bm.allocate()};
  bm.publish(a[0], h0);
  bm.publish(a[1], h1);
  // A second request with the same prefix reuses both blocks while the first still holds them.
  std::vector<int32_t> b;
  EXPECT_EQ(bm.reuse_prefix({h0, h1}, b), 2);
  EXPECT_EQ(b, a);
  bm.release(a);
  bm.release(b);
  EXPECT_EQ(bm.n_free(), 4);  // cached blocks count as free
  // Still findable after release.
  std::vector<int32_t> c;
  EXPECT_EQ(bm.reuse_prefix({h0, 999}, c), 1);
  bm.release(c);
  // Exhausting fresh blocks evicts cached ones, least recently freed first.
  std::vector<int32_t> d;
  for (int i = 0; i < 4; ++i) d.push_back(bm.allocate());
  EXPECT_EQ(bm.allocate(), -1);
  std::vector<int32_t> e;
  EXPECT_EQ(bm.reuse_prefix({h0}, e), 0);
  EXPECT_GE(bm.prefix_hits(), 3u);
}

TEST(BlockManager, DisabledPrefixCachingNeverReuses) {
  BlockManager bm(2, 2, false);
  const int32_t t = bm.allocate();
  bm.publish(t, 42);
  std::vector<int32_t> x;
  EXPECT_EQ(bm.reuse_prefix({42}, x), 0);
}

}  // namespace
}  // namespace locr::runtime
