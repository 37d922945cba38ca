#include <gtest/gtest.h>

#include "core/error.h"
#include "model/config.h"

namespace locr::model {
namespace {

using nlohmann::json;

json hub_config() {
  return json::parse(R"({
    "architectures": ["LightOnOCRForConditionalGeneration"], "model_type": "mistral3",
    "image_token_id": 151655, "spatial_merge_size": 2, "projector_hidden_act": "gelu",
    "multimodal_projector_bias": false, "vision_feature_layer": -1,
    "text_config": {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
      "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
      "rms_norm_eps": 1e-06, "rope_theta": 1000000, "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"},
      "max_position_embeddings": 16384, "tie_word_embeddings": true},
    "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
      "num_attention_heads": 16, "head_dim": 64, "patch_size": 14, "image_size": 1540, "rope_theta": 10000}
  })");
}

TEST(Config, HubForm) {
  const ModelConfig c = ModelConfig::from_json(hub_config());
  EXPECT_EQ(c.model_type, "mistral3");
  EXPECT_EQ(c.image_token_id, 151655);
  EXPECT_EQ(c.text.head_dim, 128);
  EXPECT_EQ(c.text.num_key_value_heads, 8);
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 1e6);
  EXPECT_TRUE(c.text.tie_word_embeddings);
  EXPECT_EQ(c.vision.num_hidden_layers, 24);
  EXPECT_FLOAT_EQ(c.vision.norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.projector_norm_eps, 1e-6f);
}

TEST(Config, TransformersForm) {
  json j = hub_config();
  j["model_type"] = "lighton_ocr";
  j.erase("image_token_id");
  j["image_token_index"] = 7;
  j["tie_word_embeddings"] = false;  // the composite flag wins over text_config's
  j["text_config"].erase("rope_theta");
  j["text_config"]["rope_parameters"]["rope_theta"] = 5e5;
  const ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.image_token_id, 7);
  EXPECT_FALSE(c.text.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 5e5);
}

TEST(Config, HeadDimDefaultsToHiddenOverHeads) {
  json j = hub_config();
  j["text_config"].erase("head_dim");
  j["vision_config"].erase("head_dim");
  const ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.text.head_dim, 64);
  EXPECT_EQ(c.vision.head_dim, 64);
  // As in transformers' Pixtral, a configured vision head_dim is ignored.
  j["vision_config"]["head_dim"] = 32;
  EXPECT_EQ(ModelConfig::from_json(j).vision.head_dim, 64);
}

void expect_error(const json& j, ErrorKind kind, const std::string& needle) {
  try {
    ModelConfig::from_json(j);
    FAIL() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Config, Errors) {
  json j = hub_config();
  j["model_type"] = "llama";
  expect_error(j, ErrorKind::kUnsupported, "llama");
  j = hub_config();
  j.erase("text_config");
  expect_error(j, ErrorKind::kInvalidArgument, "text_config");
  j = hub_config();
  j["text_config"]["num_key_value_heads"] = 3;
  expect_error(j, ErrorKind::kInvalidArgument, "num_key_value_heads");
  j = hub_config();
  j["text_config"]["hidden_size"] = "big";
  expect_error(j, ErrorKind::kInvalidArgument, "hidden_size");
  j = hub_config();
  j["vision_config"]["num_attention_heads"] = 0;
  expect_error(j, ErrorKind::kInvalidArgument, "num_attention_heads");
  j = hub_config();
  j["image_token_id"] = 999999;
  expect_error(j, ErrorKind::kInvalidArgument, "image token id");
  j = hub_config();
  j["text_config"]["rope_parameters"]["rope_type"] = "yarn";
  expect_error(j, ErrorKind::kUnsupported, "yarn");
  expect_error(json::array(), ErrorKind::kInvalidArgument, "not a JSON object");
}

TEST(GenerationConfig, EosListOrScalar) {
  GenerationConfig g = GenerationConfig::from_json(
      json::parse(R"({"do_sample": true, "temperature": 0.2, "top_p": 0.9, "top_k": 0,
                      "eos_token_id": [151645, 151643], "bos_token_id": 151643, "pad_token_id": 151643})"));
  EXPECT_EQ(g.eos_token_ids, (std::vector<int>{151645, 151643}));
  EXPECT_TRUE(g.do_sample);
  EXPECT_FLOAT_EQ(g.temperature, 0.2f);
  g = GenerationConfig::from_json(json::parse(R"({"eos_token_id": 1})"));
  EXPECT_EQ(g.eos_token_ids, std::vector<int>{1});
}

}  // namespace
}  // namespace locr::model
