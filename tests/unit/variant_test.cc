// Telling LightOnOCR checkpoints apart by name (model/variant.h), as LightOn's client does, and a
// LightOnOCR-3-1B directory (same architecture as LightOnOCR-2-1B) loading and prompting as one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "model/lightonocr/lighton_ocr.h"
#include "model/variant.h"

namespace locr::model {
namespace {

namespace fs = std::filesystem;

TEST(ModelVariant, FromCheckpointNames) {
  const ModelVariant two = variant_from_name("lightonai/LightOnOCR-2-1B");
  EXPECT_EQ(two.generation, 2);
  EXPECT_FALSE(two.figure_boxes);
  EXPECT_FALSE(two.grounding);
  for (const char* n : {"lightonai/LightOnOCR-2-1B-bbox", "LightOnOCR-2-1B-bbox-soup", "lightonocr-2-1b-bbox-base"}) {
    const ModelVariant v = variant_from_name(n);
    EXPECT_EQ(v.generation, 2) << n;
    EXPECT_TRUE(v.figure_boxes) << n;
    EXPECT_FALSE(v.grounding) << n;
  }
  // GGUF general.name as llama.cpp's converter (and locr quantize) writes it.
  EXPECT_EQ(variant_from_name("LightOnOCR 2 1B").generation, 2);
  EXPECT_TRUE(variant_from_name("LightOnOCR 2 1B Bbox Soup").figure_boxes);
  EXPECT_TRUE(variant_from_name("LightOnOCR_3_1B").grounding);
  const ModelVariant three = variant_from_name("lightonai/LightOnOCR-3-1B");
  EXPECT_EQ(three.generation, 3);
  EXPECT_TRUE(three.grounding);
  EXPECT_TRUE(three.figure_boxes);
  EXPECT_EQ(variant_from_name("lightonai/LightOnOCR-1B-1025").generation, 1);
  EXPECT_EQ(variant_from_name("LightOnOCR-0.9B-16k-1025").generation, 1);
  for (const char* n : {"my-finetune", "ocr", "LightOnOCR", "lightonocr-x-1b", ""}) EXPECT_FALSE(variant_from_name(n).known()) << n;
  EXPECT_EQ(variant_from_name("my-finetune").describe(), "an unknown LightOnOCR checkpoint");
  EXPECT_EQ(two.describe(), "lightonai/LightOnOCR-2-1B (LightOnOCR-2, plain OCR only)");
}

TEST(ModelVariant, FromTheDirectoryOrItsConfig) {
  EXPECT_EQ(detect_variant("/models/LightOnOCR-2-1B-bbox", nullptr).name, "LightOnOCR-2-1B-bbox");
  EXPECT_EQ(detect_variant("/models/LightOnOCR-2-1B-bbox/", nullptr).generation, 2);
  const std::string cache = "/root/.cache/huggingface/hub/models--lightonai--LightOnOCR-3-1B/snapshots/"
                            "0123456789abcdef0123456789abcdef01234567";
  const ModelVariant v = detect_variant(cache, nullptr);
  EXPECT_EQ(v.name, "lightonai/LightOnOCR-3-1B");
  EXPECT_TRUE(v.grounding);
  // Only the directory's own name counts, not a parent's.
  EXPECT_FALSE(detect_variant("/work/LightOnOCR-3-tests/models/tiny", nullptr).known());
  const nlohmann::json config = {{"_name_or_path", "lightonai/LightOnOCR-2-1B"}};
  EXPECT_EQ(detect_variant("/models/ocr", &config).generation, 2);
  EXPECT_FALSE(detect_variant("/models/ocr", nullptr).known());
}

// The tiny fixture model under a LightOnOCR-3-1B name: it loads, is told apart as generation 3, and
// its grounding request (the page image then the text `grounding`, LightOn's client) renders as the
// transformers template does (model-spec.md section 5: "image then text T").
TEST(ModelVariant, ALightOnOcr3DirectoryLoadsAndRendersTheGroundingPrompt) {
  const fs::path dir = fs::temp_directory_path() / ("locr-variant-" + std::to_string(::getpid())) / "LightOnOCR-3-1B";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a"))
    fs::create_symlink(fs::absolute(e.path()), dir / e.path().filename());
  const auto m = LightOnOcr::load(dir.string());
  fs::remove_all(dir.parent_path());
  EXPECT_EQ(m->variant().generation, 3);
  EXPECT_TRUE(m->variant().grounding);
  const std::string grounding = "grounding";
  const RenderedChat chat = m->render_chat(LightOnOcr::make_messages(nullptr, &grounding, 1));
  EXPECT_EQ(chat.text,
            "<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|>grounding\n<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.n_images, 1u);
  // The fixture under its own name says nothing about its generation.
  EXPECT_FALSE(LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a")->variant().known());
}

}  // namespace
}  // namespace locr::model
