#include <gtest/gtest.h>

#include "test_util.h"

namespace locr::test {
namespace {

TEST(ChatLocal, StreamsAGreedyAnswerEqualToGenerate) {
  const std::string model = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a";
  const std::string flags = " --model " + model + " --prompt 'The future of AI is' --max-tokens 12 --temperature 0 --threads 1";
  const auto chat = run_cmd(std::string(LOCR_BIN) + " chat --mode local" + flags);
  const auto gen = run_cmd(std::string(LOCR_BIN) + " generate" + flags);
  EXPECT_EQ(chat.status, 0);
  EXPECT_FALSE(chat.out.empty());
  EXPECT_EQ(chat.out, gen.out);
}

TEST(ChatLocal, ImageSystemAndSeededSampling) {
  const std::string model = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_c";
  const std::string cmd = std::string(LOCR_BIN) + " chat --model " + model + " --image " + LOCR_FIXTURES_DIR +
                          "/images/page_small.png --system 'Be brief.' --prompt 'Read it.' --max-tokens 8 --seed 3 "
                          "--temperature 0.8 --top-p 0.9 --top-k 50 --threads 1";
  const auto a = run_cmd(cmd), b = run_cmd(cmd);
  EXPECT_EQ(a.status, 0);
  EXPECT_EQ(a.out, b.out);  // same seed, same text
}

TEST(ChatLocal, BadModeIsAnError) {
  EXPECT_NE(run_cmd(std::string(LOCR_BIN) + " chat --mode telepathy --prompt x 2>/dev/null").status, 0);
  EXPECT_NE(run_cmd(std::string(LOCR_BIN) + " chat --mode api --url http://127.0.0.1:1/v1/chat/completions --prompt x 2>/dev/null").status, 0);
}

}  // namespace
}  // namespace locr::test
