// `locr perf` on a fixture model: it runs every stage and writes the JSON fields the issue names.
// Timings are printed, never asserted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

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

// --spec-replay: the second run replays the first one's tokens as drafts (all right, all accepted),
// the third drafts a wrong token every time (none accepted, and the back-off drafts far less than K a
// step); each gives the first run's tokens.
TEST(Perf, SpecReplayWritesBothRatesAndChecksTheTokens) {
  const auto out = std::filesystem::temp_directory_path() / ("locr_perf_spec_" + std::to_string(::getpid()) + ".json");
  const int gen = 24, batch = 2, k = 4, repeat = 2;
  const std::string cmd = std::string(LOCR_BIN) + " perf --model " + LOCR_FIXTURES_DIR +
                          "/models/tiny_a --image-size 300x200 --gen-tokens " + std::to_string(gen) + " --batch " +
                          std::to_string(batch) + " --repeat " + std::to_string(repeat) + " --spec-replay " +
                          std::to_string(k) + " --json " + out.string() + " >&2";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const char* key : {"spec_replay_decode_tok_s", "spec_replay_plain_decode_tok_s", "spec_miss_decode_tok_s"})
    EXPECT_GT(j.at(key).get<double>(), 0.0) << key;
  EXPECT_TRUE(j.at("spec_replay_identical").get<bool>());
  EXPECT_EQ(j.at("spec_replay_k").get<int>(), k);
  // Each sequence's first token comes from the prefill; of the other gen - 1, each step takes its
  // drafts (all right) and one of the model's own: at least K/(K+1) of them were drafts.
  const int64_t seqs = int64_t{repeat} * batch;
  const int64_t drafted = j.at("spec_replay_drafted").get<int64_t>();
  EXPECT_EQ(j.at("spec_replay_accepted").get<int64_t>(), drafted);
  EXPECT_GE(drafted, seqs * ((gen - 1) * k / (k + 1) - 1));
  EXPECT_LE(drafted, seqs * (gen - 1));
  // Drafts that never match: none accepted, and the back-off verifies far fewer than K a step.
  EXPECT_EQ(j.at("spec_miss_accepted").get<int64_t>(), 0);
  EXPECT_GT(j.at("spec_miss_drafted").get<int64_t>(), 0);
  EXPECT_LT(j.at("spec_miss_drafted").get<int64_t>(), seqs * (gen - 1) * k / 4);
  std::filesystem::remove(out);
}

// --profile-ops: a table per stage; the vision encoder's rows name its matmuls and its attention
// with their FLOPs, and no stage's ops take longer than the stage.
TEST(Perf, ProfileOpsSplitsEachStageByOp) {
  const auto out = std::filesystem::temp_directory_path() / ("locr_perf_ops_" + std::to_string(::getpid()) + ".json");
  const std::string cmd = std::string(LOCR_BIN) + " perf --model " + LOCR_FIXTURES_DIR +
                          "/models/tiny_a --image-size 300x200 --gen-tokens 2 --batch 2 --repeat 2 --profile-ops --json " +
                          out.string() + " >&2";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::set<std::string> stages;
  for (const auto& st : j.at("op_profile")) {
    stages.insert(st.at("stage").get<std::string>());
    double op_s = 0;
    for (const auto& o : st.at("ops")) op_s += o.at("seconds").get<double>();
    EXPECT_LE(op_s, st.at("wall_s").get<double>() * 1.0001) << st.at("stage");
    EXPECT_FALSE(st.at("ops").empty()) << st.at("stage");
  }
  for (const char* s : {"vision encoder", "projector", "prefill", "decode, batch 1, page context",
                        "decode, batch 1, empty context", "decode, batch 2"})
    EXPECT_TRUE(stages.count(s)) << s;
  const auto& vision = j.at("op_profile").at(0);
  ASSERT_EQ(vision.at("stage"), "vision encoder");
  const int64_t patches = 22 * 16;
  bool saw_attention = false;
  for (const auto& o : vision.at("ops"))
    if (o.at("op") == "attention") {
      saw_attention = true;
      EXPECT_GT(o.at("flops").get<double>(), 4.0 * patches * patches);  // 4 n^2 per head and dimension
      EXPECT_EQ(o.at("calls").get<double>(), j.at("vision_layers").get<double>());
    }
  EXPECT_TRUE(saw_attention);
  std::filesystem::remove(out);
}

TEST(Perf, TextPromptMode) {
  const std::string cmd = std::string(LOCR_BIN) + " perf --model " + LOCR_FIXTURES_DIR +
                          "/models/tiny_a --prompt-tokens 50 --gen-tokens 2 --repeat 1 >&2";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
