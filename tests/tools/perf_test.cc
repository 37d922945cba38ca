// `locr perf` on a fixture model: it runs every stage and writes the JSON fields the issue names.
// Timings are printed, never asserted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

TEST(Perf, WritesEveryStageToJson) {
  const auto out = std::filesystem::temp_directory_path() / ("locr_perf_" + std::to_string(::getpid()) + ".json");
  const std::string cmd = std::string(LOCR_BIN) + " perf --model " + LOCR_FIXTURES_DIR +
                          "/models/tiny_a --image-size 300x200 --gen-tokens 4 --batch 3 --repeat 2 --json " +
                          out.string() + " >&2";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const char* k : {"vision_encode_s", "prefill_s", "prefill_tok_s", "decode_tok_s", "decode_batch_tok_s",
                        "peak_rss_bytes", "preprocess_s"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GT(j[k].get<double>(), 0.0) << k;
  }
  EXPECT_EQ(j["vision_patches"].get<int>(), 22 * 16);  // 300x200 -> 308x224 at align 28
  EXPECT_EQ(j["decode_batch"].get<int>(), 3);
  std::filesystem::remove(out);
}

TEST(Perf, TextPromptMode) {
  const std::string cmd = std::string(LOCR_BIN) + " perf --model " + LOCR_FIXTURES_DIR +
                          "/models/tiny_a --prompt-tokens 50 --gen-tokens 2 --repeat 1 >&2";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
