// `locr parity` through the real binary: the transformers fixtures on cpu-bf16 within the BF16
// tolerance (the same check the GPU bundle runs on cuda), on cpu-f32 within the golden tests' FP32
// tolerance, and a golden tampered with fails, naming the tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace locr::test {
namespace {

RunResult run_parity(const std::string& fixtures, const std::string& flags, const std::string& json_out) {
  return run_cmd(std::string(LOCR_BIN) + " parity --threads 2 --fixtures " + fixtures + " --json " + json_out + " " +
                 flags + " 2>&1");
}

int fixture_cases() {
  int n = 0;
  for (const auto& m : fs::directory_iterator(fs::path(LOCR_FIXTURES_DIR) / "models"))
    if (fs::is_directory(m.path() / "cases"))
      for (const auto& c : fs::directory_iterator(m.path() / "cases")) n += c.path().extension() == ".json";
  return n;
}

TEST(Parity, EveryFixtureOnCpuBf16IsWithinTheBf16Tolerance) {
  TempDir t;
  const auto r = run_parity(LOCR_FIXTURES_DIR, "--backend cpu-bf16", t / "p.json");
  EXPECT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(read_text(t / "p.json"));
  EXPECT_EQ(j["passed"].get<int>(), fixture_cases());
  EXPECT_EQ(j["failed"].get<int>(), 0);
  EXPECT_GE(fixture_cases(), 20);
  // BF16 differs from the goldens (it is not the FP32 path), within its bound.
  double worst = 0;
  for (const auto& c : j["cases"])
    for (const auto& [name, s] : c["tensors"].items())
      if (s.contains("max_abs_error")) worst = std::max(worst, s["max_abs_error"].get<double>());
  EXPECT_GT(worst, 1e-4);
}

TEST(Parity, Fp32MeetsTheGoldenTolerance) {
  TempDir t;
  const auto r = run_parity(LOCR_FIXTURES_DIR, "--backend cpu-f32 --model tiny_b", t / "p.json");
  EXPECT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(read_text(t / "p.json"));
  EXPECT_EQ(j["tolerance"]["min_cosine"].get<double>(), 0.99999);
  EXPECT_GT(j["passed"].get<int>(), 0);
  EXPECT_EQ(j["failed"].get<int>(), 0);
}

TEST(Parity, ATamperedGoldenFailsNamingTheTensor) {
  // A copy of tiny_a with its text_only case's logits negated (as a sign error in a kernel would be).
  TempDir t;
  const fs::path fx = fs::path(t.path()) / "fixtures";
  fs::create_directories(fx / "models");
  fs::copy(fs::path(LOCR_FIXTURES_DIR) / "models" / "tiny_a", fx / "models" / "tiny_a", fs::copy_options::recursive);
  const fs::path cases = fx / "models" / "tiny_a" / "cases";
  for (const auto& c : fs::directory_iterator(cases))
    if (c.path().stem() != "text_only") fs::remove(c.path());
  const std::string gold = (cases / "text_only.safetensors").string();
  std::vector<std::pair<std::string, Tensor>> tensors;
  {
    auto f = io::SafetensorsFile::open(gold);
    for (const auto& [name, info] : f->tensors()) {
      Tensor x = f->get(name);  // copied out of the mapping: the file is rewritten below
      x = (x.dtype() == DType::kI64 ? x : x.to_f32()).clone();
      if (name == "logits")
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = -x.data<float>()[i];
      tensors.push_back({name, std::move(x)});
    }
  }
  io::write_safetensors(gold, tensors);
  const auto r = run_parity(fx.string(), "--backend cpu-bf16", t / "p.json");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL   tiny_a/text_only"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("logits: cosine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 passed, 1 failed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace locr::test
