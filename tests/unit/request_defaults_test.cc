// One request path, first step: the defaults every front end starts from (request_defaults of
// generation_config.json), the penalty rules, and the CLI loop (runtime::generate) giving the
// serving engine's tokens for the same penalized greedy request.
#include <gtest/gtest.h>

#include <chrono>

#include "model/lighton_ocr.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/request_defaults.h"

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
  const GenerateOptions o = generate_options(d, 123);
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

std::vector<int32_t> engine_tokens(const RequestInput& in) {
  EngineOptions o;
  o.kv_cache_bytes = 16LL << 20;
  Engine engine(tiny(), o);
  auto s = engine.submit(in);
  std::vector<int32_t> out;
  for (;;) {
    auto e = s->next(30s);
    if (!e) {
      ADD_FAILURE() << "engine timed out";
      break;
    }
    if (e->token >= 0) out.push_back(e->token);
    if (e->finished) break;
  }
  engine.shutdown(false);
  return out;
}

TEST(RequestPath, GenerateAppliesTheEnginesPenalties) {
  const model::LightOnOcr& m = tiny();
  const std::string text = "Write the word banana many times: banana banana banana";
  model::Prompt p = m.build_prompt(model::LightOnOcr::make_messages(nullptr, &text, 0), {});
  RequestDefaults d = request_defaults(m.generation_config());
  d.sampling.temperature = 0;
  d.loop_guard.enabled = false;
  std::vector<int32_t> plain;
  for (const Penalties pen : {Penalties{}, Penalties{1.8f, 0, 0}, Penalties{1, 1.5f, 0}, Penalties{1, 0, 1.5f}}) {
    SCOPED_TRACE(testing::Message() << pen.repetition << " " << pen.presence << " " << pen.frequency);
    d.penalties = pen;
    GenerateOptions go = generate_options(d, 24);
    go.max_tokens = 24;
    const std::vector<int32_t> cli = generate(m, p, go).tokens;
    RequestInput in;
    in.prompt_ids = p.ids;
    in.sampling = d.sampling;
    in.max_tokens = 24;
    in.eos_ids = d.eos_ids;
    in.loop_guard = d.loop_guard;
    in.repetition_penalty = pen.repetition;
    in.presence_penalty = pen.presence;
    in.frequency_penalty = pen.frequency;
    EXPECT_EQ(cli, engine_tokens(in));
    if (!pen.any()) plain = cli;
    else EXPECT_NE(cli, plain) << "the penalty does not change the tiny model's greedy tokens";
  }
}

}  // namespace
}  // namespace locr::runtime
