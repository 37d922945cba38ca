// `locr generate` and `locr dump` on a Qwen3.5 model (LightOnOCR-3-0.8B layout: the
// tests/fixtures/qwen35/qwen35_a fixture) through the real binary: the architecture is picked from
// config.json, --chat-template-kwargs reaches the template, and what `dump` writes equals what
// transformers computed (ids, the three position rows, pixel values, greedy ids); `perf` and `eval`
// run it. A command that does not run Qwen3.5 models yet says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "io/file.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace locr::test {
namespace {

const std::string kModel = std::string(LOCR_FIXTURES_DIR) + "/qwen35/qwen35_a";
const std::string kImage = std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png";
const std::string kKwargs = " --chat-template-kwargs '{\"enable_thinking\": false}'";

std::vector<int64_t> i64(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.raw(), v.size() * sizeof(int64_t));
  return v;
}

TEST(Qwen35Cli, DumpMatchesTransformers) {
  TempDir t;
  const std::string out = (t / "d.safetensors");
  const auto r = run_cmd(std::string(LOCR_BIN) + " dump --threads 2 --backend cpu-f32 --model " + kModel + " --image " +
                         kImage + kKwargs + " --max-tokens 24 --out " + out + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto got = io::SafetensorsFile::open(out);
  const auto ref = io::SafetensorsFile::open(kModel + "/cases/image.safetensors");
  EXPECT_EQ(i64(got->get("input_ids")), i64(ref->get("input_ids")));
  EXPECT_EQ(i64(got->get("position_ids")), i64(ref->get("position_ids")));
  EXPECT_EQ(got->get("position_ids").shape(), (std::vector<int64_t>{3, ref->get("input_ids").dim(0)}));
  const Tensor pv = got->get("pixel_values"), rpv = ref->get("pixel_values");
  ASSERT_EQ(pv.shape(), rpv.shape());
  EXPECT_EQ(0, std::memcmp(pv.raw(), rpv.raw(), pv.nbytes()));
  EXPECT_EQ(i64(got->get("generated_ids")), i64(ref->get("generated_ids")));
  for (const char* name : {"vision_hidden", "image_embeds", "hidden.0", "hidden.4", "logits"})
    EXPECT_TRUE(got->has(name)) << name;
}

TEST(Qwen35Cli, TemplateKwargsReachTheTemplate) {
  // enable_thinking false ends the prompt with an empty think block, true leaves it open: the
  // real Qwen3.5-0.8B template renders the two differently, so the ids differ.
  TempDir t;
  const auto with = run_cmd(std::string(LOCR_BIN) + " dump --threads 2 --backend cpu-f32 --model " + kModel +
                            " --prompt hello" + kKwargs + " --max-tokens 1 --out " + (t / "a.safetensors") +
                            " 2>&1");
  ASSERT_EQ(with.status, 0) << with.out;
  const auto without = run_cmd(std::string(LOCR_BIN) + " dump --threads 2 --backend cpu-f32 --model " + kModel +
                               " --prompt hello --chat-template-kwargs '{\"enable_thinking\": true}' --max-tokens 1 --out " +
                               (t / "b.safetensors") + " 2>&1");
  ASSERT_EQ(without.status, 0) << without.out;
  EXPECT_NE(i64(io::SafetensorsFile::open((t / "a.safetensors"))->get("input_ids")),
            i64(io::SafetensorsFile::open((t / "b.safetensors"))->get("input_ids")));
  const auto bad = run_cmd(std::string(LOCR_BIN) + " dump --model " + kModel +
                           " --prompt hello --chat-template-kwargs '[1]' --out " + (t / "c.safetensors") + " 2>&1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("must be a JSON object"), std::string::npos) << bad.out;
}

TEST(Qwen35Cli, GenerateRuns) {
  const auto r = run_cmd(std::string(LOCR_BIN) + " generate --threads 2 --model " + kModel + " --image " + kImage + kKwargs +
                         " --temperature 0 --max-tokens 8 --no-loop-guard 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("generated 8 tokens"), std::string::npos) << r.out;
}

// `locr perf` times every stage of a page on a Qwen3.5 model too (the sequences' state slots and
// M-RoPE rows as the engine gives them); --spec-replay is refused for it, naming why.
TEST(Qwen35Cli, PerfRunsEveryStage) {
  TempDir t;
  const std::string out = t / "perf.json";
  const auto r = run_cmd(std::string(LOCR_BIN) + " perf --threads 2 --model " + kModel +
                         " --image-size 300x200 --gen-tokens 4 --batch 3 --repeat 2 --json " + out + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(io::read_file(out));
  for (const char* k : {"vision_encode_s", "prefill_s", "prefill_tok_s", "decode_tok_s", "decode_batch_tok_s",
                        "peak_rss_bytes", "preprocess_s"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GT(j[k].get<double>(), 0.0) << k;
  }
  // 300 x 200 -> smart_resize within the fixture's 9,216 pixels: 96 x 64, a 6 x 4 grid of 16 px patches.
  EXPECT_EQ(j["vision_patches"].get<int>(), 24);
  EXPECT_EQ(j["image_size"], nlohmann::json::array({96, 64}));
  EXPECT_EQ(j["decode_batch"].get<int>(), 3);
  const auto spec = run_cmd(std::string(LOCR_BIN) + " perf --model " + kModel + " --spec-replay 4 2>&1");
  EXPECT_NE(spec.status, 0);
  EXPECT_NE(spec.out.find("decodes without speculation"), std::string::npos) << spec.out;
}

// `locr eval` (the seeds' eval_accuracy.py) compares backends on a Qwen3.5 model: cpu-f32 against
// the ref oracle passes the seeds' thresholds; a candidate perturbed by noise fails them.
TEST(Qwen35Cli, EvalComparesBackends) {
  TempDir t;
  const auto ok = run_cmd(std::string(LOCR_BIN) + " eval --threads 2 --model " + kModel +
                          " --candidate cpu-f32 --reference ref --output " + (t / "ok.json") + " 2>&1");
  ASSERT_EQ(ok.status, 0) << ok.out;
  const nlohmann::json j = nlohmann::json::parse(io::read_file(t / "ok.json"));
  EXPECT_EQ(j.dump().find("FAIL"), std::string::npos) << j.dump();
  const auto bad = run_cmd(std::string(LOCR_BIN) + " eval --threads 2 --model " + kModel +
                           " --candidate cpu-f32 --reference ref --perturb-candidate 0.5 --output " + (t / "bad.json") +
                           " 2>&1");
  EXPECT_NE(bad.status, 0) << bad.out;
}

// `locr quantize` writes this family's GGUF files as llama.cpp's converter does (the bytes:
// tests/unit/qwen35_gguf_export_test.cc), and locr runs them, q4_k_m ones too.
TEST(Qwen35Cli, QuantizeWritesGgufFilesLocrRuns) {
  TempDir t;
  const auto r = run_cmd(std::string(LOCR_BIN) + " quantize " + kModel + " " + (t / "q.gguf") + " --type q8_0 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + (t / "q.gguf")), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(t / "mmproj-q.gguf"));
  fs::copy_file(std::string(kModel) + "/preprocessor_config.json", t / "preprocessor_config.json");
  const auto g = run_cmd(std::string(LOCR_BIN) + " generate --model " + (t / "q.gguf") + " --mmproj " +
                         (t / "mmproj-q.gguf") + " --image " + LOCR_FIXTURES_DIR + "/images/page_small.png" +
                         " --max-tokens 4 --temperature 0 2>&1");
  EXPECT_EQ(g.status, 0) << g.out;
  const auto k = run_cmd(std::string(LOCR_BIN) + " quantize " + kModel + " " + (t / "k.gguf") + " --type q4_k_m 2>&1");
  ASSERT_EQ(k.status, 0) << k.out;
  const auto gk = run_cmd(std::string(LOCR_BIN) + " generate --model " + (t / "k.gguf") + " --mmproj " +
                          (t / "mmproj-k.gguf") + " --prompt hi --max-tokens 4 --temperature 0 2>&1");
  EXPECT_EQ(gk.status, 0) << gk.out;
}

// Options this family does not have are refused, naming them, by the in-process commands and by serve.
TEST(Qwen35Cli, OptionsTheFamilyLacksAreRefused) {
  for (const std::string extra : {" --image-align 14", " --mmproj x.gguf"}) {
    const auto r = run_cmd(std::string(LOCR_BIN) + " generate --model " + kModel + " --prompt hi" + extra + " 2>&1");
    EXPECT_NE(r.status, 0) << extra;
    EXPECT_NE(r.out.find("--mmproj and --image-align are not supported for Qwen3.5 models"), std::string::npos)
        << extra << ": " << r.out;
  }
  const auto s = run_cmd(std::string(LOCR_BIN) + " serve " + kModel + " --port 0 --max-model-len 4096 --mmproj x.gguf 2>&1");
  EXPECT_NE(s.status, 0);
  EXPECT_NE(s.out.find("not supported for Qwen3.5 models"), std::string::npos) << s.out;
}

}  // namespace
}  // namespace locr::test
