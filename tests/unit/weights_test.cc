// Weight binding: every tensor found and shape-checked; the prefix and lm_head variants.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/lightonocr/weights.h"

namespace fs = std::filesystem;

namespace locr::model {
namespace {

ModelConfig tiny_config() {
  return ModelConfig::from_json(nlohmann::json::parse(R"({
    "model_type": "lighton_ocr", "image_token_index": 40,
    "text_config": {"hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4, "vocab_size": 48},
    "vision_config": {"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
      "num_attention_heads": 2, "head_dim": 4, "patch_size": 14}})"));
}

std::map<std::string, std::vector<int64_t>> expected_shapes(const std::string& tp) {
  std::map<std::string, std::vector<int64_t>> s;
  s[tp + "embed_tokens.weight"] = {48, 8};
  for (int i = 0; i < 2; ++i) {
    const std::string p = tp + "layers." + std::to_string(i) + ".";
    s[p + "input_layernorm.weight"] = {8};
    s[p + "self_attn.q_proj.weight"] = {16, 8};
    s[p + "self_attn.k_proj.weight"] = {8, 8};
    s[p + "self_attn.v_proj.weight"] = {8, 8};
    s[p + "self_attn.o_proj.weight"] = {8, 16};
    s[p + "self_attn.q_norm.weight"] = {4};
    s[p + "self_attn.k_norm.weight"] = {4};
    s[p + "post_attention_layernorm.weight"] = {8};
    s[p + "mlp.gate_proj.weight"] = {12, 8};
    s[p + "mlp.up_proj.weight"] = {12, 8};
    s[p + "mlp.down_proj.weight"] = {8, 12};
  }
  s[tp + "norm.weight"] = {8};
  const std::string vp = "model.vision_encoder.";
  s[vp + "patch_conv.weight"] = {8, 3, 14, 14};
  s[vp + "ln_pre.weight"] = {8};
  const std::string lp = vp + "transformer.layers.0.";
  s[lp + "attention_norm.weight"] = {8};
  for (const char* n : {"q_proj", "k_proj", "v_proj", "o_proj"}) s[lp + "attention." + n + ".weight"] = {8, 8};
  s[lp + "ffn_norm.weight"] = {8};
  s[lp + "feed_forward.gate_proj.weight"] = {16, 8};
  s[lp + "feed_forward.up_proj.weight"] = {16, 8};
  s[lp + "feed_forward.down_proj.weight"] = {8, 16};
  s["model.vision_projection.norm.weight"] = {8};
  s["model.vision_projection.patch_merger.merging_layer.weight"] = {8, 32};
  s["model.vision_projection.linear_1.weight"] = {8, 8};
  s["model.vision_projection.linear_2.weight"] = {8, 8};
  return s;
}

std::string write_checkpoint(const std::string& name, std::map<std::string, std::vector<int64_t>> shapes,
                             DType dtype = DType::kBF16) {
  const fs::path dir = fs::temp_directory_path() / ("locr_w_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::pair<std::string, Tensor>> ts;
  for (const auto& [n, s] : shapes) ts.push_back({n, Tensor::zeros(dtype, s)});
  io::write_safetensors((dir / "model.safetensors").string(), ts);
  return dir.string();
}

std::string load_error(const std::string& dir) {
  try {
    const auto st = io::SafetensorsSet::open_dir(dir);
    load_weights(st, tiny_config());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Weights, LoadsHubLayoutTied) {
  const std::string dir = write_checkpoint("ok", expected_shapes("model.language_model."));
  const auto st = io::SafetensorsSet::open_dir(dir);
  const ModelWeights w = load_weights(st, tiny_config());
  EXPECT_EQ(w.text.layers.size(), 2u);
  EXPECT_EQ(w.text.lm_head.data, w.text.embed_tokens.data);  // tied
  EXPECT_EQ(w.vision.patch_conv.cols, 3 * 14 * 14);
  EXPECT_EQ(w.projector.merging_layer.cols, 32);
  EXPECT_EQ(w.text.layers[1].o_proj.cols, 16);
}

TEST(Weights, StrayLmHeadIsUsedAndPrefixVariantAccepted) {
  auto shapes = expected_shapes("model.language_model.model.");
  shapes["lm_head.weight"] = {48, 8};
  const std::string dir = write_checkpoint("variant", shapes, DType::kF32);
  const auto st = io::SafetensorsSet::open_dir(dir);
  const ModelWeights w = load_weights(st, tiny_config());
  EXPECT_NE(w.text.lm_head.data, w.text.embed_tokens.data);
  EXPECT_EQ(w.text.lm_head.dtype, DType::kF32);
}

TEST(Weights, MissingTensorNamesItAndTheShape) {
  auto shapes = expected_shapes("model.language_model.");
  shapes.erase("model.language_model.layers.1.self_attn.k_norm.weight");
  const std::string msg = load_error(write_checkpoint("missing", shapes));
  EXPECT_NE(msg.find("model.language_model.layers.1.self_attn.k_norm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
}

TEST(Weights, WrongShapeNamesBoth) {
  auto shapes = expected_shapes("model.language_model.");
  shapes["model.vision_projection.linear_1.weight"] = {8, 9};
  const std::string msg = load_error(write_checkpoint("shape", shapes));
  EXPECT_NE(msg.find("linear_1.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[8, 9]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected [8, 8]"), std::string::npos) << msg;
}

TEST(Weights, TensorThatNoCodeReadsIsAnErrorNamingIt) {
  // E.g. the q/k/v biases of an attention_bias checkpoint: ignoring them computes something else.
  auto shapes = expected_shapes("model.language_model.");
  shapes["model.language_model.layers.0.self_attn.q_proj.bias"] = {16};
  shapes["model.language_model.layers.1.self_attn.k_proj.bias"] = {8};
  const std::string msg = load_error(write_checkpoint("unused", shapes));
  EXPECT_NE(msg.find("'model.language_model.layers.0.self_attn.q_proj.bias' [16]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'model.language_model.layers.1.self_attn.k_proj.bias' [8]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not read by locr"), std::string::npos) << msg;
  // A layer beyond num_hidden_layers, too.
  shapes = expected_shapes("model.language_model.");
  shapes["model.language_model.layers.2.input_layernorm.weight"] = {8};
  EXPECT_NE(load_error(write_checkpoint("extra_layer", shapes)).find("layers.2.input_layernorm.weight"),
            std::string::npos);
  // Two LM heads: only one can be read.
  shapes = expected_shapes("model.language_model.");
  shapes["lm_head.weight"] = {48, 8};
  shapes["model.language_model.lm_head.weight"] = {48, 8};
  EXPECT_NE(load_error(write_checkpoint("two_heads", shapes)).find("'model.language_model.lm_head.weight'"),
            std::string::npos);
}

TEST(Weights, UnsupportedDtype) {
  auto shapes = expected_shapes("model.language_model.");
  const std::string dir = write_checkpoint("dtype", shapes, DType::kI32);
  const std::string msg = load_error(dir);
  EXPECT_NE(msg.find("I32"), std::string::npos) << msg;
}

TEST(Weights, UntiedWithoutLmHeadFails) {
  const std::string dir = write_checkpoint("untied", expected_shapes("model.language_model."));
  auto cfg = tiny_config();
  cfg.text.tie_word_embeddings = false;
  const auto st = io::SafetensorsSet::open_dir(dir);
  try {
    load_weights(st, cfg);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lm_head.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace locr::model
