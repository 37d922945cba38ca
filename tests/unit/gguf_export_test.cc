// `locr quantize` (model/lightonocr/gguf_export.h) against llama.cpp's own converter: tiny_a written by locr
// as q8_0 / f32 / f16 / bf16 equals the converter's files (tests/fixtures/gguf/models/, made by
// tools/reference/make_gguf_model_fixtures.py) tensor by tensor (name, order, ne, type, bytes), key
// by key (type and value), and byte for byte as whole files; locr loads what it wrote and computes
// what it computes on the converter's files. Bad input: clear errors, nothing written. Rows that
// are not whole blocks (tiny_d, tiny_c): the converter's and llama-quantize's fallback types, each
// tensor listed, and locr runs the mixed files (their bytes: tests/server/test_quantize.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <filesystem>

#include "core/dtype.h"
#include "core/error.h"
#include "io/file.h"
#include "io/gguf.h"
#include "io/image.h"
#include "model/lightonocr/gguf_export.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/generate.h"
#include "gguf_compare.h"
#include "vector_cosine.h"
#include "../common/error_of.h"

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
}

const std::string kTinyD = kFix + "/models/tiny_d";

std::map<std::string, io::GgmlType> types_of(const std::string& path) {
  std::map<std::string, io::GgmlType> m;
  const auto f = io::GgufFile::open(path);
  for (const io::GgufTensor& t : f->tensors()) m[t.name] = static_cast<io::GgmlType>(t.type);
  return m;
}

TEST(GgufExport, FallbackTypesAreLlamaCpps) {
  using io::GgmlType;
  // The converter: only Q8_0 falls back, to F16.
  EXPECT_EQ(converter_fallback(GgmlType::kQ8_0, 48), GgmlType::kF16);
  EXPECT_EQ(converter_fallback(GgmlType::kQ8_0, 112), GgmlType::kF16);
  EXPECT_EQ(converter_fallback(GgmlType::kQ8_0, 96), GgmlType::kQ8_0);
  EXPECT_EQ(converter_fallback(GgmlType::kBF16, 48), GgmlType::kBF16);
  EXPECT_EQ(converter_fallback(GgmlType::kF16, 7), GgmlType::kF16);
  EXPECT_EQ(converter_fallback(GgmlType::kF32, 7), GgmlType::kF32);
  // llama-quantize's tensor_type_fallback: Q4_K -> Q5_0, Q6_K -> Q8_0, then F16 off 32-blocks.
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ4_K, 1024), GgmlType::kQ4_K);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ4_K, 96), GgmlType::kQ5_0);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ4_K, 48), GgmlType::kF16);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ6_K, 3072), GgmlType::kQ6_K);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ6_K, 96), GgmlType::kQ8_0);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ6_K, 112), GgmlType::kF16);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ8_0, 64), GgmlType::kQ8_0);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ8_0, 48), GgmlType::kF16);
  EXPECT_EQ(llama_quantize_fallback(GgmlType::kQ5_0, 48), GgmlType::kF16);
  // The Q4_K_M types of tiny_d (2 layers; use_more_bits: layer 1), rows of 48, 96 (attn_output), 112 (ffn_down).
  EXPECT_EQ(q4_k_m_choice("token_embd.weight", 48, 2, true), GgmlType::kQ8_0);
  EXPECT_EQ(q4_k_m_type("token_embd.weight", 48, 2, true), GgmlType::kF16);
  EXPECT_EQ(q4_k_m_type("blk.0.attn_output.weight", 96, 2, true), GgmlType::kQ5_0);
  EXPECT_EQ(q4_k_m_choice("blk.1.ffn_down.weight", 112, 2, true), GgmlType::kQ6_K);
  EXPECT_EQ(q4_k_m_type("blk.1.ffn_down.weight", 112, 2, true), GgmlType::kF16);
  EXPECT_EQ(q4_k_m_choice("blk.0.ffn_down.weight", 112, 2, true), GgmlType::kQ4_K);
  EXPECT_EQ(q4_k_m_type("blk.0.ffn_down.weight", 112, 2, true), GgmlType::kF16);
}

TEST(GgufExport, Q5_0QuantizerRoundTrips) {
  // quantize_row_q5_0_ref: d = (the value of largest magnitude) / -16, so that value is the quant 0;
  // every value within half a step of its dequantized one, but those clamped to quant 31 (the
  // opposite extreme, -16 d, is not representable) within a step; an all-zero block is d = -0
  // (0 / -16), quants 16.
  std::vector<float> x(96);
  for (size_t i = 0; i < 32; ++i) x[i] = std::sin(0.7f * i) * 0.3f;
  x[5] = -0.9f;
  for (size_t i = 32; i < 64; ++i) x[i] = 0.01f * (static_cast<float>(i) - 40.f);
  std::vector<uint8_t> q(3 * 22);
  quantize_row_q5_0(x.data(), q.data(), 96);
  std::vector<float> back(96);
  io::dequantize_row(static_cast<uint32_t>(io::GgmlType::kQ5_0), q.data(), back.data(), 96);
  for (int b = 0; b < 3; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    for (int j = 0; j < 32; ++j) {
      // A step at the extremes (quant 31 holds 15 d, not the 16 d the opposite extreme would need);
      // d's F16 rounding adds up to 16 d 2^-11.
      const float step = amax / 16, v = x[32 * b + j];
      EXPECT_LE(std::fabs(back[32 * b + j] - v), (std::fabs(v) > 15 * step ? step : step / 2) * 1.05f + 1e-6f)
          << b << " " << j;
    }
  }
  EXPECT_EQ(back[5], -16 * f16_to_f32(f32_to_f16(-0.9f / -16)));  // the extreme value: quant 0, d rounded to F16
  const uint8_t* z = q.data() + 2 * 22;
  EXPECT_EQ(z[0], 0x00);  // d = -0 (F16 0x8000)
  EXPECT_EQ(z[1], 0x80);
  EXPECT_EQ(z[2] & z[3] & z[4] & z[5], 0xFF);            // fifth bits all set (16)
  for (int j = 6; j < 22; ++j) EXPECT_EQ(z[j], 0) << j;  // low nibbles 0
}

// tiny_d: text hidden 48, ffn 112 (head_dim 24 x 4 heads = 96), vision 32 / 64; tiny_c: vision
// hidden 48. --type q8_0 writes what the converter writes: F16 for every weight whose rows are not
// whole 32-blocks (tests/server/test_quantize.py compares tiny_d's files with the SHA-256 of the
// converter's), each one listed.
TEST(GgufExport, Q8_0FallsBackToF16WhereTheConverterDoes) {
  const std::string d = out_dir();
  {
    const std::string text = d + "/tiny_d-q8_0.gguf";
    const GgufExportResult r = export_gguf(kTinyD, text, default_mmproj_path(text), GgufOutType::kQ8_0);
    std::set<std::string> want = {"token_embd.weight", "mm.2.weight"};
    for (const char* l : {"blk.0.", "blk.1."})
      for (const char* w : {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up", "ffn_down"})
        want.insert(std::string(l) + w + ".weight");
    std::set<std::string> got;
    for (const GgufFallback& f : r.fallbacks) {
      got.insert(f.name);
      EXPECT_EQ(f.chosen, io::GgmlType::kQ8_0) << f.name;
      EXPECT_EQ(f.written, io::GgmlType::kF16) << f.name;
      EXPECT_EQ(f.mmproj, f.name == "mm.2.weight") << f.name;
      EXPECT_EQ(f.cols, f.name.find("ffn_down") != std::string::npos ? 112 : 48) << f.name;
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(r.fallbacks.size(), want.size());
    // Q8_0: attn_output (rows of 96) of both layers; the 7 vision matrices and mm.1 (rows of 32 / 64).
    EXPECT_EQ(r.q8_0, 2 + 8);
    EXPECT_EQ(r.quantized, 10);
    // The files say so, and a fallen-back tensor is the f16 export's, byte for byte (the same
    // round-to-nearest-even of the F32 weights); Q8_0 and F32 tensors as written.
    const std::string f16 = d + "/tiny_d-f16.gguf";
    export_gguf(kTinyD, f16, default_mmproj_path(f16), GgufOutType::kF16);
    for (const auto& [mine, ref] :
         {std::pair{text, f16}, std::pair{default_mmproj_path(text), default_mmproj_path(f16)}}) {
      const auto a = io::GgufFile::open(mine), b = io::GgufFile::open(ref);
      for (const io::GgufTensor& t : a->tensors()) {
        const io::GgufTensor* u = b->find(t.name);
        ASSERT_NE(u, nullptr) << t.name;
        const auto type = static_cast<io::GgmlType>(t.type);
        if (want.count(t.name)) {
          EXPECT_EQ(type, io::GgmlType::kF16) << t.name;
          EXPECT_TRUE(a->data(t) == b->data(*u)) << t.name;
        } else if (t.ne.size() == 2 && t.name != "mm.patch_merger.weight") {
          EXPECT_EQ(type, io::GgmlType::kQ8_0) << t.name;
        } else {
          EXPECT_EQ(type, io::GgmlType::kF32) << t.name;
        }
      }
    }
  }
  {
    // tiny_c: the text model all Q8_0 (rows of 64 / 128); vision rows of 48 F16.
    const std::string text = d + "/tiny_c-q8_0.gguf";
    const GgufExportResult r =
        export_gguf(kFix + "/models/tiny_c", text, default_mmproj_path(text), GgufOutType::kQ8_0);
    std::set<std::string> want = {"mm.1.weight"};
    for (const char* l : {"v.blk.0.", "v.blk.1."})
      for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up"})
        want.insert(std::string(l) + w + ".weight");
    std::set<std::string> got;
    for (const GgufFallback& f : r.fallbacks) {
      got.insert(f.name);
      EXPECT_TRUE(f.mmproj) << f.name;
      EXPECT_EQ(f.cols, 48) << f.name;
    }
    EXPECT_EQ(got, want);
    const auto tt = types_of(text);
    for (const auto& [n, ty] : tt) {
      const bool vec = n.find("norm") != std::string::npos;
      EXPECT_EQ(ty, vec ? io::GgmlType::kF32 : io::GgmlType::kQ8_0) << n;
    }
    const auto mt = types_of(default_mmproj_path(text));
    EXPECT_EQ(mt.at("v.blk.0.ffn_down.weight"), io::GgmlType::kQ8_0);
    EXPECT_EQ(mt.at("mm.2.weight"), io::GgmlType::kQ8_0);
    EXPECT_EQ(mt.at("mm.1.weight"), io::GgmlType::kF16);
    EXPECT_EQ(mt.at("v.blk.1.attn_q.weight"), io::GgmlType::kF16);
  }
  // f16 / bf16 / f32 never fall back.
  for (GgufOutType t : {GgufOutType::kF16, GgufOutType::kBF16, GgufOutType::kF32}) {
    const std::string text = d + "/tiny_d-plain.gguf";
    EXPECT_TRUE(export_gguf(kTinyD, text, default_mmproj_path(text), t).fallbacks.empty());
  }
}

// --type q4_k_m on rows that are not whole 256-blocks: llama-quantize's fallbacks (Q4_K -> Q5_0 on
// 32-blocks, else F16; the Q6_K and Q8_0 head choices -> F16 off 32-blocks); the mmproj the q8_0
// one. tests/server/test_quantize.py compares the text file with llama_model_quantize's SHA-256.
TEST(GgufExport, Q4_KMFallsBackWhereLlamaQuantizeDoes) {
  const std::string d = out_dir(), text = d + "/tiny_d-q4_k_m.gguf";
  const GgufExportResult r = export_gguf(kTinyD, text, default_mmproj_path(text), GgufOutType::kQ4_K_M);
  EXPECT_EQ(r.q4_k, 0);
  EXPECT_EQ(r.q6_k, 0);
  EXPECT_EQ(r.q5_0, 2);       // attn_output, rows of 96
  EXPECT_EQ(r.q8_0, 8);       // the mmproj's
  EXPECT_EQ(r.fallbacks.size(), 1u + 7 * 2 + 1);  // every text weight, and mm.2
  for (const GgufFallback& f : r.fallbacks) {
    SCOPED_TRACE(f.name);
    if (f.mmproj) {
      EXPECT_EQ(f.name, "mm.2.weight");
      continue;
    }
    const bool more_bits = f.name == "blk.1.attn_v.weight" || f.name == "blk.1.ffn_down.weight";
    const io::GgmlType chosen = f.name == "token_embd.weight" ? io::GgmlType::kQ8_0
                                : more_bits                   ? io::GgmlType::kQ6_K
                                                              : io::GgmlType::kQ4_K;
    EXPECT_EQ(f.chosen, chosen);
    EXPECT_EQ(f.written, f.name.find("attn_output") != std::string::npos ? io::GgmlType::kQ5_0 : io::GgmlType::kF16);
  }
  // The Q5_0 tensors dequantize to within half a step of the f32 export's weights.
  const std::string f32 = d + "/tiny_d-f32.gguf";
  export_gguf(kTinyD, f32, default_mmproj_path(f32), GgufOutType::kF32);
  const auto a = io::GgufFile::open(text), b = io::GgufFile::open(f32);
  for (const char* n : {"blk.0.attn_output.weight", "blk.1.attn_output.weight"}) {
    const io::GgufTensor* t = a->find(n);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, static_cast<uint32_t>(io::GgmlType::kQ5_0));
    const std::vector<float> got = a->dequantize(*t), want = b->dequantize(*b->find(n));
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < want.size(); j += 32) {
      float amax = 0;
      for (size_t k = j; k < j + 32; ++k) amax = std::max(amax, std::fabs(want[k]));
      // Half a step, a step where the opposite extreme is clamped to quant 31 (and d's F16 rounding).
      for (size_t k = j; k < j + 32; ++k) ASSERT_LE(std::fabs(got[k] - want[k]), amax / 16 * 1.05f + 1e-6f) << n;
    }
  }
  // The mmproj is the q8_0 export's.
  const std::string q8 = d + "/tiny_d-q8_0-for-k.gguf";
  export_gguf(kTinyD, q8, default_mmproj_path(q8), GgufOutType::kQ8_0);
  EXPECT_TRUE(io::read_file(default_mmproj_path(text)) == io::read_file(default_mmproj_path(q8)));
}

using test::cosine;

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// locr loads the mixed files (F16 and Q8_0 weights side by side; Q5_0 dequantized at load) and
// computes close to the safetensors model.
TEST(GgufExport, LocrRunsTheFallbackFiles) {
  const std::string d = out_dir();
  const Outputs dir = run_case(kTinyD, "", "ref");
  ASSERT_FALSE(dir.logits.empty());
  for (const auto& [type, name] : std::vector<std::pair<GgufOutType, std::string>>{{GgufOutType::kQ8_0, "q8_0"},
                                                                                  {GgufOutType::kQ4_K_M, "q4_k_m"}}) {
    SCOPED_TRACE(name);
    const std::string text = d + "/run-d-" + name + ".gguf", mmproj = default_mmproj_path(text);
    export_gguf(kTinyD, text, mmproj, type);
    {
      LoadOptions lo;
      lo.backend = "cpu-f32";
      lo.mmproj = mmproj;
      const auto m = LightOnOcr::load(text, lo);
      const ModelWeights& w = m->weights();
      // Run as stored: the F16 weights, and the Q8_0 ones by the int8 kernels.
      EXPECT_EQ(w.text.layers[0].q_proj.dtype, DType::kF16);
      EXPECT_EQ(w.text.layers[0].down_proj.dtype, DType::kF16);
      EXPECT_EQ(w.text.embed_tokens.dtype, DType::kF16);
      // Q5_0 has no native kernel: dequantized at load.
      EXPECT_EQ(w.text.layers[0].o_proj.dtype, type == GgufOutType::kQ8_0 ? DType::kQ8_0 : DType::kF32);
      EXPECT_EQ(w.projector.linear_1.dtype, DType::kQ8_0);
      EXPECT_EQ(w.projector.linear_2.dtype, DType::kF16);
      EXPECT_EQ(w.vision.layers[0].q_proj.dtype, DType::kQ8_0);
    }
    const Outputs ref = run_case(text, mmproj, "ref");
    const Outputs cpu = run_case(text, mmproj, "cpu-f32");
    ASSERT_EQ(ref.tokens.size(), 8u);
    ASSERT_EQ(cpu.tokens.size(), 8u);
    const double dl = max_abs(ref.logits, dir.logits), cl = cosine(ref.logits, dir.logits);
    const double ce = cosine(ref.embeds, dir.embeds), cc = cosine(cpu.logits, ref.logits);
    std::printf("tiny_d %s GGUF (ref) vs safetensors (ref): logits max abs %.4g, cosine %.6f; image embeds cosine "
                "%.6f; cpu-f32 vs ref on the GGUF: logits cosine %.6f\n", name.c_str(), dl, cl, ce, cc);
    // F16 weights and Q8_0 attn_output: max abs 0.11, cosine 0.99997 (measured); with Q5_0 (a
    // 5-bit step, 8 times Q8_0's) attn_output: 0.84, 0.9978. Logit std is about 3.
    const bool q5 = type == GgufOutType::kQ4_K_M;
    EXPECT_GT(dl, 0.0);
    EXPECT_LT(dl, q5 ? 1.5 : 0.5);
    EXPECT_GT(cl, q5 ? 0.995 : 0.999);
    EXPECT_GT(ce, 0.999);  // the same mmproj in both
    EXPECT_GT(cc, 0.999);
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
