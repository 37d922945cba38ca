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

BlockHash key(uint8_t v) {
  BlockHash h{};
  h[0] = v;
  return h;
}

TEST(BlockManager, PrefixReuseAndEviction) {
  BlockManager bm(4, 2, true);
  const int32_t toks[] = {1, 2, 3, 4, 5};
  const BlockHash h0 = chain_hash(BlockHash{}, toks, 2);
  const BlockHash h1 = chain_hash(h0, toks + 2, 2);
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
  EXPECT_EQ(bm.reuse_prefix({h0, key(99)}, c), 1);
  bm.release(c);
  // Exhausting fresh blocks evicts cached ones, least recently freed first.
  std::vector<int32_t> d;
  for (int i = 0; i < 4; ++i) d.push_back(bm.allocate());
  EXPECT_EQ(bm.allocate(), -1);
  std::vector<int32_t> e;
  EXPECT_EQ(bm.reuse_prefix({h0}, e), 0);
  EXPECT_GE(bm.prefix_hits(), 3u);
}

TEST(BlockHash, ChainsParentTokensAndImages) {
  const int32_t toks[] = {1, 2, 3, 4};
  const BlockHash root{};
  const BlockHash h = chain_hash(root, toks, 4);
  EXPECT_EQ(h, chain_hash(root, toks, 4));
  const int32_t other[] = {1, 2, 3, 5};
  EXPECT_NE(h, chain_hash(root, other, 4));
  EXPECT_NE(h, chain_hash(key(1), toks, 4));  // the parent matters
  EXPECT_NE(h, chain_hash(root, toks, 3));
  const BlockHash img = key(7);
  EXPECT_NE(h, chain_hash(root, toks, 4, {&img, 1}));  // image content matters
  // One id of 0x0201 is not two of 0x01, 0x02 (fixed-width encoding, lengths hashed).
  const int32_t one[] = {0x0201}, two[] = {0x01, 0x02};
  EXPECT_NE(chain_hash(root, one, 1), chain_hash(root, two, 2));
  // Known answer: SHA-256 of 32 zero bytes, n = 0 and 0 images (40 zero bytes).
  const BlockHash empty = chain_hash(root, toks, 0);
  EXPECT_EQ(empty[0], 0x2c);
  EXPECT_EQ(empty[31], 0xeb);
}

TEST(BlockHash, ImagesKeyOnlyTheBlocksThatHoldThem) {
  const int32_t I = 9;  // image placeholder
  // Block size 4: [t t t t][t t I I][I I t t][t t]
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, I, I, I, I, 7, 8, 1, 2};
  const std::vector<BlockHash> a = prompt_block_hashes(prompt, 4, I, {key(1)}, {4});
  const std::vector<BlockHash> b = prompt_block_hashes(prompt, 4, I, {key(2)}, {4});
  ASSERT_EQ(a.size(), 3u);  // full blocks only
  EXPECT_EQ(a[0], b[0]);    // text before the image is shared across images
  EXPECT_NE(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
  EXPECT_EQ(a, prompt_block_hashes(prompt, 4, I, {key(1)}, {4}));
  // Two images of two tokens each: swapping their pixels changes the key of the block.
  const auto two = prompt_block_hashes(prompt, 4, I, {key(1), key(2)}, {2, 2});
  const auto swapped = prompt_block_hashes(prompt, 4, I, {key(2), key(1)}, {2, 2});
  EXPECT_EQ(two[0], swapped[0]);
  EXPECT_NE(two[1], swapped[1]);
  // Placeholders that do not add up to the images: every block carries every image.
  const auto odd = prompt_block_hashes(prompt, 4, I, {key(1)}, {3});
  const auto odd2 = prompt_block_hashes(prompt, 4, I, {key(2)}, {3});
  EXPECT_NE(odd[0], odd2[0]);
}

TEST(BlockManager, DisabledPrefixCachingNeverReuses) {
  BlockManager bm(2, 2, false);
  const int32_t t = bm.allocate();
  bm.publish(t, key(42));
  std::vector<int32_t> x;
  EXPECT_EQ(bm.reuse_prefix({key(42)}, x), 0);
}

}  // namespace
}  // namespace locr::runtime
