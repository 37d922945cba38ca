// A Qwen3.5 model from llama.cpp's GGUF files (model/qwen35/gguf.h), against the checkpoint they
// were converted from (tests/fixtures/gguf/qwen35/, written by llama.cpp's own convert_hf_to_gguf.py
// from tests/fixtures/qwen35/; tools/reference/make_gguf_qwen35_fixtures.py):
//   - --outtype f32 holds the checkpoint's own floats: every weight locr binds from it equals, bit
//     for bit, what it binds from the safetensors (A_log, stored as -exp(A_log), to 1e-6), so every
//     transform the converter applies (1 + w norms, the split Conv3d, interleaved q / gate rows) is
//     undone exactly; the 4B layout's value heads stay in the file's tiled order (the kernel reads
//     them so, DeltaNetParams::tiled): equal to the checkpoint's reordered here by this test's own
//     transcription of the converter's reorder (rows of qkv's v part, z, b, a and the conv's v
//     channels, A_log and dt_bias, out_proj's columns);
//   - --outtype q8_0: each Q8_0 tensor equals, byte for byte, what locr's own Q8_0 quantizer makes
//     of the checkpoint's (the quantizer llama.cpp's converter runs; tests/unit/quantize_*); the
//     rest within 8-bit rounding;
//   - the config read from the metadata equals config.json's; wrong files are refused by name.
// End-to-end numerics of the GGUF models against transformers: tests/golden/qwen35_golden_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "core/error.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "model/qwen35/gguf.h"
#include "model/qwen35/model.h"
#include "../common/qwen35_matrices.h"
#include "../common/error_of.h"

namespace locr::model::qwen35 {
namespace {

const std::string kFixtures = LOCR_FIXTURES_DIR;

std::string gguf(const std::string& model, const std::string& file) {
  return kFixtures + "/gguf/qwen35/" + model + "/" + file;
}

GgufFiles open_files(const std::string& model, const std::string& text_type, const std::string& mmproj_type) {
  return open_gguf(io::GgufFile::open(gguf(model, model + "-" + text_type + ".gguf")),
                   gguf(model, "mmproj-" + model + "-" + mmproj_type + ".gguf"));
}

struct Checkpoint {
  io::SafetensorsSet st;
  Config cfg;
  Weights w;
};

// The checkpoint's weights, in the GGUF files' value-head order.
std::unique_ptr<Checkpoint> checkpoint(const std::string& model) {
  auto c = std::make_unique<Checkpoint>();
  const std::string dir = kFixtures + "/qwen35/" + model;
  c->st = io::SafetensorsSet::open_dir(dir);
  c->cfg = Config::from_file(dir + "/config.json");
  c->w = load_weights(c->st, c->cfg);
  tile_value_heads(c->w, c->cfg.text);
  return c;
}

class Qwen35Gguf : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen35Gguf, ConfigEqualsConfigJson) {
  const std::string model = GetParam();
  const Config want = Config::from_file(kFixtures + "/qwen35/" + model + "/config.json");
  const Config got = gguf_config(open_files(model, "f32", "f32"));
  const TextConfig &a = got.text, &b = want.text;
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.num_hidden_layers, b.num_hidden_layers);
  EXPECT_EQ(a.num_attention_heads, b.num_attention_heads);
  EXPECT_EQ(a.num_key_value_heads, b.num_key_value_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);
  EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.partial_rotary_factor, b.partial_rotary_factor);
  EXPECT_EQ(a.mrope_section, b.mrope_section);
  EXPECT_EQ(a.linear_conv_kernel_dim, b.linear_conv_kernel_dim);
  EXPECT_EQ(a.linear_key_head_dim, b.linear_key_head_dim);
  EXPECT_EQ(a.linear_value_head_dim, b.linear_value_head_dim);
  EXPECT_EQ(a.linear_num_key_heads, b.linear_num_key_heads);
  EXPECT_EQ(a.linear_num_value_heads, b.linear_num_value_heads);
  EXPECT_EQ(a.full_attention, b.full_attention);
  const VisionConfig &v = got.vision, &u = want.vision;
  EXPECT_EQ(v.depth, u.depth);
  EXPECT_EQ(v.hidden_size, u.hidden_size);
  EXPECT_EQ(v.intermediate_size, u.intermediate_size);
  EXPECT_EQ(v.num_heads, u.num_heads);
  EXPECT_EQ(v.patch_size, u.patch_size);
  EXPECT_EQ(v.temporal_patch_size, u.temporal_patch_size);
  EXPECT_EQ(v.spatial_merge_size, u.spatial_merge_size);
  EXPECT_EQ(v.out_hidden_size, u.out_hidden_size);
  EXPECT_EQ(v.num_position_embeddings, u.num_position_embeddings);
  EXPECT_EQ(got.image_token_id, want.image_token_id);
  EXPECT_EQ(got.vision_start_token_id, want.vision_start_token_id);
  EXPECT_EQ(got.vision_end_token_id, want.vision_end_token_id);
  EXPECT_EQ(got.video_token_id, want.video_token_id);
}

TEST_P(Qwen35Gguf, F32WeightsEqualTheCheckpoints) {
  const std::string model = GetParam();
  const auto ck = checkpoint(model);
  const GgufFiles f = open_files(model, "f32", "f32");
  const Weights g = load_gguf_weights(f, gguf_config(f), DType::kF32, true);
  EXPECT_EQ(g.text.tiled_v_heads, model == "qwen35_b");
  EXPECT_EQ(g.text.tiled_v_heads, ck->w.text.tiled_v_heads);
  const auto want = matrices(ck->w), got = matrices(g);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& [name, w] = want[i];
    const Matrix& m = got[i].second;
    ASSERT_EQ(m.rows, w.rows) << name;
    ASSERT_EQ(m.cols, w.cols) << name;
    ASSERT_EQ(m.dtype, DType::kF32) << name;
    int64_t differ = 0;
    double worst = 0;
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t c = 0; c < w.cols; ++c) {
        const float x = m.at(r, c), y = w.at(r, c);
        if (name.find("a_log") != std::string::npos) {
          worst = std::max(worst, std::fabs(static_cast<double>(x) - y) / std::max(1e-30, std::fabs(double(y))));
        } else if (std::memcmp(&x, &y, sizeof x) != 0) {
          ++differ;
        }
      }
    EXPECT_EQ(differ, 0) << name << ": " << differ << " of " << w.rows * w.cols << " elements differ";
    EXPECT_LE(worst, 1e-6) << name << ": log(-(-exp(A_log)))";
  }
}

TEST_P(Qwen35Gguf, Q8_0WeightsAreTheCheckpointsQuantized) {
  const std::string model = GetParam();
  const auto ck = checkpoint(model), raw = checkpoint(model);
  quantize_weights(ck->w, "q8_0");
  const GgufFiles f = open_files(model, "q8_0", "f32");
  const Weights g = load_gguf_weights(f, gguf_config(f), DType::kF32, true);
  const auto want = matrices(ck->w), got = matrices(g), floats = matrices(raw->w);
  ASSERT_EQ(want.size(), got.size());
  int q8 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& [name, w] = want[i];
    if (name.rfind("vision.", 0) == 0) continue;  // the mmproj is --outtype f32 here
    const Matrix& m = got[i].second;
    ASSERT_EQ(m.rows, w.rows) << name;
    ASSERT_EQ(m.cols, w.cols) << name;
    if (m.dtype == DType::kQ8_0 && w.dtype == DType::kQ8_0) {
      const size_t bytes = static_cast<size_t>(dtype_row_bytes(DType::kQ8_0, m.cols) * m.rows);
      EXPECT_EQ(0, std::memcmp(m.data, w.data, bytes)) << name << ": Q8_0 bytes differ from locr's quantizer";
      ++q8;
      continue;
    }
    // The rest, against the checkpoint's floats: as stored (norms, conv, vectors: F32, equal) or 8-bit
    // (the Q8_0 embedding table against the checkpoint's floats):
    // within half a Q8_0 step, max |w| of a row / 254, plus the F16 scale's rounding (relative
    // 2^-11, times up to 127 steps: max |w| / 2048, bounded by max |w| / 1000).
    const Matrix& x = floats[i].second;
    for (int64_t r = 0; r < x.rows; ++r) {
      double amax = 0;
      for (int64_t c = 0; c < x.cols; ++c) amax = std::max(amax, std::fabs(double(x.at(r, c))));
      const bool exact = m.dtype == DType::kF32 && name.find("embed") == std::string::npos &&
                         name.find("lm_head") == std::string::npos;
      const double tol = name.find("a_log") != std::string::npos ? 1e-6 * amax
                         : exact                                 ? 0.0
                                                                 : amax / 254 + amax / 1000;
      for (int64_t c = 0; c < x.cols; ++c)
        ASSERT_LE(std::fabs(double(m.at(r, c)) - x.at(r, c)), tol) << name << " [" << r << ", " << c << "]";
    }
  }
  EXPECT_GT(q8, 10) << "the q8_0 file's linear layers load as Q8_0";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Qwen35Gguf, ::testing::Values("qwen35_a", "qwen35_b"));

TEST(Qwen35GgufRefusals, NameTheFileAndWhatIsWrong) {
  const std::string text = gguf("qwen35_a", "qwen35_a-f32.gguf");
  const std::string mmproj = gguf("qwen35_a", "mmproj-qwen35_a-f32.gguf");
  // No mmproj.
  std::string e = error_of([&] { open_gguf(io::GgufFile::open(text), ""); });
  EXPECT_NE(e.find("--mmproj"), std::string::npos) << e;
  // The mmproj given as the model, and a text GGUF as the mmproj.
  e = error_of([&] { open_gguf(io::GgufFile::open(mmproj), mmproj); });
  EXPECT_NE(e.find("not 'qwen35'"), std::string::npos) << e;
  e = error_of([&] { open_gguf(io::GgufFile::open(text), text); });
  EXPECT_NE(e.find("general.architecture 'clip'"), std::string::npos) << e;
  // LightOnOCR-2's mmproj (projector 'lightonocr') with a Qwen3.5 text model.
  e = error_of([&] { open_gguf(io::GgufFile::open(text), kFixtures + "/gguf/models/mmproj-tiny_a-f32.gguf"); });
  EXPECT_NE(e.find("qwen3vl_merger"), std::string::npos) << e;
  // The other model's mmproj: widths disagree, and the error says which.
  e = error_of([&] {
    const GgufFiles f = open_gguf(io::GgufFile::open(text), gguf("qwen35_b", "mmproj-qwen35_b-f32.gguf"));
    gguf_config(f);
  });
  EXPECT_NE(e.find("out_hidden_size"), std::string::npos) << e;
}

// The whole loader on each backend: Model::load_gguf with the image processor's bounds from the
// preprocessor_config.json next to the fixture (LightOnOCR-3's own bounds when there is none).
TEST(Qwen35GgufLoad, ProcessorBoundsFromTheFileBesideElseLightOnOcr3s) {
  const std::string text = gguf("qwen35_a", "qwen35_a-q8_0.gguf");
  LoadOptions lo;
  lo.backend = "cpu-bf16";
  lo.mmproj = gguf("qwen35_a", "mmproj-qwen35_a-f16.gguf");
  const auto m = Model::load_gguf(io::GgufFile::open(text), text, lo);
  const ProcessorConfig want = load_processor_config(kFixtures + "/qwen35/qwen35_a");
  EXPECT_EQ(m->processor_config().min_pixels, want.min_pixels);
  EXPECT_EQ(m->processor_config().max_pixels, want.max_pixels);
  EXPECT_EQ(m->architecture(), std::string("qwen3_5"));
  // Without the file: the defaults (transformers' Qwen2-VL processor sizes, which LightOnOCR-3 ships).
  const GgufFiles f = open_gguf(io::GgufFile::open(text), lo.mmproj);
  const ProcessorConfig d = gguf_processor_config(f, kFixtures + "/gguf/qwen35");
  EXPECT_EQ(d.min_pixels, 65536);
  EXPECT_EQ(d.max_pixels, 16777216);
  EXPECT_EQ(d.patch_size, 16);
  EXPECT_EQ(d.merge_size, 2);
}

}  // namespace
}  // namespace locr::model::qwen35
