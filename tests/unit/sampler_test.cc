#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "runtime/sampler.h"

namespace locr::runtime {
namespace {

TEST(Sampler, GreedyIsArgmaxFirstMaximum) {
  std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f};
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  EXPECT_EQ(s.sample(l.data(), 4), 1);
  p.temperature = 0.7f;
  p.top_k = 1;
  Sampler s1(p);
  EXPECT_EQ(s1.sample(l.data(), 4), 1);
}

TEST(Sampler, SeedReproduces) {
  std::vector<float> l(1000);
  for (int i = 0; i < 1000; ++i) l[i] = static_cast<float>((i * 7919) % 101) / 25.0f;
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 1234;
  p.has_seed = true;
  Sampler a(p), b(p);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> la = l, lb = l;
    EXPECT_EQ(a.sample(la.data(), 1000), b.sample(lb.data(), 1000));
  }
}

TEST(Sampler, TopKAndTopPRestrictTheSupport) {
  // Probabilities proportional to exp(logit): 0.5, 0.25, 0.125, ... roughly.
  std::vector<float> l = {4.0f, 3.3f, 2.6f, 1.9f, 1.2f, 0.5f, -0.2f, -0.9f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.has_seed = true;
  p.seed = 7;
  p.top_k = 3;
  Sampler sk(p);
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) {
    auto c = l;
    seen[sk.sample(c.data(), 8)]++;
  }
  for (const auto& [tok, n] : seen) EXPECT_LT(tok, 3);
  EXPECT_EQ(seen.size(), 3u);
  // top_p = 0.6: the first token has ~0.50 of the mass, the first two ~0.75 -> support {0, 1}.
  p.top_k = 0;
  p.top_p = 0.6f;
  Sampler sp(p);
  seen.clear();
  for (int i = 0; i < 2000; ++i) {
    auto c = l;
    seen[sp.sample(c.data(), 8)]++;
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[0], seen[1]);
  // min_p = 0.3 relative to the top: exp(-0.7) ~ 0.50 kept, exp(-1.4) ~ 0.25 dropped.
  p.top_p = 1.0f;
  p.min_p = 0.3f;
  Sampler sm(p);
  seen.clear();
  for (int i = 0; i < 2000; ++i) {
    auto c = l;
    seen[sm.sample(c.data(), 8)]++;
  }
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Sampler, TemperatureFollowsTheDistribution) {
  std::vector<float> l = {0.0f, std::log(3.0f)};  // p = 0.25, 0.75
  SamplingParams p;
  p.temperature = 1.0f;
  p.has_seed = true;
  p.seed = 99;
  Sampler s(p);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    auto c = l;
    ones += s.sample(c.data(), 2);
  }
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.02);
}

}  // namespace
}  // namespace locr::runtime
