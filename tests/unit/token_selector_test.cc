// Per-request token selection (runtime/token_selector.h), the code the Engine and runtime::generate
// share: the finish decision and its order, min_tokens holding EOS back, penalties over the
// context, log-probabilities of the raw distribution, forced outputs, when a device may sample.
// Expected values are worked out by hand from the rules (transformers' repetition penalty,
// OpenAI's presence/frequency penalties, vLLM's finish order), not from the code's output.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "runtime/token_selector.h"

namespace locr::runtime {
namespace {

DecodeParams greedy() {
  DecodeParams p;
  p.sampling.temperature = 0;
  p.max_tokens = 100;
  p.eos_ids = {5};
  p.loop_guard.enabled = false;
  return p;
}

TEST(TokenSelector, FinishDecisionsInVllmsOrder) {
  DecodeParams p = greedy();
  p.stop_token_ids = {3};
  {
    TokenSelector s(p, 100);
    EXPECT_FALSE(s.accept(1));
    const auto f = s.accept(3);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->reason, FinishReason::kStop);
    EXPECT_EQ(f->stop, StopReason::token_id(3));
  }
  {
    TokenSelector s(p, 100);
    const auto f = s.accept(5);  // EOS: a stop without a stop_reason
    ASSERT_TRUE(f);
    EXPECT_EQ(f->reason, FinishReason::kStop);
    EXPECT_TRUE(f->stop.none());
  }
  {
    DecodeParams q = p;
    q.ignore_eos = true;
    TokenSelector s(q, 2);
    EXPECT_FALSE(s.accept(5));  // ignored
    const auto f = s.accept(3);  // the last allowed token is a stop id: the stop wins over the length
    ASSERT_TRUE(f);
    EXPECT_EQ(f->stop, StopReason::token_id(3));
  }
  {
    TokenSelector s(p, 2);  // max_new: the request's max_tokens or what the context leaves
    EXPECT_FALSE(s.accept(1));
    const auto f = s.accept(1);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->reason, FinishReason::kLength);
    EXPECT_EQ(s.n_generated(), 2);
  }
}

TEST(TokenSelector, LoopGuardStopsARepetitionBeforeTheLength) {
  DecodeParams p = greedy();
  p.loop_guard = {true, /*window=*/16, /*ngram=*/2, /*max_distinct=*/2};
  TokenSelector s(p, 16);
  std::optional<Finish> f;
  int n = 0;
  while (!f) f = s.accept(n++ % 2 ? 7 : 8);  // 8 7 8 7 ...: one or two distinct 2-grams
  EXPECT_EQ(n, 16);  // the window must be full first
  EXPECT_EQ(f->reason, FinishReason::kStop);
  EXPECT_EQ(f->stop, StopReason::repetition());
}

TEST(TokenSelector, MinTokensHoldsEosBack) {
  DecodeParams p = greedy();
  p.min_tokens = 2;
  TokenSelector s(p, 100);
  const std::vector<int32_t> ctx = {0};
  auto logits = [] { return std::vector<float>{0, 1, 2, 0, 0, 9, 0, 0}; };  // EOS (5) is the argmax
  EXPECT_FALSE(s.device_may_sample());  // the host must mask EOS
  for (int i = 0; i < 2; ++i) {
    auto l = logits();
    const auto sel = s.select(l.data(), 8, ctx);
    ASSERT_TRUE(sel);
    EXPECT_EQ(sel->token, 2);
    EXPECT_FALSE(s.accept(sel->token));
  }
  EXPECT_TRUE(s.device_may_sample());
  auto l = logits();
  EXPECT_EQ(s.select(l.data(), 8, ctx)->token, 5);
}

TEST(TokenSelector, PenaltiesOverPromptAndOutput) {
  DecodeParams p = greedy();
  p.penalties = {2.0f, 0.0f, 0.0f};
  TokenSelector s(p, 100);
  EXPECT_FALSE(s.device_may_sample());
  // 1 is in the context: 3 / 2 = 1.5 < 2.
  std::vector<float> l = {0, 3, 2, 0, 0, 0, 0, 0};
  EXPECT_EQ(s.select(l.data(), 8, {1})->token, 2);
  EXPECT_FLOAT_EQ(l[1], 1.5f);
  // Frequency over the output only: token 2 was generated twice, 3 - 2 * 0.75 = 1.5 < 2.
  DecodeParams q = greedy();
  q.penalties = {1.0f, 0.0f, 0.75f};
  TokenSelector f(q, 100);
  f.accept(2);
  f.accept(2);
  std::vector<float> m = {0, 2, 3, 0, 0, 0, 0, 0};
  EXPECT_EQ(f.select(m.data(), 8, {2, 2})->token, 1);
  EXPECT_FLOAT_EQ(m[2], 1.5f);
}

TEST(TokenSelector, LogprobsAreOfTheRawDistribution) {
  DecodeParams p = greedy();
  p.logprobs = 2;
  p.penalties = {4.0f, 0.0f, 0.0f};
  TokenSelector s(p, 100);
  std::vector<float> l = {1, 4, 3, 0, 0, 0, 0, 0};
  double z = 0;
  for (float x : l) z += std::exp(static_cast<double>(x));
  const auto sel = s.select(l.data(), 8, {1});  // 1 is penalized to 1: 2 is chosen
  ASSERT_TRUE(sel);
  EXPECT_EQ(sel->token, 2);
  EXPECT_NEAR(sel->logprob, 3 - std::log(z), 1e-5);
  ASSERT_EQ(sel->top.size(), 2u);  // the raw top 2, best first
  EXPECT_EQ(sel->top[0].token, 1);
  EXPECT_NEAR(sel->top[0].logprob, 4 - std::log(z), 1e-5);
  EXPECT_EQ(sel->top[1].token, 2);
}

TEST(TokenSelector, ForcedOutputThenEosEvenWithIgnoreEos) {
  DecodeParams p = greedy();
  p.forced_ids = {4, 6};
  p.ignore_eos = true;
  p.loop_guard.enabled = true;  // a forced output is emitted whole
  TokenSelector s(p, 100);
  EXPECT_FALSE(s.device_may_sample());
  std::vector<int32_t> got;
  for (;;) {
    std::vector<float> l = {9, 0, 0, 0, 0, 0, 0, 0};  // the model would say 0
    const auto sel = s.select(l.data(), 8, {});
    ASSERT_TRUE(sel);
    got.push_back(sel->token);
    if (auto f = s.accept(sel->token)) {
      EXPECT_EQ(f->reason, FinishReason::kStop);
      break;
    }
  }
  EXPECT_EQ(got, (std::vector<int32_t>{4, 6, 5}));
  // Without an EOS id the request just ends after the forced output.
  p.eos_ids.clear();
  TokenSelector t(p, 100);
  std::vector<float> l(8, 0.0f);
  for (int32_t want : {4, 6}) {
    EXPECT_EQ(t.select(l.data(), 8, {})->token, want);
    EXPECT_FALSE(t.accept(want));
  }
  EXPECT_FALSE(t.select(l.data(), 8, {}));
}

TEST(TokenSelector, DeviceSamplingOnlyWithoutHostWork) {
  DecodeParams p = greedy();
  EXPECT_TRUE(TokenSelector(p, 10).device_may_sample());
  p.logprobs = 0;  // the chosen token's log-probability comes from the device
  EXPECT_TRUE(TokenSelector(p, 10).device_may_sample());
  p.logprobs = 1;
  EXPECT_FALSE(TokenSelector(p, 10).device_may_sample());
  p.logprobs = -1;
  p.penalties.presence = 0.5f;
  EXPECT_FALSE(TokenSelector(p, 10).device_may_sample());
}

}  // namespace
}  // namespace locr::runtime
