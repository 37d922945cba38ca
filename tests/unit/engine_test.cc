// The serving engine on a tiny fixture model: greedy results are the same alone and batched,
// chunked prefill and preemption do not change tokens, cancellation and completion free every
// KV block, prefix caching reuses blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/thread_pool.h"
#include "io/image.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/engine.h"
#include "runtime/generate.h"

namespace locr::runtime {
namespace {

using namespace std::chrono_literals;

const model::LightOnOcr& tiny_model() {
  // The FP32 path: batched results must equal unbatched ones token for token.
  static std::unique_ptr<model::LightOnOcr> m = [] {
    model::LoadOptions lo;
    lo.backend = "cpu-f32";
    return model::LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", lo);
  }();
  return *m;
}

RequestInput make_request(const std::string& text, int max_tokens) {
  const auto& m = tiny_model();
  const auto msgs = model::LightOnOcr::make_messages(nullptr, &text, 0);
  RequestInput in;
  in.prompt_ids = m.build_prompt(msgs, {}).ids;
  in.decode.max_tokens = max_tokens;
  in.decode.sampling.temperature = 0;
  in.decode.eos_ids = {m.generation_config().eos_token_ids.begin(), m.generation_config().eos_token_ids.end()};
  return in;
}

std::vector<int32_t> collect(RequestStream& s, std::string* reason = nullptr) {
  std::vector<int32_t> out;
  for (;;) {
    auto e = s.next(30s);
    if (!e) {
      ADD_FAILURE() << "timed out waiting for the engine";
      return out;
    }
    if (e->token >= 0) out.push_back(e->token);
    if (e->finished) {
      if (reason) *reason = finish_reason_name(e->finish_reason);
      return out;
    }
  }
}

// The recommended OCR request for tests/fixtures/images/page_small.png (the image alone), greedy.
model::Prompt small_page_prompt() {
  return tiny_model().build_prompt(model::LightOnOcr::make_messages(nullptr, nullptr, 1),
                                   {io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png")});
}
RequestInput page_request(const model::Prompt& p, int max_tokens) {
  RequestInput in;
  in.prompt_ids = p.ids;
  in.images = p.images;
  in.decode.max_tokens = max_tokens;
  in.decode.sampling.temperature = 0;
  return in;
}

std::vector<int32_t> reference(const RequestInput& in) {
  model::Prompt p;
  p.ids = in.prompt_ids;
  DecodeParams go;
  go.max_tokens = in.decode.max_tokens;
  go.sampling = in.decode.sampling;
  go.eos_ids = in.decode.eos_ids;
  return generate(tiny_model(), p, go).tokens;
}

const char* kPrompts[] = {"Hello, how are you?", "Bonjour tout le monde", "| a | b |\n|---|---|",
                          "def f(x): return x * 2", "用一句中文说明 TCP 和 UDP 的核心区别。", "The future of AI is",
                          "1234567890", "Short"};

TEST(Engine, BatchedEqualsUnbatched) {
  EngineOptions o;
  o.max_num_seqs = 32;
  o.max_num_batched_tokens = 64;  // forces chunked prefill of longer prompts
  o.kv_cache_bytes = 64LL << 20;
  Engine engine(tiny_model(), o);
  std::vector<RequestInput> ins;
  for (int i = 0; i < 32; ++i) ins.push_back(make_request(std::string(kPrompts[i % 8]) + std::string(i / 8, '!'), 24));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& in : ins) streams.push_back(engine.submit(in));
  for (size_t i = 0; i < ins.size(); ++i) EXPECT_EQ(collect(*streams[i]), reference(ins[i])) << "request " << i;
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

TEST(Engine, PreemptionUnderKvPressureKeepsTokens) {
  EngineOptions o;
  o.max_num_seqs = 8;
  o.block_size = 4;
  // Room for roughly two sequences at a time: the others wait or get preempted and recomputed.
  o.kv_cache_bytes = 24 * model::KvPool::bytes_per_block(tiny_model().config().text, 4);
  o.enable_prefix_caching = false;
  Engine engine(tiny_model(), o);
  std::vector<RequestInput> ins;
  for (int i = 0; i < 6; ++i) ins.push_back(make_request(kPrompts[i], 30));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& in : ins) streams.push_back(engine.submit(in));
  for (size_t i = 0; i < ins.size(); ++i) EXPECT_EQ(collect(*streams[i]), reference(ins[i])) << "request " << i;
  EXPECT_GT(engine.metrics().preemptions.load(), 0u) << "the test must exercise preemption";
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

TEST(Engine, CancelFreesBlocks) {
  EngineOptions o;
  o.kv_cache_bytes = 16LL << 20;
  Engine engine(tiny_model(), o);
  auto in = make_request("Hello, how are you?", 100000);
  in.decode.ignore_eos = true;
  in.decode.max_tokens = 2000;
  auto s = engine.submit(in);
  ASSERT_TRUE(s->next(30s).has_value());  // at least one token
  s->cancel();
  std::string reason;
  collect(*s, &reason);
  EXPECT_EQ(reason, "abort");
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
  // A frontend that stops a request itself (a stop string matched) has it recorded as "stop".
  auto s2 = engine.submit(in);
  ASSERT_TRUE(s2->next(30s).has_value());
  s2->cancel(FinishReason::kStop);
  collect(*s2, &reason);
  EXPECT_EQ(reason, "stop");
  const std::string m = engine.metrics().render("tiny");
  EXPECT_NE(m.find("vllm:request_success_total{model_name=\"tiny\",finished_reason=\"stop\"} 1.0"), std::string::npos) << m;
}

TEST(Engine, PrefixCachingReusesBlocksAndKeepsTokens) {
  EngineOptions o;
  o.block_size = 4;
  o.kv_cache_bytes = 16LL << 20;
  Engine engine(tiny_model(), o);
  const auto in = make_request("A long shared prefix that spans several KV blocks of four tokens each.", 12);
  const auto first = collect(*engine.submit(in));
  const uint64_t hits0 = engine.metrics().prefix_hits.load();
  const auto second = collect(*engine.submit(in));
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, reference(in));
  EXPECT_GT(engine.metrics().prefix_hits.load(), hits0);
}

// Two 16-token blocks whose keys collide under the old 64-bit FNV-1a block hash (found by lattice
// reduction; old_fnv_block_key below is that hash, kept here only to show the collision is real).
const std::vector<int32_t> kCollideA = {66, 6, 6, 1, 32, 0, 0, 4, 242, 12, 7, 30, 61, 28, 4, 6};
const std::vector<int32_t> kCollideB = {67, 0, 0, 3, 35, 1, 7, 9, 15, 0, 1, 41, 9, 33, 0, 0};

uint64_t old_fnv_block_key(const std::vector<int32_t>& tokens) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  mix(0);  // parent
  mix(0);  // extra (no image)
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

TEST(Engine, PrefixCacheNeverSharesBlocksOfDifferentTokens) {
  ASSERT_NE(kCollideA, kCollideB);
  ASSERT_EQ(old_fnv_block_key(kCollideA), old_fnv_block_key(kCollideB));
  EngineOptions o;
  o.block_size = 16;
  o.kv_cache_bytes = 16LL << 20;
  Engine engine(tiny_model(), o);
  auto request = [&](const std::vector<int32_t>& block) {
    RequestInput in;
    in.prompt_ids = block;
    in.prompt_ids.insert(in.prompt_ids.end(), {40, 41, 42});
    in.decode.max_tokens = 8;
    in.decode.ignore_eos = true;
    in.decode.sampling.temperature = 0;
    return in;
  };
  const auto a = request(kCollideA), b = request(kCollideB);
  auto sa = engine.submit(a);
  EXPECT_EQ(collect(*sa), reference(a));
  const uint64_t hits0 = engine.metrics().prefix_hits.load();
  auto sb = engine.submit(b);
  EXPECT_EQ(collect(*sb), reference(b));
  EXPECT_EQ(sb->times().cached_tokens, 0) << "B reused A's KV block";
  EXPECT_EQ(engine.metrics().prefix_hits.load(), hits0);
  // The same block again is still a hit.
  auto sa2 = engine.submit(a);
  EXPECT_EQ(collect(*sa2), reference(a));
  EXPECT_EQ(sa2->times().cached_tokens, 16);
}

TEST(Engine, PrefixCacheKeysImageBlocksByTheirPixels) {
  // Two pages of the same size give the same prompt ids; only the blocks before the image may be
  // shared, the blocks holding image tokens are keyed by the pixels.
  EngineOptions o;
  o.block_size = 4;
  o.kv_cache_bytes = 16LL << 20;
  Engine engine(tiny_model(), o);
  const auto& m = tiny_model();
  io::Image a = io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png");
  io::Image b = a;
  for (size_t i = 0; i < b.rgb.size() / 4; ++i) b.rgb[i] = static_cast<uint8_t>(255 - b.rgb[i]);
  const auto msgs = model::LightOnOcr::make_messages(nullptr, nullptr, 1);
  auto request = [&](const io::Image& img, model::Prompt* p) {
    *p = m.build_prompt(msgs, {img});
    RequestInput in;
    in.prompt_ids = p->ids;
    in.images = p->images;
    in.decode.max_tokens = 6;
    in.decode.sampling.temperature = 0;
    return in;
  };
  model::Prompt pa, pb;
  const RequestInput ra = request(a, &pa), rb = request(b, &pb);
  ASSERT_EQ(ra.prompt_ids, rb.prompt_ids);
  const int64_t first_image =
      std::find(ra.prompt_ids.begin(), ra.prompt_ids.end(), m.config().image_token_id) - ra.prompt_ids.begin();
  DecodeParams go;
  go.max_tokens = 6;
  go.sampling.temperature = 0;
  auto sa = engine.submit(ra);
  EXPECT_EQ(collect(*sa), generate(m, pa, go).tokens);
  auto sb = engine.submit(rb);
  EXPECT_EQ(collect(*sb), generate(m, pb, go).tokens);
  EXPECT_EQ(sb->times().cached_tokens, first_image / 4 * 4) << "only the text blocks before the image are shared";
  auto sa2 = engine.submit(ra);
  EXPECT_EQ(collect(*sa2), generate(m, pa, go).tokens);
  EXPECT_EQ(sa2->times().cached_tokens, static_cast<int64_t>(ra.prompt_ids.size() - 1) / 4 * 4);
}

// The final event of a stream: its finish reason and error message.
std::pair<std::string, std::string> final_event(RequestStream& s) {
  for (;;) {
    auto e = s.next(30s);
    if (!e) return {"(timed out)", ""};
    if (e->finished) return {finish_reason_name(e->finish_reason), e->error};
  }
}

TEST(Engine, AFailedStepEndsItsRequestsAndTheEngineGoesOn) {
  EngineOptions o;
  o.max_num_seqs = 2;
  o.kv_cache_bytes = 16LL << 20;
  o.debug_fail_step = 3;  // a.prefill + b.prefill together, then decodes: step 3 holds a and b
  Engine engine(tiny_model(), o);
  auto long_req = make_request("Hello, how are you?", 30);
  long_req.decode.ignore_eos = true;
  auto a = engine.submit(long_req);
  auto b = engine.submit(long_req);
  auto waiting_req = make_request("Bonjour tout le monde", 12);
  auto c = engine.submit(waiting_req);  // max_num_seqs 2: waits, not in the failing step
  const auto [ra, ea] = final_event(*a);
  const auto [rb, eb] = final_event(*b);
  EXPECT_EQ(ra, "error");
  EXPECT_EQ(rb, "error");
  EXPECT_NE(ea.find("internal error in the engine: injected fault (--debug-fail-step 3)"), std::string::npos) << ea;
  // The request that was not in the step, and a later one, are served as if nothing happened.
  EXPECT_EQ(collect(*c), reference(waiting_req));
  auto later = make_request("The future of AI is", 16);
  EXPECT_EQ(collect(*engine.submit(later)), reference(later));
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
  const std::string m = engine.metrics().render("tiny");
  EXPECT_NE(m.find("finished_reason=\"error\"} 2.0"), std::string::npos) << m;
}

// Both ways of encoding: in the vision lane (runtime/vision_lane.h; where this machine has 2+
// threads) and a few layers inside each step.
class EngineVision : public testing::TestWithParam<bool> {
 protected:
  EngineOptions options() const {
    EngineOptions o;
    o.vision_lane = GetParam();
    return o;
  }
  void expect_lane(const Engine& e) const {
    const int threads = ThreadPool::global().size();
    EXPECT_EQ(e.vision_lane_threads(), GetParam() && threads >= 2 ? threads / 2 : 0);
  }
};
INSTANTIATE_TEST_SUITE_P(Lane, EngineVision, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "lane" : "in_step"; });

TEST_P(EngineVision, AFailedVisionEncodingEndsOnlyThatRequest) {
  EngineOptions o = options();
  o.debug_fail_vision = 1;
  Engine engine(tiny_model(), o);
  expect_lane(engine);
  const auto& m = tiny_model();
  const model::Prompt p = small_page_prompt();
  const RequestInput img = page_request(p, 8);
  auto text_req = make_request("The future of AI is", 20);
  auto ts = engine.submit(text_req);
  auto bad = engine.submit(img);
  const auto [reason, error] = final_event(*bad);
  EXPECT_EQ(reason, "error");
  EXPECT_NE(error.find("vision encoder: injected fault (--debug-fail-vision 1)"), std::string::npos) << error;
  EXPECT_EQ(collect(*ts), reference(text_req));
  // The next image request (the second encoding) is served.
  DecodeParams go;
  go.max_tokens = 8;
  go.sampling.temperature = 0;
  EXPECT_EQ(collect(*engine.submit(img)), generate(m, p, go).tokens);
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

TEST_P(EngineVision, ImageRequestsMatchSingleSequenceGeneration) {
  // A page's vision encoding is spread over several steps (tiny budget), or runs in the lane, while
  // text requests decode: the tokens are those of one sequence alone (the encoder's results do not
  // depend on the threads it runs on).
  EngineOptions o = options();
  o.vision_budget = 8;
  o.max_num_batched_tokens = 16;
  Engine engine(tiny_model(), o);
  expect_lane(engine);
  const auto& m = tiny_model();
  const std::string dir = std::string(LOCR_FIXTURES_DIR) + "/images/";
  std::vector<std::pair<RequestInput, model::Prompt>> reqs;
  for (const char* img : {"page_small.png", "rgba.png"}) {
    const std::string text = "Describe";
    const auto msgs = model::LightOnOcr::make_messages(nullptr, img[0] == 'p' ? nullptr : &text, 1);
    model::Prompt p = m.build_prompt(msgs, {io::load_image(dir + img)});
    RequestInput in;
    in.prompt_ids = p.ids;
    in.images = p.images;
    in.decode.max_tokens = 10;
    in.decode.sampling.temperature = 0;
    reqs.push_back({in, p});
  }
  auto text_req = make_request("The future of AI is", 20);
  auto ts = engine.submit(text_req);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (auto& r : reqs) streams.push_back(engine.submit(r.first));
  EXPECT_EQ(collect(*ts), reference(text_req));
  for (size_t i = 0; i < reqs.size(); ++i) {
    DecodeParams go;
    go.max_tokens = 10;
    go.sampling.temperature = 0;
    EXPECT_EQ(collect(*streams[i]), generate(m, reqs[i].second, go).tokens) << "image request " << i;
  }
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

// A request cancelled while its page is being encoded ends ("abort"), gives back its blocks, and
// the engine serves the next page; several pages in flight at once all complete, each as alone.
TEST_P(EngineVision, CancelWhileEncodingAndManyPagesInFlight) {
  Engine engine(tiny_model(), options());
  const model::Prompt p = small_page_prompt();
  auto doomed = engine.submit(page_request(p, 50));
  doomed->cancel();
  std::string reason;
  collect(*doomed, &reason);
  EXPECT_EQ(reason, "abort");
  DecodeParams go;
  go.max_tokens = 12;
  go.sampling.temperature = 0;
  const std::vector<int32_t> alone = generate(tiny_model(), p, go).tokens;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 5; ++i) streams.push_back(engine.submit(page_request(p, 12)));
  auto text_req = make_request("Bonjour tout le monde", 30);
  auto ts = engine.submit(text_req);
  for (auto& st : streams) EXPECT_EQ(collect(*st), alone);
  EXPECT_EQ(collect(*ts), reference(text_req));
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
  // The encodings' time is counted (in the lane it overlaps the steps' prefill and decode time).
  const std::string m = engine.metrics().render("tiny");
  const std::string key = "locr:engine_busy_seconds_total{model_name=\"tiny\",phase=\"vision\"} ";
  const size_t at = m.find(key);
  ASSERT_NE(at, std::string::npos) << m;
  EXPECT_GT(std::stod(m.substr(at + key.size())), 0.0);
}

std::vector<int32_t> collect_event_reasons(RequestStream& s, std::string* reason, std::string* stop_reason) {
  std::vector<int32_t> out;
  for (;;) {
    auto e = s.next(60s);
    if (!e) return out;
    if (e->token >= 0) out.push_back(e->token);
    if (e->finished) {
      *reason = finish_reason_name(e->finish_reason);
      *stop_reason = e->stop_reason.to_string();
      return out;
    }
  }
}

TEST(Engine, LoopGuardStopsADegenerateGreedyLoop) {
  // Greedy decoding of this random tiny model settles into a cycle (seen in the reference run:
  // "... 245 245 245 ..."); the guard must stop it with stop_reason "repetition".
  EngineOptions o;
  Engine engine(tiny_model(), o);
  auto in = make_request("Hello, how are you?", 4000);
  in.decode.ignore_eos = true;
  std::string reason, stop_reason;
  const auto got = collect_event_reasons(*engine.submit(in), &reason, &stop_reason);
  EXPECT_EQ(reason, "stop");
  EXPECT_EQ(stop_reason, "repetition");
  EXPECT_LT(got.size(), 4000u);
  EXPECT_EQ(engine.metrics().repetition_stops.load(), 1u);
  // Switched off, the same request runs to max_tokens.
  in.decode.loop_guard.enabled = false;
  in.decode.max_tokens = 1200;
  const auto full = collect_event_reasons(*engine.submit(in), &reason, &stop_reason);
  EXPECT_EQ(reason, "length");
  EXPECT_EQ(full.size(), 1200u);
}

TEST(Engine, StopsAtMaxTokensAndStopTokenIds) {
  EngineOptions o;
  Engine engine(tiny_model(), o);
  auto in = make_request("Hello", 5);
  in.decode.ignore_eos = true;
  std::string reason;
  EXPECT_EQ(collect(*engine.submit(in), &reason).size(), 5u);
  EXPECT_EQ(reason, "length");
  const auto ref = reference(in);
  in.decode.stop_token_ids = {ref[2]};
  in.decode.max_tokens = 50;
  const auto got = collect(*engine.submit(in), &reason);
  EXPECT_EQ(reason, "stop");
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), ref[2]);
}

// The model's log-probability of `tok` after `ids` (a fresh single-sequence prefill).
double model_logprob(const std::vector<int32_t>& ids, int32_t tok) {
  model::Prompt p;
  p.ids = ids;
  DecodeParams go;
  go.max_tokens = 1;
  go.sampling.temperature = 0;
  double lp = 0;
  GenerateHooks hooks;
  hooks.on_prompt_logits = [&](const float* logits, int64_t V) {
    double mx = -1e30, sum = 0;
    for (int64_t i = 0; i < V; ++i) mx = std::max<double>(mx, logits[i]);
    for (int64_t i = 0; i < V; ++i) sum += std::exp(logits[i] - mx);
    lp = logits[tok] - mx - std::log(sum);
  };
  generate(tiny_model(), p, go, hooks);
  return lp;
}

TEST(Engine, ForcedDecodeEmitsTheGivenIdsThenEosWithTheModelsLogprobs) {
  EngineOptions o;
  o.max_num_batched_tokens = 8;  // chunked prefill: the forced path must not care
  Engine engine(tiny_model(), o);
  auto in = make_request("force me", 50);
  const auto greedy = reference(in);
  // Tokens greedy decoding would not choose (so a sampled token cannot pass for a forced one).
  std::vector<int32_t> forced;
  for (int32_t t : {17, 300, 5, 641, 17, 99}) {
    ASSERT_NE(t, in.decode.eos_ids.front());
    forced.push_back(t);
  }
  ASSERT_NE(greedy.front(), forced.front());
  in.decode.forced_ids = forced;
  in.decode.logprobs = 0;
  in.decode.ignore_eos = true;  // a forced output still ends at its EOS
  auto s = engine.submit(in);
  std::vector<int32_t> got;
  std::vector<float> lps;
  std::string reason;
  for (;;) {
    auto e = s->next(30s);
    ASSERT_TRUE(e.has_value()) << "timed out";
    if (e->token >= 0) {
      got.push_back(e->token);
      lps.push_back(e->logprob);
    }
    if (e->finished) {
      reason = finish_reason_name(e->finish_reason);
      break;
    }
  }
  std::vector<int32_t> want = forced;
  want.push_back(in.decode.eos_ids.front());
  EXPECT_EQ(got, want);
  EXPECT_EQ(reason, "stop");
  ASSERT_EQ(lps.size(), want.size());
  std::vector<int32_t> ctx = in.prompt_ids;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_NEAR(lps[k], model_logprob(ctx, want[k]), 1e-3) << "token " << k;
    EXPECT_LT(lps[k], 0.0f);
    ctx.push_back(want[k]);
  }
  // max_tokens still bounds it ("length"); without an EOS id it stops after the forced ids.
  in.decode.max_tokens = 3;
  EXPECT_EQ(collect(*engine.submit(in), &reason), std::vector<int32_t>(forced.begin(), forced.begin() + 3));
  EXPECT_EQ(reason, "length");
  in.decode.max_tokens = 50;
  in.decode.eos_ids.clear();
  EXPECT_EQ(collect(*engine.submit(in), &reason), forced);
  EXPECT_EQ(reason, "stop");
  // A repetitive forced text (the loop guard would stop it) comes out whole.
  std::vector<int32_t> cycle;
  for (int i = 0; i < 700; ++i) cycle.push_back(i % 2 ? 17 : 300);
  in.decode.forced_ids = cycle;
  in.decode.max_tokens = 1000;
  in.decode.logprobs = -1;
  ASSERT_TRUE(in.decode.loop_guard.enabled);
  EXPECT_EQ(collect(*engine.submit(in), &reason), cycle);
  EXPECT_EQ(reason, "stop");
  EXPECT_EQ(engine.metrics().repetition_stops.load(), 0u);
  // The engine thread publishes the free count at the end of the step that finished the request.
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

// The value of the sample line that starts with `key` + " " in Prometheus text, or -1.
double sample(const std::string& text, const std::string& key) {
  const size_t at = text.find("\n" + key + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size() + 2));
}

TEST(Engine, MetricsRecordPhasesAndStepTokensAsVllm) {
  EngineOptions o;
  o.max_num_batched_tokens = 8;  // prompts span several prefill chunks
  o.enable_prefix_caching = false;
  Engine engine(tiny_model(), o);
  RequestInput a = make_request("metrics please", 5), b = make_request("and again, longer this time", 7);
  a.decode.ignore_eos = b.decode.ignore_eos = true;
  const int64_t prompt = static_cast<int64_t>(a.prompt_ids.size() + b.prompt_ids.size());
  auto sa = engine.submit(a), sb = engine.submit(b);
  EXPECT_EQ(collect(*sa).size(), 5u);
  EXPECT_EQ(collect(*sb).size(), 7u);
  const std::string m = engine.metrics().render("tiny");
  const std::string l = "{model_name=\"tiny\"}";
  for (const char* h : {"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
                        "vllm:request_inference_time_seconds", "vllm:request_params_max_tokens"})
    EXPECT_EQ(sample(m, std::string(h) + "_count" + l), 2.0) << h << "\n" << m;
  EXPECT_EQ(sample(m, "vllm:request_params_max_tokens_sum" + l), 12.0);
  EXPECT_GE(sample(m, "vllm:request_inference_time_seconds_sum" + l),
            sample(m, "vllm:request_decode_time_seconds_sum" + l));
  EXPECT_EQ(sample(m, "vllm:prompt_tokens_total" + l), static_cast<double>(prompt));
  // Every step's prompt tokens computed plus tokens generated, summed over the steps.
  EXPECT_EQ(sample(m, "vllm:iteration_tokens_total_sum" + l), static_cast<double>(prompt + 12));
  EXPECT_GE(sample(m, "vllm:iteration_tokens_total_count" + l), static_cast<double>(prompt / 8 + 6));
  EXPECT_NE(m.find("vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"False\""),
            std::string::npos);
  EXPECT_NE(m.find(",num_gpu_blocks=\"" + std::to_string(engine.kv_blocks_total()) + "\""), std::string::npos);
  // The engine's time split: text requests spend it in prefill and decode steps, none in vision.
  const std::string busy = "locr:engine_busy_seconds_total{model_name=\"tiny\",phase=\"";
  EXPECT_GT(sample(m, busy + "prefill\"}"), 0.0) << m;
  EXPECT_GT(sample(m, busy + "decode\"}"), 0.0) << m;
  EXPECT_EQ(sample(m, busy + "vision\"}"), 0.0) << m;
  EXPECT_LE(sample(m, busy + "prefill\"}") + sample(m, busy + "decode\"}"),
            sample(m, "vllm:request_inference_time_seconds_sum" + l));
}

TEST(Engine, MetricsSplitTheEngineTimeOfAPageIntoVisionPrefillAndDecode) {
  Engine engine(tiny_model(), EngineOptions{});
  RequestInput img = page_request(small_page_prompt(), 6);
  img.decode.ignore_eos = true;
  EXPECT_EQ(collect(*engine.submit(img)).size(), 6u);
  const std::string text = engine.metrics().render("tiny");
  const std::string busy = "locr:engine_busy_seconds_total{model_name=\"tiny\",phase=\"";
  const double vision = sample(text, busy + "vision\"}");
  EXPECT_GT(vision, 0.0) << text;
  EXPECT_GT(sample(text, busy + "prefill\"}"), 0.0) << text;
  EXPECT_GT(sample(text, busy + "decode\"}"), 0.0) << text;
  // One request encoded alone: the engine's vision time is that request's.
  EXPECT_DOUBLE_EQ(vision, sample(text, "locr:vision_encode_seconds_sum{model_name=\"tiny\"}"));
}

// What the server's queue-wait estimate reads (server/queue_wait.h): the count of unfinished
// requests drops before a request's final event is seen (the gauges follow a step later), and the
// recent service time is kept from requests that stopped or ran to length, not from aborts.
TEST(Engine, UnfinishedCountAndServiceTimeForTheQueueEstimate) {
  EngineOptions o;
  o.max_num_seqs = 1;
  Engine engine(tiny_model(), o);
  EXPECT_EQ(engine.metrics().num_unfinished.load(), 0);
  EXPECT_EQ(engine.metrics().recent_service_s.load(), 0.0);
  RequestInput a = make_request("first", 40), b = make_request("second", 40);
  a.decode.ignore_eos = b.decode.ignore_eos = true;
  auto sa = engine.submit(a), sb = engine.submit(b);
  EXPECT_EQ(engine.metrics().num_unfinished.load(), 2);
  EXPECT_EQ(collect(*sa).size(), 40u);
  EXPECT_LE(engine.metrics().num_unfinished.load(), 1);  // at once, whatever the gauges say yet
  EXPECT_EQ(collect(*sb).size(), 40u);
  EXPECT_EQ(engine.metrics().num_unfinished.load(), 0);
  const double service = engine.metrics().recent_service_s.load();
  EXPECT_GT(service, 0.0);
  // An aborted request leaves the service time alone.
  RequestInput c = make_request("third", 2000);
  c.decode.ignore_eos = true;
  auto sc = engine.submit(c);
  ASSERT_TRUE(sc->next(30s).has_value());
  sc->cancel();
  std::string reason;
  collect(*sc, &reason);
  EXPECT_EQ(reason, "abort");
  EXPECT_EQ(engine.metrics().num_unfinished.load(), 0);
  EXPECT_EQ(engine.metrics().recent_service_s.load(), service);
}

}  // namespace
}  // namespace locr::runtime
