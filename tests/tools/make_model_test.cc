#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

#include "io/safetensors.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/generate.h"
#include "test_util.h"
#include "toolkit/synth_model.h"
#include "toolkit/synth_tokenizer.h"

namespace locr::toolkit {
namespace {

TEST(MakeModel, RealPresetHasTheOfficialParameterCount) {
  // 1,005,647,872 parameters (model-spec §9), tied LM head.
  EXPECT_EQ(synth_param_count(synth_preset("lightonocr-2-1b")), 1005647872);
  const auto specs = synth_weight_specs(synth_preset("lightonocr-2-1b"));
  std::set<std::string> names;
  for (const auto& s : specs) names.insert(s.name);
  EXPECT_TRUE(names.count("model.language_model.embed_tokens.weight"));
  EXPECT_TRUE(names.count("model.vision_encoder.transformer.layers.23.feed_forward.down_proj.weight"));
  EXPECT_TRUE(names.count("model.language_model.layers.27.self_attn.k_norm.weight"));
  EXPECT_FALSE(names.count("lm_head.weight"));
  EXPECT_EQ(specs.size(), 2u + 24 * 9 + 4 + 1 + 28 * 11 + 1);
  EXPECT_THROW(synth_preset("huge"), Error);
}

TEST(MakeModel, WeightsAreDeterministicWithSaneScale) {
  const auto specs = synth_weight_specs(synth_preset("tiny"));
  for (const auto& s : specs) {
    const int64_t n = std::min<int64_t>(4096, s.shape[0] * (s.shape.size() > 1 ? s.shape[1] : 1));
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = synth_weight_value(5, s, i);
      ASSERT_EQ(v, synth_weight_value(5, s, i));
      sum += v, sq += v * v;
    }
    const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    if (s.kind == WeightKind::kNorm) {
      EXPECT_NEAR(mean, 1.0, 0.05) << s.name;
    } else {
      const double want = 1.0 / std::sqrt(static_cast<double>(s.kind == WeightKind::kEmbedding ? s.shape[1] : s.fan_in));
      EXPECT_NEAR(mean, 0.0, 4 * want / std::sqrt(static_cast<double>(n))) << s.name;
      EXPECT_NEAR(sd / want, 1.0, 0.15) << s.name;
    }
  }
  // A different seed gives different weights.
  EXPECT_NE(synth_weight_value(5, specs[0], 0), synth_weight_value(6, specs[0], 0));
}

TEST(MakeModel, SyntheticBpeIsConsistent) {
  const SynthBpe bpe = make_synthetic_bpe(151643);
  ASSERT_EQ(bpe.vocab.size(), 151643u);
  EXPECT_EQ(bpe.merges.size(), 151643u - 256);
  std::unordered_set<std::string> vocab(bpe.vocab.begin(), bpe.vocab.end());
  EXPECT_EQ(vocab.size(), bpe.vocab.size());  // unique
  for (size_t i = 0; i < bpe.merges.size(); ++i) {
    const auto& [a, b] = bpe.merges[i];
    ASSERT_TRUE(vocab.count(a) && vocab.count(b)) << i;
    ASSERT_EQ(bpe.vocab[256 + i], a + b) << i;  // merge i creates token 256 + i
  }
  EXPECT_EQ(bpe.vocab[0], "!");
  EXPECT_EQ(qwen_added_tokens().size(), 26u);
  EXPECT_EQ(qwen_added_tokens()[12].content, "<|image_pad|>");  // 151643 + 12 = 151655
}

TEST(MakeModel, TinyModelLoadsAndGeneratesInLocr) {
  const std::string dir = test::tiny_model_dir();
  model::LoadOptions lo;
  lo.backend = "cpu-f32";
  auto m = model::LightOnOcr::load(dir, lo);
  EXPECT_EQ(m->config().image_token_id, 151655);
  EXPECT_EQ(m->config().text.vocab_size, 151936);
  const std::string prompt_text = "The future of AI is";
  const auto messages = model::LightOnOcr::make_messages(nullptr, &prompt_text, 0);
  const model::Prompt p = m->build_prompt(messages, {});
  ASSERT_GE(p.ids.size(), 10u);
  EXPECT_EQ(p.ids[0], 151644);  // <|im_start|>
  EXPECT_EQ(m->tokenizer().decode(m->tokenizer().encode("Hello, how are you?"), false), "Hello, how are you?");
  runtime::DecodeParams go;
  go.max_tokens = 8;
  go.sampling.temperature = 0;
  std::vector<float> logits;
  runtime::GenerateHooks hooks;
  hooks.on_prompt_logits = [&](const float* l, int64_t v) { logits.assign(l, l + v); };
  const auto r = runtime::generate(*m, p, go, hooks);
  EXPECT_EQ(r.tokens.size(), 8u);
  // Sane logits: finite, spread neither collapsed nor exploding.
  double sq = 0;
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    sq += v * v;
  }
  const double rms = std::sqrt(sq / logits.size());
  EXPECT_GT(rms, 0.1);
  EXPECT_LT(rms, 20.0);
  // Image path through the real CLI.
  const auto g = test::run_cmd(std::string(LOCR_BIN) + " generate --model " + dir + " --image " + LOCR_FIXTURES_DIR +
                               "/images/page_small.png --max-tokens 4 --temperature 0");
  EXPECT_EQ(g.status, 0);
}

TEST(MakeModel, FilesAreHubShaped) {
  const std::string dir = test::tiny_model_dir();
  const auto cfg = nlohmann::json::parse(test::read_text(dir + "/config.json"));
  EXPECT_EQ(cfg["model_type"], "mistral3");
  EXPECT_EQ(cfg["image_token_id"], 151655);
  EXPECT_EQ(cfg["text_config"]["tie_word_embeddings"], true);
  const auto gen = nlohmann::json::parse(test::read_text(dir + "/generation_config.json"));
  EXPECT_EQ(gen["do_sample"], true);
  EXPECT_EQ(gen["eos_token_id"], nlohmann::json::array({151645, 151643}));
  EXPECT_DOUBLE_EQ(gen["temperature"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(gen["top_p"].get<double>(), 0.9);
  const auto tok = nlohmann::json::parse(test::read_text(dir + "/tokenizer.json"));
  EXPECT_EQ(tok["added_tokens"][0]["id"], 151643);
  EXPECT_EQ(tok["added_tokens"][25]["content"], "</think>");
  EXPECT_EQ(tok["model"]["vocab"].size(), 151643u);
  EXPECT_EQ(test::read_text(dir + "/chat_template.jinja"), lightonocr_chat_template());
  const auto st = io::SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_EQ(st->metadata().at("format"), "pt");
  EXPECT_EQ(st->tensors().at("model.language_model.embed_tokens.weight").dtype, DType::kBF16);
  // Same seed, same bytes.
  test::TempDir t;
  ASSERT_EQ(std::system((std::string(LOCR_BIN) + " make-model --preset tiny --seed 7 --quiet --out " + t.path() + " >&2").c_str()), 0);
  EXPECT_EQ(test::read_text(t / "model.safetensors"), test::read_text(dir + "/model.safetensors"));
  EXPECT_EQ(test::read_text(t / "tokenizer.json"), test::read_text(dir + "/tokenizer.json"));
}

}  // namespace
}  // namespace locr::toolkit
