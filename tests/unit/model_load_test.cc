// Loading a model directory: every missing or broken file gives an error that names it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/lightonocr/lighton_ocr.h"

namespace fs = std::filesystem;

namespace locr::model {
namespace {

std::string copy_fixture(const std::string& name) {
  const fs::path dst = fs::temp_directory_path() / ("locr_load_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(fs::path(LOCR_FIXTURES_DIR) / "models" / "tiny_a"))
    if (e.is_regular_file()) fs::copy_file(e.path(), dst / e.path().filename());
  return dst.string();
}

std::string load_error(const std::string& dir, const LoadOptions& lo = {}) {
  try {
    LightOnOcr::load(dir, lo);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelLoad, LoadsFixtureAndBuildsTheOcrPrompt) {
  const auto m = LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a");
  EXPECT_EQ(m->generation_config().eos_token_ids, (std::vector<int>{702, 700}));
  EXPECT_EQ(m->processor_config().longest_edge, 1540);
  // The recommended OCR request: the image alone, no system or text.
  io::Image img;
  img.width = 56;
  img.height = 84;
  img.rgb.assign(56 * 84 * 3, 200);
  const Prompt p = m->build_prompt(LightOnOcr::make_messages(nullptr, nullptr, 1), {img});
  EXPECT_EQ(p.text, "<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n");
  int n_image = 0;
  for (int32_t id : p.ids) n_image += id == m->config().image_token_id;
  EXPECT_EQ(n_image, (84 / 28) * (56 / 28));
  EXPECT_EQ(p.ids.size(), 12u + n_image);
}

TEST(ModelLoad, EveryFixtureModelLoads) {
  // The strict config and tensor checks accept every fixture (tied, stray lm_head, untied,
  // image_token_index, ...).
  for (const char* name : {"tiny_a", "tiny_b", "tiny_c", "tiny_d", "tiny_e"})
    EXPECT_EQ(load_error(std::string(LOCR_FIXTURES_DIR) + "/models/" + name), "") << name;
}

TEST(ModelLoad, ConfigThatLocrCannotRunIsRefusedNamingTheKey) {
  const std::string dir = copy_fixture("attention_bias");
  const fs::path cfg = fs::path(dir) / "config.json";
  auto j = nlohmann::json::parse(std::ifstream(cfg));
  j["text_config"]["attention_bias"] = true;
  std::ofstream(cfg) << j.dump();
  EXPECT_NE(load_error(dir).find("attention_bias = true is not supported"), std::string::npos) << load_error(dir);
  j["text_config"]["attention_bias"] = false;
  j["vision_config"]["hidden_act"] = "gelu";
  std::ofstream(cfg) << j.dump();
  EXPECT_NE(load_error(dir).find("vision_config: hidden_act = \"gelu\""), std::string::npos) << load_error(dir);
}

TEST(ModelLoad, MismatchedImageCountIsAnError) {
  const auto m = LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a");
  EXPECT_THROW(m->build_prompt(LightOnOcr::make_messages(nullptr, nullptr, 1), {}), Error);
}

TEST(ModelLoad, MissingFilesAreNamed) {
  EXPECT_NE(load_error("/nonexistent/model").find("model directory not found"), std::string::npos);
  for (const char* f : {"config.json", "tokenizer.json", "model.safetensors"}) {
    const std::string dir = copy_fixture(std::string("missing_") + f);
    fs::remove(fs::path(dir) / f);
    const std::string msg = load_error(dir);
    EXPECT_NE(msg.find(f), std::string::npos) << f << ": " << msg;
  }
  // No chat template anywhere: the message says how to give one.
  const std::string dir = copy_fixture("no_template");
  fs::remove(fs::path(dir) / "chat_template.jinja");
  {
    std::ofstream(fs::path(dir) / "tokenizer_config.json") << "{}";
  }
  EXPECT_NE(load_error(dir).find("--chat-template"), std::string::npos);
  // ... and --chat-template fixes it.
  LoadOptions lo;
  lo.chat_template_file = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a/chat_template.jinja";
  EXPECT_EQ(load_error(dir, lo), "");
}

TEST(ModelLoad, TruncatedCheckpointAndBadConfig) {
  std::string dir = copy_fixture("truncated");
  const fs::path st = fs::path(dir) / "model.safetensors";
  fs::resize_file(st, fs::file_size(st) - 100);
  EXPECT_NE(load_error(dir).find("truncated"), std::string::npos);
  dir = copy_fixture("badconfig");
  {
    std::ofstream(fs::path(dir) / "config.json") << "{\"text_config\": ";
  }
  EXPECT_NE(load_error(dir).find("config.json"), std::string::npos);
}

}  // namespace
}  // namespace locr::model
