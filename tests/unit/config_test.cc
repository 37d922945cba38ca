#include <gtest/gtest.h>

#include "core/error.h"
#include "model/generation_config.h"
#include "model/lightonocr/config.h"

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

// 28 layer types, all "full_attention" but layer i.
json full_but(int i, const char* type) {
  json lt = json::array();
  for (int k = 0; k < 28; ++k) lt.push_back(k == i ? type : "full_attention");
  return lt;
}

// Each configuration that would run with other numbers than transformers is refused, naming the
// key and its value.
TEST(Config, RefusesWhatLocrCannotRun) {
  struct Case {
    const char* section;  // "text_config", "vision_config" or "" (top level)
    const char* key;
    json value;
    const char* needle;
  };
  const Case cases[] = {
      {"text_config", "attention_bias", true, "attention_bias = true"},
      {"text_config", "mlp_bias", true, "mlp_bias = true"},
      {"text_config", "hidden_act", "gelu", "hidden_act = \"gelu\""},
      {"text_config", "hidden_act", "relu", "hidden_act = \"relu\""},
      {"text_config", "use_sliding_window", true, "use_sliding_window = true"},
      {"text_config", "layer_types", full_but(27, "sliding_attention"), "layer_types[27] = \"sliding_attention\""},
      {"text_config", "rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}, "rope_type = \"yarn\""},
      {"text_config", "rope_scaling", {{"type", "linear"}, {"factor", 2.0}}, "type = \"linear\""},
      {"text_config", "partial_rotary_factor", 0.5, "partial_rotary_factor = 0.5"},
      {"text_config", "use_qk_norm", false, "use_qk_norm = false"},
      {"text_config", "model_type", "qwen2", "model_type = \"qwen2\""},
      {"text_config", "final_logit_softcapping", 30.0, "final_logit_softcapping = 30.0"},
      {"text_config", "num_experts", 8, "num_experts = 8"},
      {"vision_config", "hidden_act", "gelu", "hidden_act = \"gelu\""},
      {"vision_config", "model_type", "siglip_vision_model", "model_type = \"siglip_vision_model\""},
      {"vision_config", "rope_parameters", {{"rope_type", "dynamic"}}, "rope_type = \"dynamic\""},
      {"", "multimodal_projector_bias", true, "multimodal_projector_bias = true"},
      {"", "projector_hidden_act", "gelu_pytorch_tanh", "gelu_pytorch_tanh"},
  };
  for (const Case& c : cases) {
    json j = hub_config();
    json& where = *c.section ? j[c.section] : j;
    where[c.key] = c.value;
    SCOPED_TRACE(std::string(c.section) + " " + c.key + " = " + c.value.dump());
    expect_error(j, ErrorKind::kUnsupported, c.needle);
  }
  json j = hub_config();
  j["text_config"]["layer_types"] = json::array({"full_attention"});
  expect_error(j, ErrorKind::kInvalidArgument, "must list 28 layer types");
  // The rope_parameters of a per-layer-type config are refused too.
  j = hub_config();
  j["text_config"]["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}}};
  expect_error(j, ErrorKind::kUnsupported, "full_attention");
}

TEST(Config, AcceptsTheRealConfigsSettings) {
  // As the hub's LightOnOCR-2-1B config.json writes them (model-spec.md §1, §2).
  json j = hub_config();
  json& t = j["text_config"];
  t["model_type"] = "qwen3";
  t["attention_bias"] = false;
  t["hidden_act"] = "silu";
  t["use_sliding_window"] = false;
  t["sliding_window"] = nullptr;
  t["max_window_layers"] = 28;
  t["layer_types"] = json::array();
  for (int i = 0; i < 28; ++i) t["layer_types"].push_back("full_attention");
  t["use_qk_norm"] = true;
  t["rope_scaling"] = nullptr;
  j["vision_config"]["hidden_act"] = "silu";
  j["vision_config"]["model_type"] = "pixtral";
  j["vision_config"]["rope_parameters"] = {{"rope_theta", 10000.0}, {"rope_type", "default"}};
  const ModelConfig c = ModelConfig::from_json(j);
  EXPECT_EQ(c.text.num_hidden_layers, 28);
  EXPECT_DOUBLE_EQ(c.vision.rope_theta, 10000.0);
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
