// `locr quantize` for the Qwen3.5 family (model/qwen35/gguf_export.h) against llama.cpp's own
// converter: the fixture models (the 0.8B layout, tied; the 4B layout, whose value heads the
// converter reorders, untied, sharded) written by locr as f32 / bf16 / q8_0 text and f32 / f16
// mmproj equal the converter's files (tests/fixtures/gguf/qwen35/, made by
// tools/reference/make_gguf_qwen35_fixtures.py) tensor by tensor, key by key and byte for byte.
// (That locr runs those files: tests/unit/qwen35_gguf_test.cc, tests/golden/qwen35_golden_test.cc;
// --type q4_k_m against llama-quantize's bytes: tests/server/test_quantize.py.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "gguf_compare.h"
#include "model/qwen35/gguf_export.h"

namespace fs = std::filesystem;

namespace locr::model::qwen35 {
namespace {

const std::string kFix = LOCR_FIXTURES_DIR;

std::string out_dir() {
  const fs::path d = fs::temp_directory_path() / ("locr_qwen35_export_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d.string();
}

class Qwen35GgufExport : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen35GgufExport, EqualsLlamaCppsConverter) {
  const std::string m = GetParam(), dir = kFix + "/qwen35/" + m, want = kFix + "/gguf/qwen35/" + m + "/";
  struct Run {
    GgufOutType type;
    const char* name;
    bool text, mmproj;  // which of the two files the converter's fixtures have for this --type
  };
  for (const Run& r : {Run{GgufOutType::kF32, "f32", true, true}, Run{GgufOutType::kBF16, "bf16", true, false},
                       Run{GgufOutType::kQ8_0, "q8_0", true, false}, Run{GgufOutType::kF16, "f16", false, true}}) {
    SCOPED_TRACE(std::string("--type ") + r.name);
    const std::string text = out_dir() + "/" + m + "-" + r.name + ".gguf", mmproj = default_mmproj_path(text);
    const GgufExportResult res = qwen35::export_gguf(dir, text, mmproj, r.type);
    EXPECT_GT(res.text_tensors, 0);
    EXPECT_GT(res.mmproj_tensors, 0);
    EXPECT_TRUE(res.fallbacks.empty()) << "every width of these fixtures is a multiple of 32";
    if (r.type == GgufOutType::kQ8_0) {
      EXPECT_GT(res.q8_0, 0);
    }
    if (r.text) expect_same_gguf(text, want + m + "-" + r.name + ".gguf");
    if (r.mmproj) expect_same_gguf(mmproj, want + "mmproj-" + m + "-" + r.name + ".gguf");
    fs::remove(text);
    fs::remove(mmproj);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Qwen35GgufExport, ::testing::Values("qwen35_a", "qwen35_b"));

}  // namespace
}  // namespace locr::model::qwen35
