// `locr eval` through the real binary on fixture models.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace locr::test {
namespace {

nlohmann::json run_eval(const std::string& model, const std::string& flags, int* status) {
  TempDir t;
  const auto r = run_cmd(std::string(LOCR_BIN) + " eval --threads 2 --model " + model + " --output " + (t / "acc.json") + " " +
                         flags + " 2>&1");
  *status = r.status;
  EXPECT_NE(r.out.find("overall:"), std::string::npos) << r.out;
  return nlohmann::json::parse(read_text(t / "acc.json"));
}

void expect_report_shape(const nlohmann::json& j) {
  ASSERT_TRUE(j.contains("inputs"));
  ASSERT_EQ(j["inputs"].size(), 5u);  // 3 text prompts + 2 synthetic pages
  for (const auto& in : j["inputs"]) {
    ASSERT_TRUE(in["tensors"].contains("logits"));
    ASSERT_TRUE(in["tensors"].contains("hidden.0"));
    for (const char* k : {"max_abs_error", "mean_abs_error", "relative_error", "cosine_similarity"})
      EXPECT_TRUE(in["tensors"]["logits"].contains(k)) << k;
  }
  EXPECT_TRUE(j["inputs"][3]["tensors"].contains("image_embeds"));
  for (const char* k : {"max_abs_error", "mean_abs_error", "relative_error", "min_cosine_similarity", "pass"})
    EXPECT_TRUE(j["summary"].contains(k)) << k;
  EXPECT_EQ(j["thresholds"]["max_abs_error"], 1.0);
  EXPECT_EQ(j["thresholds"]["cosine_similarity"], 0.999);
}

TEST(Eval, Fp32AgainstTheScalarOraclePasses) {
  int st = -1;
  const auto j = run_eval(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", "--candidate cpu-f32 --reference ref", &st);
  EXPECT_EQ(st, 0);
  expect_report_shape(j);
  EXPECT_TRUE(j["pass"].get<bool>());
  EXPECT_LT(j["summary"]["max_abs_error"].get<double>(), 1e-3);
  EXPECT_GT(j["summary"]["min_cosine_similarity"].get<double>(), 0.99999);
}

TEST(Eval, Bf16AgainstFp32PassesTheSeedThresholds) {
  for (const std::string& model : {std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", tiny_model_dir()}) {
    int st = -1;
    const auto j = run_eval(model, "", &st);  // defaults: cpu-bf16 vs cpu-f32
    EXPECT_EQ(st, 0) << model;
    EXPECT_EQ(j["candidate"], "cpu-bf16");
    EXPECT_EQ(j["reference"], "cpu-f32");
    EXPECT_TRUE(j["pass"].get<bool>()) << model;
    EXPECT_GT(j["summary"]["max_abs_error"].get<double>(), 0.0);  // bf16 does differ
  }
}

TEST(Eval, PerturbedCandidateFails) {
  int st = -1;
  const auto j = run_eval(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", "--candidate cpu-f32 --perturb-candidate 2", &st);
  EXPECT_EQ(st, 1);
  EXPECT_FALSE(j["pass"].get<bool>());
  EXPECT_GT(j["summary"]["failed_tensors"].get<int>(), 0);
  // A tighter cosine threshold alone also fails an honest bf16 run.
  const auto k = run_eval(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", "--min-cosine 0.9999999", &st);
  EXPECT_EQ(st, 1);
}

TEST(Eval, ExtraInputsOnly) {
  int st = -1;
  TempDir t;
  const auto r = run_cmd(std::string(LOCR_BIN) + " eval --threads 2 --no-builtin --model " + LOCR_FIXTURES_DIR +
                         "/models/tiny_c --prompt hi --image " + LOCR_FIXTURES_DIR + "/images/page_small.png --output " +
                         (t / "a.json") + " 2>&1");
  st = r.status;
  EXPECT_EQ(st, 0) << r.out;
  const auto j = nlohmann::json::parse(read_text(t / "a.json"));
  EXPECT_EQ(j["inputs"].size(), 2u);
}

}  // namespace
}  // namespace locr::test
