// Speculative decoding in the engine (runtime/speculative.h): greedy output is the same token for
// token with and without drafts (replayed, n-gram, text-layer, mostly wrong ones), alone and
// batched with requests that do not speculate, on text and image prompts; max_tokens and EOS
// inside a draft, cancellation mid-draft; sampled requests keep their distribution (the sampler's
// draft rule exactly, the engine's output statistically); no KV block
// is leaked after many rejections; the metrics count drafts; the configuration parses as vLLM's.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include "core/error.h"
#include "io/image.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

namespace locr::runtime {
namespace {

using namespace std::chrono_literals;

const model::LightOnOcr& tiny_model(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<model::LightOnOcr>> models;
  auto& m = models[backend];
  if (!m) {
    model::LoadOptions lo;
    lo.backend = backend;
    m = model::LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", lo);
  }
  return *m;
}

RequestInput text_request(const model::LightOnOcr& m, const std::string& text, int max_tokens) {
  RequestInput in;
  in.prompt_ids = m.build_prompt(model::LightOnOcr::make_messages(nullptr, &text, 0), {}).ids;
  in.decode.max_tokens = max_tokens;
  in.decode.sampling.temperature = 0;
  in.decode.eos_ids = {m.generation_config().eos_token_ids.begin(), m.generation_config().eos_token_ids.end()};
  return in;
}

RequestInput page_request(const model::LightOnOcr& m, int max_tokens) {
  const model::Prompt p = m.build_prompt(model::LightOnOcr::make_messages(nullptr, nullptr, 1),
                                         {io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png")});
  RequestInput in;
  in.prompt_ids = p.ids;
  in.images = p.images;
  in.decode.max_tokens = max_tokens;
  in.decode.sampling.temperature = 0;
  in.decode.eos_ids = {m.generation_config().eos_token_ids.begin(), m.generation_config().eos_token_ids.end()};
  return in;
}

struct Outcome {
  std::vector<int32_t> tokens;
  std::string reason;
  RequestTimes times;
};

Outcome collect(RequestStream& s) {
  Outcome r;
  for (;;) {
    auto e = s.next(60s);
    if (!e) {
      ADD_FAILURE() << "timed out waiting for the engine";
      return r;
    }
    if (e->token >= 0) r.tokens.push_back(e->token);
    if (e->finished) {
      r.reason = finish_reason_name(e->finish_reason);
      r.times = s.times();
      return r;
    }
  }
}

SpeculativeConfig spec(SpeculativeConfig::Method method, int k) {
  SpeculativeConfig c;
  c.method = method;
  c.num_speculative_tokens = k;
  return c;
}

EngineOptions small_blocks() {
  EngineOptions o;
  o.max_num_seqs = 16;
  o.block_size = 4;  // drafts often cross blocks
  o.kv_cache_bytes = 32LL << 20;
  return o;
}

void expect_no_leak(const Engine& engine) {
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

const char* const kPrompts[] = {"Hello, how are you?", "| a | b |\n|---|---|\n| 1 | 2 |", "Once upon a time",
                                 "The quick brown fox jumps over the lazy dog."};

class SpeculativeEngine : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeculativeEngine, GreedyOutputIsUnchangedByAnyDrafter) {
  const model::LightOnOcr& m = tiny_model(GetParam());
  Engine engine(m, small_blocks());
  // References: no speculation, one request at a time.
  std::vector<Outcome> plain;
  for (const char* p : kPrompts) plain.push_back(collect(*engine.submit(text_request(m, p, 40))));
  plain.push_back(collect(*engine.submit(page_request(m, 30))));
  const size_t n = plain.size();
  std::mt19937 rng(7);
  // Every request again, all in one batch: the same prompts without drafts, with their own output
  // replayed (every draft right), with n-grams, with a corrupted text layer (drafts right and
  // wrong), and with random drafts (nearly all wrong).
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::pair<size_t, std::string>> what;
  for (size_t i = 0; i < n; ++i) {
    auto base = [&] { return i + 1 == n ? page_request(m, 30) : text_request(m, kPrompts[i], 40); };
    streams.push_back(engine.submit(base()));
    what.emplace_back(i, "none");
    RequestInput replay = base();
    replay.spec = spec(SpeculativeConfig::Method::kReplay, 8);
    replay.draft_corpus = plain[i].tokens;
    streams.push_back(engine.submit(replay));
    what.emplace_back(i, "replay");
    RequestInput ngram = base();
    ngram.spec = spec(SpeculativeConfig::Method::kNgram, 4);
    ngram.spec.prompt_lookup_min = 1;
    ngram.spec.prompt_lookup_max = 3;
    streams.push_back(engine.submit(ngram));
    what.emplace_back(i, "ngram");
    RequestInput text = base();
    text.spec = spec(SpeculativeConfig::Method::kTextLayer, 6);
    text.draft_corpus = plain[i].tokens;
    for (size_t t = 3; t < text.draft_corpus.size(); t += 5) text.draft_corpus[t] = (text.draft_corpus[t] + 1) % 700;
    streams.push_back(engine.submit(text));
    what.emplace_back(i, "text-layer");
    RequestInput wrong = base();
    wrong.spec = spec(SpeculativeConfig::Method::kReplay, 16);
    for (int t = 0; t < 64; ++t) wrong.draft_corpus.push_back(static_cast<int32_t>(rng() % 700));
    streams.push_back(engine.submit(wrong));
    what.emplace_back(i, "random");
  }
  uint64_t drafted = 0, accepted = 0;
  for (size_t k = 0; k < streams.size(); ++k) {
    const Outcome r = collect(*streams[k]);
    const auto& [i, how] = what[k];
    EXPECT_EQ(r.tokens, plain[i].tokens) << "request " << i << " with " << how << " drafts";
    EXPECT_EQ(r.reason, plain[i].reason) << "request " << i << " with " << how << " drafts";
    if (how == "none") {
      EXPECT_EQ(r.times.drafted_tokens, 0);
    }
    if (how == "replay" && plain[i].tokens.size() > 2) {
      // Every replayed draft is right: all but the tokens the verified steps emit themselves.
      EXPECT_GT(r.times.accepted_tokens, 0) << i;
      EXPECT_EQ(r.times.accepted_tokens, r.times.drafted_tokens) << i;
    }
    EXPECT_LE(r.times.accepted_tokens, r.times.drafted_tokens);
    drafted += r.times.drafted_tokens;
    accepted += r.times.accepted_tokens;
  }
  EXPECT_GT(drafted, accepted) << "the test must include rejected drafts";
  EXPECT_EQ(engine.metrics().spec_draft_tokens.load(), drafted);
  EXPECT_EQ(engine.metrics().spec_accepted_tokens.load(), accepted);
  EXPECT_EQ(engine.metrics().spec_accepted_per_pos[0].load() > 0, accepted > 0);
  const std::string text = engine.metrics().render("tiny");
  EXPECT_NE(text.find("vllm:spec_decode_num_draft_tokens_total{model_name=\"tiny\"} " +
                      std::to_string(drafted) + ".0"), std::string::npos);
  expect_no_leak(engine);
}

TEST_P(SpeculativeEngine, MaxTokensAndEosInsideADraft) {
  const model::LightOnOcr& m = tiny_model(GetParam());
  Engine engine(m, small_blocks());
  RequestInput base = text_request(m, kPrompts[0], 60);
  base.decode.ignore_eos = true;
  const Outcome plain = collect(*engine.submit(base));
  ASSERT_EQ(plain.tokens.size(), 60u);
  // max_tokens 11 with 8-token drafts of the right output: the request ends inside a draft.
  RequestInput cut = base;
  cut.decode.max_tokens = 11;
  cut.spec = spec(SpeculativeConfig::Method::kReplay, 8);
  cut.draft_corpus = plain.tokens;
  const Outcome r = collect(*engine.submit(cut));
  EXPECT_EQ(r.tokens, std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + 11));
  EXPECT_EQ(r.reason, "length");
  // A stop token id inside a draft: the output ends with it, as without drafts.
  RequestInput stop = base;
  stop.decode.stop_token_ids = {plain.tokens[20]};
  const Outcome ref = collect(*engine.submit(stop));
  stop.spec = spec(SpeculativeConfig::Method::kReplay, 8);
  stop.draft_corpus = plain.tokens;
  const Outcome rs = collect(*engine.submit(stop));
  EXPECT_EQ(rs.tokens, ref.tokens);
  EXPECT_EQ(rs.reason, "stop");
  EXPECT_LE(rs.tokens.size(), 21u);
  expect_no_leak(engine);
}

TEST_P(SpeculativeEngine, CancelMidDraftFreesEveryBlock) {
  const model::LightOnOcr& m = tiny_model(GetParam());
  Engine engine(m, small_blocks());
  RequestInput in = text_request(m, kPrompts[1], 400);
  in.decode.ignore_eos = true;
  in.spec = spec(SpeculativeConfig::Method::kNgram, 8);
  in.spec.prompt_lookup_min = 1;
  auto s = engine.submit(in);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->next(30s).has_value());
  s->cancel();
  const Outcome r = collect(*s);
  EXPECT_EQ(r.reason, "abort");
  expect_no_leak(engine);
}

// The upper 1e-6 quantile of chi-square with df degrees of freedom (Wilson-Hilferty): a test at
// this bound fails for a correct sampler once in a million seeds (the seeds here are fixed).
double chi2_bound(int df) {
  const double z = 4.753, a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

TEST_P(SpeculativeEngine, SampledRequestsKeepTheirDistribution) {
  const model::LightOnOcr& m = tiny_model(GetParam());
  EngineOptions o = small_blocks();
  o.max_num_seqs = 32;
  Engine engine(m, o);
  RequestInput base = text_request(m, kPrompts[2], 3);
  base.decode.ignore_eos = true;
  base.decode.sampling.temperature = 1.0f;
  base.decode.sampling.top_k = 4;  // four candidates per position: dense histograms
  base.decode.sampling.has_seed = true;
  const std::vector<int32_t> greedy = [&] {
    RequestInput g = base;
    g.decode.sampling.temperature = 0;
    return collect(*engine.submit(g)).tokens;
  }();
  const int n = 400;
  std::vector<std::map<int32_t, int>> plain(2), spec_hist(2);
  int64_t drafted = 0, accepted = 0;
  for (int round = 0; round < 2; ++round) {
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < n; ++i) {
      RequestInput in = base;
      in.decode.sampling.seed = 1000 + i + round * 100000;
      if (round == 1) {  // drafts: the greedy output (likely tokens, often but not always drawn)
        in.spec = spec(SpeculativeConfig::Method::kReplay, 2);
        in.draft_corpus = greedy;
      }
      streams.push_back(engine.submit(in));
    }
    for (auto& st : streams) {
      const Outcome r = collect(*st);
      ASSERT_EQ(r.tokens.size(), 3u);
      for (int pos = 0; pos < 2; ++pos) ++(round ? spec_hist : plain)[pos][r.tokens[pos + 1]];
      drafted += r.times.drafted_tokens;
      accepted += r.times.accepted_tokens;
    }
  }
  EXPECT_GT(drafted, 0) << "sampled requests must speculate";
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted) << "the test needs rejected drafts too";
  // Two-sample chi-square, tokens 2 and 3 (after the first verification and inside it).
  for (int pos = 0; pos < 2; ++pos) {
    std::map<int32_t, std::pair<int, int>> bins;
    for (auto [t, c] : plain[pos]) bins[t].first = c;
    for (auto [t, c] : spec_hist[pos]) bins[t].second = c;
    double chi2 = 0;
    for (auto [t, ab] : bins) chi2 += std::pow(ab.first - ab.second, 2.0) / (ab.first + ab.second);
    const int df = static_cast<int>(bins.size()) - 1;
    ASSERT_GE(df, 1);
    EXPECT_LT(chi2, chi2_bound(df)) << "token " << pos + 2 << ": " << bins.size() << " bins";
  }
  expect_no_leak(engine);
}

INSTANTIATE_TEST_SUITE_P(Backends, SpeculativeEngine, ::testing::Values("cpu-f32", "cpu-bf16"));

TEST(SpeculativeConfig, ParsesVllmsJson) {
  using nlohmann::json;
  SpeculativeConfig c = parse_speculative_config(
      json::parse(R"({"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2})"));
  EXPECT_EQ(c.method, SpeculativeConfig::Method::kNgram);
  EXPECT_EQ(c.num_speculative_tokens, 5);
  EXPECT_EQ(c.prompt_lookup_max, 4);
  EXPECT_EQ(c.prompt_lookup_min, 2);
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(parse_speculative_config(json::parse(R"({"method": "[ngram]", "num_speculative_tokens": 3})")).method,
            SpeculativeConfig::Method::kNgram);
  EXPECT_EQ(parse_speculative_config(json::parse(R"({"method": "text-layer", "num_speculative_tokens": 8})")).method,
            SpeculativeConfig::Method::kTextLayer);
  EXPECT_FALSE(parse_speculative_config(json()).enabled());
  EXPECT_FALSE(parse_speculative_config(json(false)).enabled());
  EXPECT_FALSE(parse_speculative_config(json::object()).enabled());
  auto message = [](const std::string& text) {
    try {
      parse_speculative_config(json::parse(text));
    } catch (const locr::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"method": "ngram"})").find("num_speculative_tokens' is required"), std::string::npos);
  EXPECT_NE(message(R"({"method": "ngram", "num_speculative_tokens": 17})").find("[1, 16]"), std::string::npos);
  EXPECT_NE(message(R"({"method": "eagle", "num_speculative_tokens": 2})").find("not supported"), std::string::npos);
  EXPECT_NE(message(R"({"model": "x", "num_speculative_tokens": 2})").find("draft models"), std::string::npos);
  EXPECT_NE(message(R"({"method": "ngram", "num_speculative_tokens": 2, "typo": 1})").find("unknown key 'typo'"),
            std::string::npos);
  EXPECT_NE(message(R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 5, "prompt_lookup_max": 2})")
                .find("more than prompt_lookup_max"),
            std::string::npos);
}

// Sampler::sample_with_draft against the exact distribution of sample(): 12 logits, temperature
// 0.7, top-p 0.9 (the tail out of the candidate set), drafts of the likeliest, a middling and an
// excluded token; 40,000 draws each, Pearson's chi-square at the 1e-6 bound (df = candidates - 1),
// and the draft kept as often as its probability says (5 standard deviations).
TEST(SpeculativeSampler, TheDraftRuleKeepsTheDistribution) {
  const std::vector<float> logits0 = {2.0f, 1.5f, 1.2f, 0.9f, 0.5f, 0.1f, -0.3f, -1.0f, -2.0f, -3.0f, -4.0f, -6.0f};
  const int64_t V = static_cast<int64_t>(logits0.size());
  SamplingParams sp;
  sp.temperature = 0.7f;
  sp.top_p = 0.9f;
  sp.seed = 42;
  sp.has_seed = true;
  // The exact distribution: softmax at temperature 0.7 over the smallest head holding 0.9 of it.
  std::vector<double> w(V);
  double total = 0;
  for (int64_t i = 0; i < V; ++i) total += w[i] = std::exp((logits0[i] - logits0[0]) / 0.7);
  std::vector<double> p(V, 0.0);
  double cum = 0, head = 0;
  int64_t n = 0;
  while (n < V && cum < 0.9 * total) cum += w[n++];
  for (int64_t i = 0; i < n; ++i) head += w[i];
  for (int64_t i = 0; i < n; ++i) p[i] = w[i] / head;
  ASSERT_GT(n, 3);
  ASSERT_LT(n, V);
  for (const int32_t draft : {0, 2, static_cast<int32_t>(V - 1)}) {
    Sampler s(sp);
    const int draws = 40000;
    std::vector<int> count(V, 0);
    for (int d = 0; d < draws; ++d) {
      std::vector<float> l = logits0;
      ++count[s.sample_with_draft(l.data(), V, draft)];
    }
    double chi2 = 0;
    for (int64_t i = 0; i < V; ++i) {
      if (p[i] == 0) {
        EXPECT_EQ(count[i], 0) << "token " << i << " is outside the candidate set (draft " << draft << ")";
        continue;
      }
      const double e = p[i] * draws;
      chi2 += (count[i] - e) * (count[i] - e) / e;
    }
    EXPECT_LT(chi2, chi2_bound(static_cast<int>(n) - 1)) << "draft " << draft;
    const double pd = p[draft], sd = std::sqrt(draws * pd * (1 - pd));
    EXPECT_NEAR(count[draft], draws * pd, 5 * sd + 1e-9) << "draft " << draft;
  }
  // Greedy: the argmax whatever the draft.
  SamplingParams g;
  g.temperature = 0;
  Sampler gs(g);
  std::vector<float> l = logits0;
  EXPECT_EQ(gs.sample_with_draft(l.data(), V, 5), 0);
}

TEST(ReplayDrafter, ProposesTheTokensAfterTheOutput) {
  ReplayDrafter d({1, 2, 3, 4, 5}, 3);
  const std::vector<int32_t> none, two = {1, 2}, all = {1, 2, 3, 4, 5};
  EXPECT_EQ(d.propose(none), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(d.propose(two), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_TRUE(d.propose(all).empty());
}

}  // namespace
}  // namespace locr::runtime
