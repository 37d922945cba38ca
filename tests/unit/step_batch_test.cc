// The pieces around the one forward pass: HostStepBatch (a step's RoPE tables, KV slots and paged
// attention arrays), Workspace (fixed activation buffers, grown on demand) and the KV sizing every
// backend shares (model/memory_sizing.h).
#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/ops.h"
#include "model/lightonocr/activation_estimate.h"
#include "model/lightonocr/step_batch.h"
#include "model/memory_sizing.h"
#include "model/rope.h"
#include "model/workspace.h"

namespace locr::model {
namespace {

TEST(HostStepBatch, ArraysOfSeveralSequences) {
  TextConfig tc;  // head_dim 128
  const int bs = 4;
  const std::vector<int32_t> t0{7, 2}, t1{5}, t2{9, 1, 3};
  // A decode at position 5 (block 1 of t0), a fresh 3-token prefill, a chunk of 2 after 9 keys.
  const std::vector<SeqStep> seqs{{5, 1, t0.data()}, {0, 3, t1.data()}, {9, 2, t2.data()}};
  const HostStepBatch hb(tc, seqs, bs);
  const StepBatch& b = hb.batch();
  EXPECT_EQ(b.rows, 6);
  EXPECT_EQ(hb.slots, (std::vector<int32_t>{2 * 4 + 1, 5 * 4 + 0, 5 * 4 + 1, 5 * 4 + 2, 3 * 4 + 1, 3 * 4 + 2}));
  EXPECT_EQ(hb.cu_q, (std::vector<int32_t>{0, 1, 4, 6}));
  EXPECT_EQ(hb.seq_lens, (std::vector<int32_t>{6, 3, 11}));
  ASSERT_EQ(b.attn.max_blocks, 3);
  EXPECT_EQ(std::vector<int32_t>(hb.tables.begin(), hb.tables.begin() + 2), t0);
  EXPECT_EQ(hb.tables[3], 5);
  EXPECT_EQ(std::vector<int32_t>(hb.tables.begin() + 6, hb.tables.end()), t2);
  EXPECT_EQ(b.attn.max_q, 3);
  EXPECT_EQ(b.attn.max_seq_len, 11);
  EXPECT_EQ(b.attn.host_cu_q, b.attn.cu_q);  // host arrays: the same memory
  // Each row's RoPE angles are its own position's.
  const int64_t half = tc.head_dim / 2;
  const RopeTable r9 = text_rope(tc.rope_theta, tc.head_dim, 9, 2);
  for (int64_t d = 0; d < half; ++d) {
    EXPECT_EQ(hb.cos[4 * half + d], r9.cos[d]);
    EXPECT_EQ(hb.sin[5 * half + d], r9.sin[half + d]);
  }
}

TEST(Workspace, BuffersStayPutUntilTheyGrow) {
  auto ops = kernels::make_ops("ref");
  Workspace ws(*ops);
  float* a = ws.f32(0, 100);
  float* b = ws.f32(3, 10);
  const uint64_t g = ws.generation();
  EXPECT_EQ(ws.f32(0, 100), a);
  EXPECT_EQ(ws.f32(0, 50), a);  // smaller: the same buffer
  EXPECT_EQ(ws.f32(3, 10), b);
  EXPECT_EQ(ws.generation(), g);
  ws.f32(0, 101);  // larger: a new allocation, and graphs captured before must be dropped
  EXPECT_GT(ws.generation(), g);
  EXPECT_GE(ws.bytes(), (101 + 10) * 4);
}

TEST(MemorySizing, UtilizationLeavesTotalMinusUseMinusActivations) {
  EXPECT_EQ(kv_bytes_for_utilization(0.5, 1000 << 20, 100 << 20, 50 << 20, "RAM"), (500 - 150) << 20);
  try {
    kv_bytes_for_utilization(0.1, 1000 << 20, 100 << 20, 50 << 20, "device memory");
    FAIL() << "no KV memory left must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLimit);
    EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kv_bytes_for_utilization(1.5, 1000, 0, 0, "RAM"), Error);
  EXPECT_THROW(kv_bytes_for_utilization(0.0, 1000, 0, 0, "RAM"), Error);
  EXPECT_EQ(kv_blocks_cap(4, 33, 16), 2 * 4 * 3);
}

TEST(MemorySizing, ActivationsGrowWithTheBatchAndCountTheLogits) {
  ModelConfig cfg;
  const int64_t a = activation_estimate(cfg, 1024, 1), b = activation_estimate(cfg, 2048, 1);
  const int64_t c = activation_estimate(cfg, 1024, 2);
  EXPECT_GT(b, a);
  EXPECT_EQ(c - a, int64_t{cfg.text.vocab_size} * 4);  // one more logits row of F32
}

}  // namespace
}  // namespace locr::model
