// The one request path (runtime/request_path.h): the defaults every front end starts from
// (request_defaults of generation_config.json), the penalty rules, max_tokens against the context,
// prompts from image sizes equal to prompts from the images, and the same greedy request — with
// penalties and a stop string — giving the same tokens and text through runtime::generate (the
// `locr generate` loop) and the serving Engine (`locr serve`, `locr ocr --model`).
#include <gtest/gtest.h>

#include <chrono>

#include "io/image.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/request_path.h"

namespace locr::runtime {
namespace {

using namespace std::chrono_literals;

TEST(RequestDefaults, FromGenerationConfig) {
  model::GenerationConfig g;
  g.do_sample = true;
  g.temperature = 0.2f;
  g.top_p = 0.9f;
  g.top_k = 40;
  g.repetition_penalty = 1.1f;
  g.max_new_tokens = 77;
  g.eos_token_ids = {5, 7};
  RequestDefaults d = request_defaults(g);
  EXPECT_FLOAT_EQ(d.sampling.temperature, 0.2f);
  EXPECT_FLOAT_EQ(d.sampling.top_p, 0.9f);
  EXPECT_EQ(d.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(d.penalties.repetition, 1.1f);
  EXPECT_EQ(d.penalties.presence, 0.0f);
  EXPECT_EQ(d.max_new_tokens, 77);
  EXPECT_EQ(d.eos_ids, (std::vector<int32_t>{5, 7}));
  EXPECT_TRUE(d.loop_guard.enabled);
  g.do_sample = false;
  g.max_new_tokens = -1;
  d = request_defaults(g);
  EXPECT_EQ(d.sampling.temperature, 0.0f);  // greedy without do_sample
  EXPECT_EQ(d.max_new_tokens, 0);
  const DecodeParams o = d.decode(123);
  EXPECT_EQ(o.max_tokens, 123);
  EXPECT_FLOAT_EQ(o.penalties.repetition, 1.1f);
  EXPECT_EQ(o.eos_ids, (std::vector<int32_t>{5, 7}));
}

TEST(ApplyPenalties, TransformersRepetitionThenOpenAiPresenceFrequency) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 4.0f};
  // Token 0 twice in the context: penalized once. Output counts: token 3 twice.
  apply_penalties({2.0f, 0.5f, 0.25f}, {0, 1, 0, 3, 3}, {{3, 2}}, l.data(), 4);
  EXPECT_FLOAT_EQ(l[0], 1.0f);                  // 2 / 2
  EXPECT_FLOAT_EQ(l[1], -4.0f);                 // -2 * 2
  EXPECT_FLOAT_EQ(l[2], 1.0f);                  // not seen
  EXPECT_FLOAT_EQ(l[3], 4.0f / 2 - 0.5f - 0.5f);  // repetition, then presence + 2 * frequency
  std::vector<float> same = {1.0f, 2.0f};
  apply_penalties({}, {0, 1}, {{0, 3}}, same.data(), 2);  // all off: untouched
  EXPECT_EQ(same, (std::vector<float>{1.0f, 2.0f}));
}

const model::LightOnOcr& tiny() {
  static std::unique_ptr<model::LightOnOcr> m = [] {
    model::LoadOptions lo;
    lo.backend = "cpu-f32";
    return model::LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", lo);
  }();
  return *m;
}

io::Image page() { return io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png"); }

TEST(RequestPath, MaxTokensAgainstTheContext) {
  RequestDefaults d;
  d.max_new_tokens = 30;
  RequestPathOptions o;
  o.max_model_len = 100;
  o.fallback_max_tokens = 20;
  const RequestPath path(tiny(), d, o);
  EXPECT_EQ(path.max_tokens(50, 40), 40);  // the request's
  EXPECT_EQ(path.max_tokens(50, 80), 50);  // ... capped by the context
  EXPECT_EQ(path.max_tokens(50, 0), 30);   // generation_config's max_new_tokens
  EXPECT_EQ(path.max_tokens(90, 0), 10);
  const RequestPath fallback(tiny(), RequestDefaults{}, o);
  EXPECT_EQ(fallback.max_tokens(50, 0), 20);  // neither: the front end's fallback
  o.fallback_max_tokens = 0;
  const RequestPath rest(tiny(), RequestDefaults{}, o);
  EXPECT_EQ(rest.max_tokens(50, 0), 50);  // none at all: the rest of the context
  EXPECT_EQ(rest.max_tokens(99, 0), 1);
  try {
    rest.max_tokens(100, 0);
    FAIL() << "a prompt filling the context was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  }
  // Without a length, the model's context.
  EXPECT_EQ(RequestPath(tiny(), {}).max_model_len(), tiny().config().text.max_position_embeddings);
}

TEST(RequestPath, PromptIdsFromImageSizesAreThePromptOfTheImages) {
  const RequestPath path(tiny(), request_defaults(tiny().generation_config()));
  const io::Image img = page();
  for (bool grounding : {false, true}) {
    const nlohmann::json messages = RequestPath::ocr_messages(grounding);
    const model::Prompt full = path.prompt(messages, {img});
    const model::RenderedChat chat = tiny().render_chat(messages);
    EXPECT_EQ(path.prompt_ids(chat, {{img.height, img.width}}), full.ids);
    EXPECT_EQ(full.text.find("grounding") != std::string::npos, grounding);
    EXPECT_THROW(path.prompt_ids(chat, {}), Error);  // one placeholder, no size
  }
}

TEST(RequestPath, DecodeStartsFromTheDefaultsAndTheLoopGuardFollowsTheRequest) {
  RequestDefaults d = request_defaults(tiny().generation_config());
  d.penalties.presence = 0.5f;
  d.loop_guard.window = 64;
  RequestPathOptions o;
  o.forced_ids = {1, 2};
  const RequestPath path(tiny(), d, o);
  const DecodeParams p = path.decode(10, 7);
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_EQ(p.eos_ids, d.eos_ids);
  EXPECT_FLOAT_EQ(p.sampling.temperature, d.sampling.temperature);
  EXPECT_FLOAT_EQ(p.penalties.presence, 0.5f);
  EXPECT_EQ(p.forced_ids, o.forced_ids);
  EXPECT_EQ(p.loop_guard.window, 64);
  EXPECT_TRUE(path.loop_guard(std::nullopt, false).enabled);
  EXPECT_FALSE(path.loop_guard(std::nullopt, true).enabled);  // a fixed length (ignore_eos): off
  EXPECT_TRUE(path.loop_guard(true, true).enabled);           // unless the request says
  EXPECT_FALSE(path.loop_guard(false, false).enabled);
  EXPECT_EQ(path.loop_guard(true, true).window, 64);
}

// One request through runtime::generate, its text through a TextOutput in the on_token hook, as
// `locr generate` runs it.
struct RunResult {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason finish = FinishReason::kError;
  StopReason stop;
};

RunResult through_generate(const RequestPath& path, const model::Prompt& p, const DecodeParams& d,
                           const TextOptions& t) {
  RunResult r;
  TextOutput out = path.output(d, t);
  GenerateHooks hooks;
  hooks.on_token = [&](int32_t id) {
    r.text += out.push(id);
    return !out.stopped();
  };
  const GenerateResult g = generate(path.model(), p, d, hooks);
  r.text += out.push(-1, true);
  r.tokens = g.tokens;
  r.finish = g.finish_reason;
  r.stop = out.stopped() ? out.stop_reason() : g.stop_reason;
  return r;
}

// The same through the Engine, its events through a TextOutput that cancels the request at a stop
// string, as server/generation and `locr ocr --model` run it.
RunResult through_engine(Engine& engine, const RequestPath& path, const model::Prompt& p, const DecodeParams& d,
                   const TextOptions& t) {
  RunResult r;
  TextOutput out = path.output(d, t);
  RequestInput in;
  in.prompt_ids = p.ids;
  in.images = p.images;
  in.decode = d;
  auto s = engine.submit(in);
  for (;;) {
    auto e = s->next(60s);
    if (!e) {
      ADD_FAILURE() << "engine timed out";
      return r;
    }
    if (e->token >= 0) r.tokens.push_back(e->token);
    r.text += out.push(e->token, e->finished);
    if (out.stopped()) {
      s->cancel(FinishReason::kStop);
      r.finish = FinishReason::kStop;
      r.stop = out.stop_reason();
      return r;
    }
    if (e->finished) {
      r.finish = e->finish_reason;
      r.stop = e->stop_reason;
      return r;
    }
  }
}

TEST(RequestPath, GenerateAndEngineGiveTheSameTokensAndText) {
  const model::LightOnOcr& m = tiny();
  RequestDefaults d = request_defaults(m.generation_config());
  d.sampling.temperature = 0;  // greedy
  d.penalties = {1.3f, 0.25f, 0.5f};
  const RequestPath path(m, d);
  EngineOptions eo;
  eo.kv_cache_bytes = 32LL << 20;
  eo.max_num_batched_tokens = 64;  // chunked prefill of the image prompt
  Engine engine(m, eo);
  const std::string text = "Write the word banana many times: banana banana banana";
  const model::Prompt prompts[] = {path.prompt(model::LightOnOcr::make_messages(nullptr, &text, 0), {}),
                                   path.prompt(RequestPath::ocr_messages(false), {page()})};
  for (const model::Prompt& p : prompts) {
    SCOPED_TRACE(p.images.empty() ? "text prompt" : "page image");
    const DecodeParams dp = path.decode(static_cast<int64_t>(p.ids.size()), 40);
    const RunResult plain = through_generate(path, p, dp, {});
    const RunResult served = through_engine(engine, path, p, dp, {});
    EXPECT_EQ(plain.tokens, served.tokens);
    EXPECT_EQ(plain.text, served.text);
    EXPECT_EQ(plain.finish, served.finish);
    EXPECT_EQ(plain.stop, served.stop);
    // A stop string from the middle of that text: both end the text just before it, at the same token.
    ASSERT_GT(plain.text.size(), 12u) << plain.text;
    TextOptions t;
    t.stop = {plain.text.substr(plain.text.size() / 2, 3)};
    const size_t at = plain.text.find(t.stop[0]);
    const RunResult a = through_generate(path, p, dp, t);
    const RunResult b = through_engine(engine, path, p, dp, t);
    EXPECT_EQ(a.text, plain.text.substr(0, at));
    EXPECT_EQ(b.text, a.text);
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_LT(a.tokens.size(), plain.tokens.size());
    EXPECT_TRUE(std::equal(a.tokens.begin(), a.tokens.end(), plain.tokens.begin()));
    EXPECT_EQ(a.finish, FinishReason::kStop);
    EXPECT_EQ(a.stop, StopReason::string(t.stop[0]));
    EXPECT_EQ(b.stop, a.stop);
  }
  engine.shutdown(false);
}

TEST(RequestPath, GenerateAppliesTheEnginesPenalties) {
  const model::LightOnOcr& m = tiny();
  const std::string text = "Write the word banana many times: banana banana banana";
  RequestDefaults d = request_defaults(m.generation_config());
  d.sampling.temperature = 0;
  d.loop_guard.enabled = false;
  std::vector<int32_t> plain;
  EngineOptions eo;
  eo.kv_cache_bytes = 16LL << 20;
  Engine engine(m, eo);
  for (const Penalties pen : {Penalties{}, Penalties{1.8f, 0, 0}, Penalties{1, 1.5f, 0}, Penalties{1, 0, 1.5f}}) {
    SCOPED_TRACE(testing::Message() << pen.repetition << " " << pen.presence << " " << pen.frequency);
    d.penalties = pen;
    const RequestPath path(m, d);
    const model::Prompt p = path.prompt(model::LightOnOcr::make_messages(nullptr, &text, 0), {});
    const DecodeParams dp = path.decode(static_cast<int64_t>(p.ids.size()), 24);
    const std::vector<int32_t> cli = generate(m, p, dp).tokens;
    EXPECT_EQ(cli, through_engine(engine, path, p, dp, {}).tokens);
    if (!pen.any()) plain = cli;
    else EXPECT_NE(cli, plain) << "the penalty does not change the tiny model's greedy tokens";
  }
  engine.shutdown(false);
}

}  // namespace
}  // namespace locr::runtime
