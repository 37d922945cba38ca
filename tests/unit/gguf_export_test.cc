// `locr quantize` (model/gguf_export.h) against llama.cpp's own converter: tiny_a written by locr
// as q8_0 / f32 / f16 / bf16 equals the converter's files (tests/fixtures/gguf/models/, made by
// tools/reference/make_gguf_model_fixtures.py) tensor by tensor (name, order, ne, type, bytes), key
// by key (type and value), and byte for byte as whole files; locr loads what it wrote and computes
// what it computes on the converter's files. Bad input: clear errors, nothing written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <tuple>
#include <filesystem>

#include "core/error.h"
#include "io/file.h"
#include "io/gguf.h"
#include "io/image.h"
#include "model/gguf_export.h"
#include "model/lighton_ocr.h"
#include "runtime/generate.h"

namespace fs = std::filesystem;

namespace locr::model {
namespace {

using nlohmann::json;

const std::string kFix = LOCR_FIXTURES_DIR;
const std::string kTinyA = kFix + "/models/tiny_a";
std::string fixture(const std::string& name) { return kFix + "/gguf/models/" + name; }

std::string out_dir() {
  const fs::path d = fs::temp_directory_path() / ("locr_gguf_export_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d.string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Every tensor (order, name, ne, type, bytes) and every metadata key (type, element type, value).
void expect_same_gguf(const std::string& got_path, const std::string& want_path) {
  SCOPED_TRACE(got_path + " vs " + want_path);
  const auto got = io::GgufFile::open(got_path), want = io::GgufFile::open(want_path);
  ASSERT_EQ(got->tensors().size(), want->tensors().size());
  for (size_t i = 0; i < want->tensors().size(); ++i) {
    const io::GgufTensor &g = got->tensors()[i], &w = want->tensors()[i];
    EXPECT_EQ(g.name, w.name) << i;
    EXPECT_EQ(g.ne, w.ne) << w.name;
    EXPECT_EQ(g.type, w.type) << w.name;
    EXPECT_EQ(g.offset, w.offset) << w.name;
    EXPECT_TRUE(got->data(g) == want->data(w)) << w.name << ": data bytes differ";
  }
  EXPECT_EQ(got->alignment(), want->alignment());
  for (const auto& [k, t] : want->types()) {
    ASSERT_TRUE(got->has(k)) << "missing key " << k;
    EXPECT_EQ(got->types().at(k), t) << k;
    if (want->array_types().count(k)) {
      EXPECT_EQ(got->array_types().at(k), want->array_types().at(k)) << k;
    }
    EXPECT_TRUE(got->metadata()[k] == want->metadata()[k]) << k << ": " << got->metadata()[k].dump().substr(0, 200)
                                                           << " vs " << want->metadata()[k].dump().substr(0, 200);
  }
  for (const auto& [k, t] : got->types()) EXPECT_TRUE(want->has(k)) << "extra key " << k;
  // And therefore (same key order too) the same file.
  EXPECT_TRUE(io::read_file(got_path) == io::read_file(want_path)) << "the files differ";
}

TEST(GgufExport, Q8_0EqualsLlamaCppsConverter) {
  const std::string text = out_dir() + "/tiny_a-q8_0.gguf";
  const GgufExportResult r = export_gguf(kTinyA, text, default_mmproj_path(text), GgufOutType::kQ8_0);
  EXPECT_EQ(r.text_tensors, 24);
  EXPECT_EQ(r.mmproj_tensors, 24);
  // Text: token_embd and 7 matrices per layer; vision: 7 per layer + mm.1, mm.2 (not patch_embd,
  // patch_merger: F32, as the converter forces them).
  EXPECT_EQ(r.quantized, 1 + 2 * 7 + 2 * 7 + 2);
  EXPECT_EQ(default_mmproj_path(text), out_dir() + "/mmproj-tiny_a-q8_0.gguf");
  expect_same_gguf(text, fixture("tiny_a-q8_0.gguf"));
  // No Q8_0 mmproj fixture: the tensors' types, then the data of those that are not quantized and
  // the metadata but file_type equal the f32 mmproj's; the Q8_0 tensors dequantize to within a
  // Q8_0 step of the F32 ones.
  const auto mm = io::GgufFile::open(default_mmproj_path(text));
  const auto ref = io::GgufFile::open(fixture("mmproj-tiny_a-f32.gguf"));
  ASSERT_EQ(mm->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const io::GgufTensor &g = mm->tensors()[i], &w = ref->tensors()[i];
    ASSERT_EQ(g.name, w.name);
    EXPECT_EQ(g.ne, w.ne);
    const bool forced_f32 = w.name == "v.patch_embd.weight" || w.name == "mm.patch_merger.weight";
    const bool q8 = w.ne.size() == 2 && !forced_f32;
    EXPECT_EQ(g.type, q8 ? 8u : 0u) << w.name;
    if (!q8) {
      EXPECT_TRUE(mm->data(g) == ref->data(w)) << w.name;
      continue;
    }
    const std::vector<float> a = mm->dequantize(g), b = ref->dequantize(w);
    for (size_t j = 0; j < b.size(); j += 32) {
      float amax = 0;
      for (size_t k = j; k < j + 32; ++k) amax = std::max(amax, std::fabs(b[k]));
      for (size_t k = j; k < j + 32; ++k) ASSERT_LE(std::fabs(a[k] - b[k]), amax / 127 * 0.6f + 1e-6f) << w.name;
    }
  }
  for (const auto& kv : ref->metadata().items()) {
    if (kv.key() != "general.file_type") {
      EXPECT_TRUE(mm->metadata()[kv.key()] == kv.value()) << kv.key();
    }
  }
  EXPECT_EQ(mm->metadata()["general.file_type"], 7);
}

TEST(GgufExport, F32F16Bf16EqualLlamaCppsConverter) {
  for (const auto& [type, name] : std::vector<std::pair<GgufOutType, std::string>>{
           {GgufOutType::kF32, "f32"}, {GgufOutType::kF16, "f16"}, {GgufOutType::kBF16, "bf16"}}) {
    SCOPED_TRACE(name);
    const std::string text = out_dir() + "/tiny_a-" + name + ".gguf";
    export_gguf(kTinyA, text, default_mmproj_path(text), type);
    expect_same_gguf(text, fixture("tiny_a-" + name + ".gguf"));
    if (type != GgufOutType::kBF16) expect_same_gguf(default_mmproj_path(text), fixture("mmproj-tiny_a-" + name + ".gguf"));
  }
}

struct Outputs {
  std::vector<float> logits, embeds;
  std::vector<int32_t> tokens;
};

Outputs run_case(const std::string& text, const std::string& mmproj, const std::string& backend) {
  LoadOptions lo;
  lo.backend = backend;
  lo.mmproj = mmproj;
  const auto m = LightOnOcr::load(text, lo);
  std::vector<io::Image> images{io::load_image(kFix + "/images/page_small.png")};
  const std::string prompt = "Describe.";
  const Prompt p = m->build_prompt(LightOnOcr::make_messages(nullptr, &prompt, 1), images);
  runtime::DecodeParams go;
  go.max_tokens = 8;
  go.sampling.temperature = 0;
  runtime::GenerateHooks hooks;
  Outputs r;
  hooks.on_prompt_logits = [&](const float* l, int64_t n) { r.logits.assign(l, l + n); };
  hooks.on_images = [&](const ImageEncoding& e) {
    r.embeds.assign(e.embeds.data<float>(), e.embeds.data<float>() + e.embeds.numel());
  };
  r.tokens = runtime::generate(*m, p, go, hooks).tokens;
  return r;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return !a.empty() && a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

TEST(GgufExport, LocrLoadsWhatItWroteAndComputesTheSame) {
  // Written into a directory without tokenizer.json: the tokenizer comes from tokenizer.ggml.*.
  for (const auto& [type, name] : std::vector<std::pair<GgufOutType, std::string>>{{GgufOutType::kF32, "f32"},
                                                                                  {GgufOutType::kQ8_0, "q8_0"}}) {
    SCOPED_TRACE(name);
    const std::string text = out_dir() + "/run-" + name + ".gguf";
    export_gguf(kTinyA, text, default_mmproj_path(text), type);
    ASSERT_FALSE(io::file_exists(out_dir() + "/tokenizer.json"));
    // With the converter's F32 mmproj (there is no Q8_0 mmproj fixture), the text files compared.
    const Outputs mine = run_case(text, fixture("mmproj-tiny_a-f32.gguf"), "cpu-f32");
    const Outputs conv = run_case(fixture("tiny_a-" + name + ".gguf"), fixture("mmproj-tiny_a-f32.gguf"), "cpu-f32");
    EXPECT_TRUE(bit_equal(mine.logits, conv.logits));
    EXPECT_TRUE(bit_equal(mine.embeds, conv.embeds));
    EXPECT_EQ(mine.tokens, conv.tokens);
    // Both files of locr's.
    const Outputs both = run_case(text, default_mmproj_path(text), "cpu-f32");
    ASSERT_EQ(both.tokens.size(), 8u);
    if (type == GgufOutType::kF32) {
      EXPECT_TRUE(bit_equal(both.logits, conv.logits));
      EXPECT_TRUE(bit_equal(both.embeds, conv.embeds));
      // And the safetensors directory itself, bit for bit (the same weights, the same math).
      const Outputs dir = run_case(kTinyA, "", "cpu-f32");
      EXPECT_TRUE(bit_equal(both.logits, dir.logits));
      EXPECT_EQ(both.tokens, dir.tokens);
    } else {
      // The Q8_0 vision encoder and projector (int8 kernels, activations quantized per block too)
      // against the F32 ones: close, not equal; within the seeds' eval thresholds (max abs < 1,
      // cosine > 0.999) on the image embeddings and the prompt logits.
      for (const auto& [what, a, b] : std::vector<std::tuple<const char*, const std::vector<float>*, const std::vector<float>*>>{
               {"image embeds", &both.embeds, &conv.embeds}, {"logits", &both.logits, &conv.logits}}) {
        ASSERT_EQ(a->size(), b->size()) << what;
        double d = 0, ab = 0, aa = 0, bb = 0;
        for (size_t i = 0; i < b->size(); ++i) {
          d = std::max(d, std::fabs(double((*a)[i]) - (*b)[i]));
          ab += double((*a)[i]) * (*b)[i], aa += double((*a)[i]) * (*a)[i], bb += double((*b)[i]) * (*b)[i];
        }
        const double cos = ab / std::sqrt(aa * bb);
        std::printf("q8_0 mmproj vs f32 mmproj, %s: max abs diff %.4g, cosine %.6f\n", what, d, cos);
        EXPECT_GT(d, 0.0) << what;
        EXPECT_LT(d, 1.0) << what;
        EXPECT_GT(cos, 0.999) << what;
      }
    }
  }
}

TEST(GgufExport, ShardedModelRoundTrips) {
  // tiny_b: two safetensors shards, every width a multiple of 32.
  const std::string text = out_dir() + "/tiny_b-q8_0.gguf";
  const GgufExportResult r = export_gguf(kFix + "/models/tiny_b", text, out_dir() + "/tiny_b-mm.gguf", GgufOutType::kQ8_0);
  EXPECT_GT(r.quantized, 0);
  const Outputs q = run_case(text, out_dir() + "/tiny_b-mm.gguf", "ref");
  EXPECT_EQ(q.tokens.size(), 8u);
}

TEST(GgufExport, BadInputIsAClearError) {
  EXPECT_EQ(parse_gguf_out_type("Q8_0"), GgufOutType::kQ8_0);
  EXPECT_EQ(parse_gguf_out_type("bf16"), GgufOutType::kBF16);
  EXPECT_EQ(parse_gguf_out_type("Q4_K_M"), GgufOutType::kQ4_K_M);
  EXPECT_NE(error_of([] { parse_gguf_out_type("q5_k_m"); }).find("--type q5_k_m is not supported yet"), std::string::npos);
  EXPECT_NE(error_of([] { parse_gguf_out_type("int4"); }).find("use q4_k_m, q8_0, f16, bf16 or f32"), std::string::npos);
  const std::string d = out_dir();
  EXPECT_NE(error_of([&] { export_gguf(kTinyA, d + "/nope/x.gguf", d + "/mm-x.gguf", GgufOutType::kQ8_0); })
                .find("output directory " + d + "/nope does not exist"),
            std::string::npos);
  EXPECT_NE(error_of([&] { export_gguf(kTinyA, d + "/x.gguf", d + "/x.gguf", GgufOutType::kQ8_0); }).find("same file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { export_gguf(d + "/no_model", d + "/x.gguf", d + "/mm-x.gguf", GgufOutType::kF32); })
                .find("model directory not found"),
            std::string::npos);
  // tiny_d's text hidden size is 48, tiny_c's vision hidden size 48: no Q8_0; nothing is written.
  for (const char* m : {"tiny_d", "tiny_c"}) {
    SCOPED_TRACE(m);
    const std::string text = d + "/" + m + "-q8_0.gguf";
    const std::string e = error_of([&] { export_gguf(kFix + "/models/" + m, text, d + "/mm-" + m + ".gguf", GgufOutType::kQ8_0); });
    EXPECT_NE(e.find("--type q8_0: tensor '"), std::string::npos) << e;
    EXPECT_NE(e.find("has rows of 48 elements, not a multiple of Q8_0's 32-element block"), std::string::npos) << e;
    EXPECT_FALSE(io::file_exists(text));
    EXPECT_FALSE(io::file_exists(d + "/mm-" + m + ".gguf"));
    // Nor Q4_K_M (rows of 48: no 256-element super-blocks).
    const std::string ek = error_of([&] { export_gguf(kFix + "/models/" + m, text, d + "/mm-" + m + ".gguf", GgufOutType::kQ4_K_M); });
    EXPECT_NE(ek.find("--type q4_k_m: tensor '"), std::string::npos) << ek;
    EXPECT_FALSE(io::file_exists(text));
    // f16 is fine for them.
    export_gguf(kFix + "/models/" + m, text, d + "/mm-" + m + ".gguf", GgufOutType::kF16);
    EXPECT_TRUE(io::file_exists(text));
  }
}

}  // namespace
}  // namespace locr::model

namespace locr::model {
namespace {

// llama.cpp's Q4_K_M choices for qwen3 (llama-quant.cpp llama_tensor_get_type), written out for
// 8 and 28 layers: use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
TEST(GgufExport, Q4_KMMixIsLlamaQuantizes) {
  using io::GgmlType;
  const std::set<int> more8 = {0, 3, 6, 7}, more28 = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
  for (const auto& [n, more] : {std::pair{8, more8}, std::pair{28, more28}})
    for (int i = 0; i < n; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      const GgmlType hi = more.count(i) ? GgmlType::kQ6_K : GgmlType::kQ4_K;
      EXPECT_EQ(q4_k_m_type(p + "attn_v.weight", 1024, n, true), hi) << n << " " << p;
      EXPECT_EQ(q4_k_m_type(p + "ffn_down.weight", 3072, n, true), hi) << n << " " << p;
      for (const char* t : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
        EXPECT_EQ(q4_k_m_type(p + t, 1024, n, true), GgmlType::kQ4_K) << n << " " << p << t;
    }
  // The head: token_embd when tied, output.weight otherwise; Q8_0 when its rows are not whole 256-blocks.
  EXPECT_EQ(q4_k_m_type("token_embd.weight", 1024, 28, true), GgmlType::kQ6_K);
  EXPECT_EQ(q4_k_m_type("token_embd.weight", 1024, 28, false), GgmlType::kQ4_K);
  EXPECT_EQ(q4_k_m_type("output.weight", 1024, 28, false), GgmlType::kQ6_K);
  EXPECT_EQ(q4_k_m_type("token_embd.weight", 64, 28, true), GgmlType::kQ8_0);
  // tensor_type_fallback: a Q6_K choice on rows of 32-blocks only is Q8_0.
  EXPECT_EQ(q4_k_m_type("blk.0.attn_v.weight", 96, 8, true), GgmlType::kQ8_0);
}

}  // namespace
}  // namespace locr::model
