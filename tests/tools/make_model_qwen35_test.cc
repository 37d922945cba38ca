// `locr make-model` for the Qwen3.5 family (LightOnOCR-3-0.8B / -4B, toolkit/synth_qwen35.h): the
// real presets' shapes and parameter counts, the weight init, the hub files, and the tiny preset
// loaded and run by model::qwen35::Model on the ref backend.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "io/image.h"
#include "io/safetensors.h"
#include "model/qwen35/model.h"
#include "model/workspace.h"
#include "test_util.h"
#include "toolkit/synth_qwen35.h"
#include "toolkit/synth_tokenizer.h"

namespace locr::toolkit {
namespace {

using nlohmann::json;

const std::string kQwen35Fixtures = std::string(LOCR_FIXTURES_DIR) + "/qwen35";

// The tiny model, made once per test process (through the library, seed 11).
const std::string& tiny_qwen35_dir() {
  static test::TempDir dir;
  static std::string path = [] {
    MakeModelOptions o;
    o.preset = "tiny-qwen35";
    o.seed = 11;
    o.out_dir = dir / "tiny-qwen35";
    make_model(o);
    return o.out_dir;
  }();
  return path;
}

std::set<std::string> names_of(const std::vector<WeightSpec>& specs) {
  std::set<std::string> n;
  for (const auto& s : specs) n.insert(s.name);
  return n;
}

TEST(MakeModelQwen35, RealPresetsHaveTheSpecParameterCounts) {
  // LightOnOCR-3-0.8B (= Qwen3.5-0.8B shape): text 752.39 M (llama.cpp prints "qwen35 0.8B ...
  // 752.39 M"), vision ~100.6 M (design/lightonocr3-spec.md §3); the exact values are what
  // transformers 5.24's Qwen3_5ForConditionalGeneration counts for the same config.
  const Qwen35Preset s = qwen35_preset("lightonocr-3-0.8b");
  EXPECT_EQ(qwen35_text_param_count(s), 752393024);
  EXPECT_EQ(qwen35_vision_param_count(s), 100592896);
  EXPECT_EQ(qwen35_param_count(s), 852985920);
  // LightOnOCR-3-4B (= Qwen3.5-4B shape), also checked against transformers.
  const Qwen35Preset b = qwen35_preset("lightonocr-3-4b");
  EXPECT_EQ(qwen35_text_param_count(b), 4205751296);
  EXPECT_EQ(qwen35_vision_param_count(b), 333514240);
  EXPECT_EQ(qwen35_param_count(b), 4539265536);
  // By hand for the 0.8B text stack: embeddings, 24 MLPs and norms, 18 DeltaNet and 6 attention mixers.
  const int64_t H = 1024, emb = 248320 * H, mlp = 3 * H * 3584 + 2 * H;
  const int64_t C = 2 * 16 * 128 + 16 * 128;
  const int64_t gdn = C * H + 2048 * H + 2 * 16 * H + C * 4 + 16 + 16 + 128 + H * 2048;
  const int64_t att = 2 * 8 * 256 * H + 2 * 2 * 256 * H + H * 2048 + 2 * 256;
  EXPECT_EQ(emb + 24 * mlp + 18 * gdn + 6 * att + H, 752393024);
}

TEST(MakeModelQwen35, TensorNamesAndShapesMatchTheLoader) {
  const Qwen35Preset p = qwen35_preset("lightonocr-3-0.8b");
  const auto specs = qwen35_weight_specs(p);
  // transformers' named_parameters of the same config: 473 tensors (tied head counted once).
  EXPECT_EQ(specs.size(), 473u);
  const auto names = names_of(specs);
  EXPECT_FALSE(names.count("lm_head.weight"));
  for (const char* n :
       {"model.language_model.embed_tokens.weight", "model.language_model.norm.weight",
        "model.language_model.layers.0.linear_attn.A_log", "model.language_model.layers.2.linear_attn.conv1d.weight",
        "model.language_model.layers.3.self_attn.q_norm.weight", "model.language_model.layers.23.self_attn.q_proj.weight",
        "model.visual.patch_embed.proj.weight", "model.visual.pos_embed.weight", "model.visual.blocks.11.mlp.linear_fc2.bias",
        "model.visual.merger.linear_fc2.weight"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("model.language_model.layers.3.linear_attn.A_log"));    // full attention
  EXPECT_FALSE(names.count("model.language_model.layers.0.self_attn.q_proj.weight"));  // DeltaNet
  EXPECT_TRUE(std::is_sorted(specs.begin(), specs.end(), [](auto& a, auto& b) { return a.name < b.name; }));
  for (const auto& s : specs) {
    if (s.name == "model.language_model.layers.3.self_attn.q_proj.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{4096, 1024}));
    }
    if (s.name == "model.language_model.layers.0.linear_attn.in_proj_qkv.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{6144, 1024}));
    }
    if (s.name == "model.language_model.layers.0.linear_attn.conv1d.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{6144, 1, 4}));
    }
    if (s.name == "model.visual.patch_embed.proj.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{768, 3, 2, 16, 16}));
    }
    if (s.name == "model.visual.merger.linear_fc1.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{3072, 3072}));
    }
    if (s.name == "model.visual.pos_embed.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{2304, 768}));
    }
  }
  const auto b = qwen35_weight_specs(qwen35_preset("lightonocr-3-4b"));
  EXPECT_EQ(b.size(), 723u);
  for (const auto& s : b) {
    if (s.name == "model.language_model.layers.0.linear_attn.in_proj_z.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{4096, 2560}));
    }
    if (s.name == "model.language_model.layers.31.self_attn.k_proj.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{1024, 2560}));
    }
  }
  // An untied variant carries lm_head.weight.
  Qwen35Preset u = qwen35_preset("tiny-qwen35");
  u.tie_word_embeddings = false;
  EXPECT_TRUE(names_of(qwen35_weight_specs(u)).count("lm_head.weight"));
  EXPECT_EQ(qwen35_param_count(u), qwen35_param_count(qwen35_preset("tiny-qwen35")) + u.vocab_size * u.text_hidden);
  EXPECT_TRUE(is_qwen35_preset("tiny-qwen35"));
  EXPECT_FALSE(is_qwen35_preset("tiny"));
  EXPECT_THROW(qwen35_preset("qwen3.5-huge"), Error);
}

TEST(MakeModelQwen35, WeightInitHasTheDocumentedScales) {
  for (const auto& s : qwen35_weight_specs(qwen35_preset("tiny-qwen35"))) {
    int64_t numel = 1;
    for (int64_t d : s.shape) numel *= d;
    const int64_t n = std::min<int64_t>(8192, numel);
    double sum = 0, sq = 0, lo = 1e30, hi = -1e30;
    for (int64_t i = 0; i < n; ++i) {
      const float v = synth_weight_value(3, s, i);
      ASSERT_TRUE(std::isfinite(v)) << s.name;
      sum += v, sq += double(v) * v, lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
    }
    const double mean = sum / n, sd = std::sqrt(std::max(0.0, sq / n - mean * mean));
    const auto ends = [&](const char* suffix) {
      const std::string x(suffix);
      return s.name.size() >= x.size() && s.name.compare(s.name.size() - x.size(), x.size(), x) == 0;
    };
    double want_mean = 0, want_sd = 0;
    if (ends("A_log")) {  // log U(1, 16)
      EXPECT_GE(lo, 0.0) << s.name;
      EXPECT_LE(hi, std::log(16.0)) << s.name;
      continue;
    } else if (s.name.find("visual") == std::string::npos && ends("norm.weight") && s.name.find("linear_attn") == std::string::npos) {
      want_sd = 0.05;  // Qwen3_5RMSNorm: (1 + w)
    } else if (ends("linear_attn.norm.weight") || ((ends("norm1.weight") || ends("norm2.weight") || ends("merger.norm.weight")))) {
      want_mean = 1, want_sd = 0.05;
    } else if (ends("dt_bias")) {
      want_sd = 0.1;
    } else if (ends(".bias") || ends("pos_embed.weight")) {
      want_sd = 0.02;
    } else if (ends("conv1d.weight")) {
      want_sd = 0.5;
    } else if (ends("embed_tokens.weight")) {
      want_sd = 1 / std::sqrt(double(s.shape[1]));
    } else {
      ASSERT_EQ(s.kind, WeightKind::kLinear) << s.name;
      want_sd = 1 / std::sqrt(double(s.fan_in));
    }
    const double se = want_sd / std::sqrt(double(n));
    EXPECT_NEAR(mean, want_mean, 5 * se + 1e-6) << s.name;
    if (n >= 64) {
      EXPECT_NEAR(sd / want_sd, 1.0, n >= 1024 ? 0.1 : 0.35) << s.name;
    }
  }
}

TEST(MakeModelQwen35, TinyFilesAreHubShaped) {
  const std::string dir = tiny_qwen35_dir();
  const Qwen35Preset p = qwen35_preset("tiny-qwen35");
  const auto cfg = model::qwen35::Config::from_file(dir + "/config.json");
  EXPECT_EQ(cfg.model_type, "qwen3_5");
  EXPECT_EQ(cfg.text.hidden_size, p.text_hidden);
  EXPECT_EQ(cfg.text.intermediate_size, p.text_intermediate);
  EXPECT_EQ(cfg.text.num_hidden_layers, p.text_layers);
  EXPECT_EQ(cfg.text.num_attention_heads, p.text_heads);
  EXPECT_EQ(cfg.text.num_key_value_heads, p.text_kv_heads);
  EXPECT_EQ(cfg.text.head_dim, 256);
  EXPECT_EQ(cfg.text.linear_num_key_heads, p.linear_key_heads);
  EXPECT_EQ(cfg.text.linear_num_value_heads, p.linear_value_heads);
  EXPECT_EQ(cfg.text.linear_key_head_dim, 128);
  EXPECT_EQ(cfg.text.vocab_size, p.vocab_size);
  EXPECT_TRUE(cfg.text.tie_word_embeddings);
  EXPECT_EQ(cfg.text.full_attention, (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(cfg.text.rope_theta, 1e7);
  EXPECT_EQ(cfg.text.partial_rotary_factor, 0.25);
  EXPECT_EQ(cfg.text.mrope_section, (std::array<int, 3>{11, 11, 10}));
  EXPECT_EQ(cfg.vision.depth, p.vision_depth);
  EXPECT_EQ(cfg.vision.hidden_size, p.vision_hidden);
  EXPECT_EQ(cfg.vision.head_dim(), 64);
  EXPECT_EQ(cfg.vision.out_hidden_size, p.text_hidden);
  EXPECT_EQ(cfg.vision.num_position_embeddings, 2304);
  EXPECT_EQ(cfg.image_token_id, 4012);
  EXPECT_EQ(cfg.video_token_id, 4013);
  EXPECT_EQ(cfg.vision_start_token_id, 4009);
  EXPECT_EQ(cfg.vision_end_token_id, 4010);

  // The real presets' config.json parses to the real values.
  for (const char* name : {"lightonocr-3-0.8b", "lightonocr-3-4b"}) {
    const Qwen35Preset r = qwen35_preset(name);
    const auto c = model::qwen35::Config::from_json(qwen35_config_json(r, DType::kBF16));
    EXPECT_EQ(c.text.vocab_size, 248320);
    EXPECT_EQ(c.image_token_id, 248056);
    EXPECT_EQ(c.video_token_id, 248057);
    EXPECT_EQ(c.vision_start_token_id, 248053);
    EXPECT_EQ(c.vision_end_token_id, 248054);
    EXPECT_EQ(c.text.hidden_size, r.text_hidden);
    EXPECT_EQ(c.text.num_hidden_layers, r.text_layers);
    EXPECT_EQ(c.text.n_full_layers(), r.text_layers / 4);
    EXPECT_EQ(c.text.conv_dim(), r.conv_dim());
    EXPECT_EQ(c.vision.depth, r.vision_depth);
    EXPECT_EQ(c.vision.out_hidden_size, r.text_hidden);
    EXPECT_TRUE(c.text.tie_word_embeddings);
  }

  const auto raw = json::parse(test::read_text(dir + "/config.json"));
  EXPECT_EQ(raw["architectures"], json::array({"Qwen3_5ForConditionalGeneration"}));
  EXPECT_EQ(raw["dtype"], "bfloat16");
  EXPECT_EQ(raw["text_config"]["model_type"], "qwen3_5_text");
  EXPECT_EQ(raw["vision_config"]["model_type"], "qwen3_5_vision");
  EXPECT_EQ(raw["vision_config"]["deepstack_visual_indexes"], json::array());
  EXPECT_EQ(raw["text_config"]["rope_parameters"]["mrope_interleaved"], true);
  const auto gen = json::parse(test::read_text(dir + "/generation_config.json"));
  EXPECT_EQ(gen["eos_token_id"], json::array({4002, 4000}));
  const auto pre = json::parse(test::read_text(dir + "/preprocessor_config.json"));
  EXPECT_EQ(pre["image_processor_type"], "Qwen2VLImageProcessorFast");
  EXPECT_EQ(pre["size"]["shortest_edge"], 65536);
  EXPECT_EQ(pre["size"]["longest_edge"], 16777216);
  EXPECT_EQ(pre["image_mean"], json::array({0.5, 0.5, 0.5}));

  // Tokenizer: the 33 Qwen3.5 added tokens at n_regular + i, Qwen3.5's split regex.
  const auto tok = json::parse(test::read_text(dir + "/tokenizer.json"));
  ASSERT_EQ(tok["added_tokens"].size(), 33u);
  EXPECT_EQ(tok["added_tokens"][0]["id"], 4000);
  EXPECT_EQ(tok["added_tokens"][12]["content"], "<|image_pad|>");
  EXPECT_EQ(tok["added_tokens"][25]["content"], "</think>");
  EXPECT_EQ(tok["added_tokens"][32]["content"], "<|audio_pad|>");
  EXPECT_EQ(tok["model"]["vocab"].size(), 4000u);
  const auto fixture_tok = json::parse(test::read_text(kQwen35Fixtures + "/qwen35_a/tokenizer.json"));
  EXPECT_EQ(tok["pre_tokenizer"], fixture_tok["pre_tokenizer"]);
  EXPECT_EQ(tok["normalizer"], fixture_tok["normalizer"]);
  EXPECT_EQ(tok["decoder"], fixture_tok["decoder"]);
  for (size_t i = 0; i < 33; ++i) {  // the fixture's ids are 470 + i
    json a = tok["added_tokens"][i], b = fixture_tok["added_tokens"][i];
    a.erase("id"), b.erase("id");
    EXPECT_EQ(a, b) << i;
  }
  // tokenizer_config.json: the fixture's form with ids shifted.
  auto tc = json::parse(test::read_text(dir + "/tokenizer_config.json"));
  auto ftc = json::parse(test::read_text(kQwen35Fixtures + "/qwen35_a/tokenizer_config.json"));
  for (int i = 0; i < 33; ++i)
    EXPECT_EQ(tc["added_tokens_decoder"][std::to_string(4000 + i)], ftc["added_tokens_decoder"][std::to_string(470 + i)]);
  tc.erase("added_tokens_decoder"), ftc.erase("added_tokens_decoder");
  EXPECT_EQ(tc, ftc);
  // The real chat templates: 0.8B's (fixture qwen35_a) for this preset, 4B's (qwen35_b) for the 4B.
  EXPECT_EQ(test::read_text(dir + "/chat_template.jinja"), test::read_text(kQwen35Fixtures + "/qwen35_a/chat_template.jinja"));
  EXPECT_EQ(qwen35_chat_template(true), test::read_text(kQwen35Fixtures + "/qwen35_b/chat_template.jinja"));
  EXPECT_EQ(qwen35_chat_template(false).size(), 7755u);

  const auto st = io::SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_EQ(st->metadata().at("format"), "pt");
  EXPECT_EQ(st->tensors().size(), qwen35_weight_specs(p).size());
  EXPECT_EQ(st->tensors().at("model.visual.patch_embed.proj.weight").shape, (std::vector<int64_t>{128, 3, 2, 16, 16}));
  EXPECT_EQ(st->tensors().at("model.language_model.embed_tokens.weight").dtype, DType::kBF16);

  // Same seed, same bytes, through the CLI.
  test::TempDir t;
  ASSERT_EQ(std::system((std::string(LOCR_BIN) + " make-model --preset tiny-qwen35 --seed 11 --quiet --out " + t.path() +
                         " >&2").c_str()),
            0);
  for (const char* f : {"model.safetensors", "tokenizer.json", "config.json", "tokenizer_config.json",
                        "generation_config.json", "preprocessor_config.json", "chat_template.jinja"})
    EXPECT_EQ(test::read_text(t / f), test::read_text(dir + "/" + f)) << f;
}

TEST(MakeModelQwen35, RealVocabularyTokenizerHasTheRealSpecialIds) {
  // The lightonocr-3-* tokenizer: 248044 regular tokens, added tokens at the real ids.
  const SynthBpe bpe = make_synthetic_bpe(248044);
  ASSERT_EQ(bpe.vocab.size(), 248044u);
  const auto tok = tokenizer::Tokenizer::from_json(tokenizer_json(bpe, qwen35_added_tokens(), qwen35_pretokenize_regex()),
                                               tokenizer::TokenizerOptions::for_model_type("qwen3_5"));
  EXPECT_EQ(tok->token_to_id("<|endoftext|>"), 248044);
  EXPECT_EQ(tok->token_to_id("<|im_start|>"), 248045);
  EXPECT_EQ(tok->token_to_id("<|im_end|>"), 248046);
  EXPECT_EQ(tok->token_to_id("<|vision_start|>"), 248053);
  EXPECT_EQ(tok->token_to_id("<|vision_end|>"), 248054);
  EXPECT_EQ(tok->token_to_id("<|vision_pad|>"), 248055);
  EXPECT_EQ(tok->token_to_id("<|image_pad|>"), 248056);
  EXPECT_EQ(tok->token_to_id("<|video_pad|>"), 248057);
  EXPECT_EQ(tok->token_to_id("<think>"), 248068);
  EXPECT_EQ(tok->token_to_id("</think>"), 248069);
  EXPECT_EQ(tok->token_to_id("<|audio_pad|>"), 248076);
  EXPECT_EQ(tok->vocab_size(), 248077);
  const std::string text = "Hello, world! Ceci est un café. 12345 \u0e20\u0e32\u0e29\u0e32";
  EXPECT_EQ(tok->decode(tok->encode(text)), text);
  const auto cfg = qwen35_tokenizer_config_json(248044);
  EXPECT_EQ(cfg["added_tokens_decoder"]["248069"]["content"], "</think>");
  EXPECT_EQ(cfg["added_tokens_decoder"]["248069"]["special"], false);
}

TEST(MakeModelQwen35, TinyLoadsAndRunsOnTheRefBackend) {
  const std::string dir = tiny_qwen35_dir();
  model::LoadOptions lo;
  lo.backend = "ref";
  const auto m = model::qwen35::Model::load(dir, lo);
  const auto& cfg = m->config();
  const int64_t H = cfg.text.hidden_size, V = cfg.text.vocab_size;
  EXPECT_EQ(m->tokenizer().token_to_id("<|im_start|>"), 4001);
  EXPECT_EQ(m->tokenizer().decode(m->tokenizer().encode("Hello, how are you?")), "Hello, how are you?");

  // LightOnOCR-3's request: one page image, thinking off.
  const json messages = json::array({{{"role", "user"}, {"content", json::array({{{"type", "image"}}})}}});
  const auto chat = m->render_chat(messages, {{"enable_thinking", false}});
  EXPECT_EQ(chat.text,
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\n");
  const io::Image img = io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png");
  const model::Prompt p = m->build_prompt(chat, {img});
  const std::vector<model::qwen35::Grid> grids = model::qwen35::Model::grids(p.images);
  ASSERT_EQ(grids.size(), 1u);
  const int64_t n_img = static_cast<int64_t>(grids[0].h / 2) * (grids[0].w / 2);
  EXPECT_GE(n_img, 64);  // at least 65536 pixels: 256 patches
  EXPECT_EQ(p.ids[0], 4001);
  const int64_t T = static_cast<int64_t>(p.ids.size());

  // Vision tower.
  const std::vector<float> patches = m->vision_patches(p.images);
  Tensor last;
  const Tensor e = m->vision().forward(patches.data(), grids, &last);
  ASSERT_EQ(e.dim(0), n_img);
  ASSERT_EQ(e.dim(1), H);
  Tensor embeds = Tensor::empty(DType::kF32, {e.dim(0), e.dim(1)});
  m->ops().to_host(embeds.raw(), e.raw(), static_cast<size_t>(e.numel()) * sizeof(float));
  double sq = 0;
  for (int64_t i = 0; i < embeds.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(embeds.data<float>()[i])) << i;
    sq += double(embeds.data<float>()[i]) * embeds.data<float>()[i];
  }
  const double rms_img = std::sqrt(sq / embeds.numel());
  EXPECT_GT(rms_img, 0.05);
  EXPECT_LT(rms_img, 20.0);

  // Prefill, then greedy decode steps through the recurrent state and the KV cache.
  const int block = 16;
  const int64_t cap = T + 16;
  model::KvPool kv = model::qwen35::make_kv_pool(cfg.text, (cap + block - 1) / block, block, m->decoder().kv_dtype());
  std::vector<int32_t> table(kv.n_blocks());
  std::iota(table.begin(), table.end(), 0);
  model::qwen35::StatePool states(cfg.text, 1, m->ops());
  model::Workspace ws(m->ops());
  Tensor x = m->embed_prompt(p.ids, &embeds);
  model::qwen35::Seq s;
  s.n_new = T;
  s.block_table = table.data();
  s.positions = p.positions.data();
  s.state_slot = 0;
  s.fresh = true;
  std::vector<double> hidden_rms;
  m->decoder().forward(x.data<float>(), {s}, kv, states, ws, [&](int, const float* h) {
    double q = 0;
    for (int64_t i = 0; i < T * H; ++i) q += double(h[i]) * h[i];
    hidden_rms.push_back(std::sqrt(q / (T * H)));
  });
  ASSERT_EQ(hidden_rms.size(), static_cast<size_t>(cfg.text.num_hidden_layers + 1));
  for (double r : hidden_rms) {  // O(1) through every layer
    EXPECT_TRUE(std::isfinite(r));
    EXPECT_GT(r, 0.01);
    EXPECT_LT(r, 50.0);
  }
  std::vector<float> logits(static_cast<size_t>(V));
  m->decoder().logits(x.data<float>() + (T - 1) * H, 1, logits.data());
  std::vector<int32_t> generated;
  for (int step = 0; step < 6; ++step) {
    double lq = 0;
    for (float v : logits) {
      ASSERT_TRUE(std::isfinite(v)) << "step " << step;
      lq += double(v) * v;
    }
    const double rms = std::sqrt(lq / V);
    EXPECT_GT(rms, 0.1) << "step " << step;
    EXPECT_LT(rms, 20.0) << "step " << step;
    const int32_t id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated.push_back(id);
    std::vector<float> xe(static_cast<size_t>(H));
    m->decoder().embed(&id, 1, xe.data());
    model::qwen35::Seq d;
    d.n_new = 1;
    d.kv_pos0 = T + step;
    d.block_table = table.data();
    d.rope_pos0 = T + p.rope_delta + step;
    d.state_slot = 0;
    m->decoder().forward(xe.data(), {d}, kv, states, ws);
    m->decoder().logits(xe.data(), 1, logits.data());
  }
  EXPECT_EQ(generated.size(), 6u);
  // And through the CLI (the model::Model interface).
  const auto g = test::run_cmd(std::string(LOCR_BIN) + " generate --model " + dir + " --image " + LOCR_FIXTURES_DIR +
                               "/images/page_small.png --max-tokens 4 --temperature 0");
  EXPECT_EQ(g.status, 0);
}

}  // namespace
}  // namespace locr::toolkit
