// kernels::ProfiledOps (`locr perf --profile-ops`): the wrapped backend's results are unchanged,
// bit for bit, and each op is counted once per call with the arithmetic of its shape.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/op_profile.h"
#include "kernels/ops.h"

namespace locr::kernels {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

const OpStat* find(const std::vector<OpStat>& stats, const std::string& op) {
  for (const OpStat& s : stats)
    if (s.op == op) return &s;
  return nullptr;
}

TEST(OpProfile, AttentionPairsCountTheCausalTriangle) {
  EXPECT_EQ(attention_pairs(3, 5, false, 0), 15.0);
  EXPECT_EQ(attention_pairs(3, 5, true, 2), 3.0 + 4.0 + 5.0);  // query i sees keys 0 .. 2 + i
  EXPECT_EQ(attention_pairs(4, 4, true, 0), 1.0 + 2.0 + 3.0 + 4.0);
  EXPECT_EQ(attention_pairs(2, 3, true, 5), 3.0 + 3.0);  // at most n_kv keys
}

// The same ops on the bare backend and on the profiled one give the same bits, and the profile
// holds one row per op and shape with its calls and FLOPs.
TEST(OpProfile, ForwardsEveryOpUnchangedAndCountsIt) {
  std::unique_ptr<Ops> bare = make_ops("cpu-bf16");
  ProfiledOps prof(make_ops("cpu-bf16"));
  EXPECT_STREQ(prof.name(), bare->name());

  const int64_t M = 37, N = 48, K = 64, heads = 2, hd = 32, n_kv = 37;
  const std::vector<float> wdata = random_floats(N * K, 1), x = random_floats(M * K, 2);
  auto weight = [&](Ops& ops) {
    Matrix w;
    w.dtype = DType::kF32;
    w.rows = N;
    w.cols = K;
    w.data = wdata.data();
    ops.prepare(w);
    return w;
  };
  const Matrix w_bare = weight(*bare), w_prof = weight(prof);
  std::vector<float> y_bare(M * N), y_prof(M * N);
  bare->matmul(bare->f32(x.data(), M, K), w_bare, bare->f32(y_bare.data(), M, N));
  for (int i = 0; i < 2; ++i) prof.matmul(prof.f32(x.data(), M, K), w_prof, prof.f32(y_prof.data(), M, N));
  EXPECT_EQ(0, std::memcmp(y_bare.data(), y_prof.data(), y_bare.size() * 4));

  // Causal attention of M queries (the last M of n_kv positions) over [M, heads * hd] rows.
  const std::vector<float> q = random_floats(M * heads * hd, 3), k = random_floats(n_kv * heads * hd, 4),
                           v = random_floats(n_kv * heads * hd, 5);
  AttentionParams p;
  p.n_kv = n_kv;
  p.n_heads = p.n_kv_heads = heads;
  p.head_dim = hd;
  p.scale = 0.125f;
  p.causal = true;
  p.q_offset = n_kv - M;
  std::vector<float> o_bare(M * heads * hd), o_prof(M * heads * hd);
  auto attend = [&](Ops& ops, std::vector<float>& o) {
    ops.attention(ops.f32(q.data(), M, heads * hd), ops.f32(k.data(), n_kv, heads * hd),
                  ops.f32(v.data(), n_kv, heads * hd), ops.f32(o.data(), M, heads * hd), p);
  };
  attend(*bare, o_bare);
  attend(prof, o_prof);
  EXPECT_EQ(0, std::memcmp(o_bare.data(), o_prof.data(), o_bare.size() * 4));

  std::vector<float> a = random_floats(M * N, 6), b = random_floats(M * N, 7);
  std::vector<float> a2 = a;
  bare->add(bare->f32(a.data(), M, N), bare->f32(b.data(), M, N));
  prof.add(prof.f32(a2.data(), M, N), prof.f32(b.data(), M, N));
  EXPECT_EQ(a, a2);

  const std::vector<OpStat> stats = prof.stats();
  ASSERT_EQ(stats.size(), 3u);
  const OpStat* mm = find(stats, "matmul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->shape, "37x48x64 F32");
  EXPECT_EQ(mm->calls, 2);
  EXPECT_EQ(mm->flops, 2.0 * 2 * M * N * K);
  EXPECT_GT(mm->seconds, 0.0);
  const OpStat* at = find(stats, "attention");
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at->calls, 1);
  EXPECT_EQ(at->shape, "37x37, 2/2 heads x 32, causal");
  EXPECT_EQ(at->flops, 4.0 * (M * (M + 1) / 2) * heads * hd);  // q_offset 0: the triangle
  const OpStat* ad = find(stats, "add");
  ASSERT_NE(ad, nullptr);
  EXPECT_EQ(ad->flops, 0.0);
  EXPECT_EQ(ad->bytes, 3.0 * 4 * M * N);
  for (size_t i = 1; i < stats.size(); ++i) EXPECT_GE(stats[i - 1].seconds, stats[i].seconds);

  prof.reset();
  EXPECT_TRUE(prof.stats().empty());
}

TEST(OpProfile, WrapsEveryHostBackend) {
  for (const char* b : {"ref", "cpu-f32", "cpu-bf16"}) EXPECT_NO_THROW(ProfiledOps(make_ops(b))) << b;
}

}  // namespace
}  // namespace locr::kernels
