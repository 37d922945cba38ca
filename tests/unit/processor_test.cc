// Preprocessing against transformers' PixtralImageProcessor (torchvision backend): target sizes
// (including the model-spec examples), the resized uint8 image (bit-exact with torch's uint8
// antialiased bicubic), the normalised pixel values, and the patch layout for the patch conv.
// Goldens come from tools/reference/make_preprocess_fixtures.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "io/file.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/lightonocr/processor.h"

namespace locr::model {
namespace {

const std::string kDir = std::string(LOCR_FIXTURES_DIR) + "/preprocess";

ProcessorConfig cfg_align(int align) {
  ProcessorConfig cfg;
  cfg.align = align;
  return cfg;
}

TEST(ProcessorTargetSize, ModelSpecExamples) {
  // (height, width) in, (H', W') out.
  struct Case {
    int h, w, align, th, tw, tokens;
  };
  const Case cases[] = {
      {1540, 1089, 14, 1540, 1092, 2145},  // A4 portrait at longest 1540
      {1540, 1089, 28, 1540, 1092, 2145},
      {1089, 1540, 14, 1092, 1540, 2145},  // landscape
      {1540, 1540, 14, 1540, 1540, 3025},
      {1540, 1540, 28, 1540, 1540, 3025},
      {2339, 1654, 14, 1540, 1092, 2145},  // A4 @ 200 DPI: floor to 1088, ceil to 1092
      {2332, 1649, 28, 1540, 1092, 2145},  // A4 rendered at scale 2.77
      {2200, 1700, 14, 1540, 1190, 2310},  // US Letter @ 200 DPI: HF (align 14)
      {2200, 1700, 28, 1540, 1204, 2365},  // ... vLLM (align 28)
      {7, 10, 14, 14, 14, 0},              // tiny: aligned up, never below one patch
      {7, 10, 28, 28, 28, 1},
      {42, 56, 14, 42, 56, 2},             // already aligned: unchanged
      {90, 1700, 14, 84, 1540, 165},       // wider than 1540: 81 x 1540 before alignment
      {300, 4000, 28, 140, 1540, 275},
      {1700, 1600, 14, 1540, 1456, 2860},
      // Python's floor(949 / (2044 / 1540)) is 714 (the exact quotient is 715): same here.
      {2044, 949, 14, 1540, 714, 1375},
      {2044, 949, 28, 1540, 728, 1430},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.h << "x" << c.w << " align " << c.align);
    const auto t = target_size(c.h, c.w, cfg_align(c.align));
    EXPECT_EQ(t[0], c.th);
    EXPECT_EQ(t[1], c.tw);
    ProcessedImage p;
    p.grid_h = t[0] / 14;
    p.grid_w = t[1] / 14;
    EXPECT_EQ(p.n_image_tokens(), c.tokens);
  }
}

TEST(ProcessorTargetSize, RefusesDegenerateAspectRatios) {
  try {
    target_size(1, 3000, cfg_align(14));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
}

struct PpCase {
  const char* name;
  int align;
};

class ProcessorGolden : public testing::TestWithParam<PpCase> {
 protected:
  static std::shared_ptr<io::SafetensorsFile> goldens() {
    static auto f = io::SafetensorsFile::open(kDir + "/preprocess_golden.safetensors");
    return f;
  }
  std::string key(const char* what) const {
    return std::string(GetParam().name) + "/a" + std::to_string(GetParam().align) + "/" + what;
  }
  io::Image input() const { return io::load_image(kDir + "/pp_" + GetParam().name + ".png"); }
  io::Image want_resized() const {
    const std::string base = kDir + "/pp_" + GetParam().name;
    const std::string own = base + "_a" + std::to_string(GetParam().align) + ".png";
    return io::load_image(io::file_exists(own) ? own : base + "_a14.png");  // a28 == a14: stored once
  }
};

TEST_P(ProcessorGolden, TargetSizeMatches) {
  const io::Image img = input();
  const Tensor t = goldens()->get(key("target"));
  const auto got = target_size(img.height, img.width, cfg_align(GetParam().align));
  EXPECT_EQ(got[0], t.data<int32_t>()[0]);
  EXPECT_EQ(got[1], t.data<int32_t>()[1]);
}

TEST_P(ProcessorGolden, ResizedUint8IsBitExact) {
  io::Image img = input();
  if (img.has_alpha()) io::flatten_alpha_on_white(img);
  const io::Image want = want_resized();
  const auto t = target_size(img.height, img.width, cfg_align(GetParam().align));
  ASSERT_EQ(t[0], want.height);
  ASSERT_EQ(t[1], want.width);
  const std::vector<uint8_t> got = (t[0] == img.height && t[1] == img.width)
                                       ? img.rgb
                                       : resize_bicubic_aa(img.rgb.data(), img.height, img.width, t[0], t[1]);
  ASSERT_EQ(got.size(), want.rgb.size());
  size_t diff = 0;
  int max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int d = std::abs(int{got[i]} - int{want.rgb[i]});
    diff += d != 0;
    max_diff = std::max(max_diff, d);
  }
  EXPECT_EQ(diff, 0u) << diff << " of " << got.size() << " values differ, max diff " << max_diff;
}

TEST_P(ProcessorGolden, PixelValuesAreExact) {
  const ProcessedImage p = preprocess(input(), cfg_align(GetParam().align));
  const Tensor want = goldens()->get(key("pixel_values"));  // [3, R, C]: top-left corner
  ASSERT_EQ(want.ndim(), 3);
  const int64_t rows = want.dim(1), cols = want.dim(2);
  ASSERT_LE(rows, p.height);
  ASSERT_LE(cols, p.width);
  EXPECT_EQ(p.grid_h, p.height / 14);
  EXPECT_EQ(p.grid_w, p.width / 14);
  const std::vector<float> pixels = normalized_pixels(p);
  size_t exact = 0, n = 0;
  double max_diff = 0;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < rows; ++y)
      for (int64_t x = 0; x < cols; ++x) {
        const float g = pixels[(c * p.height + y) * p.width + x];
        const float w = want.data<float>()[(c * rows + y) * cols + x];
        exact += std::memcmp(&g, &w, sizeof(float)) == 0;
        ++n;
        max_diff = std::max(max_diff, std::abs(double{g} - double{w}));
      }
  EXPECT_EQ(exact, n) << (n - exact) << " of " << n << " values differ, max diff " << max_diff;
}

// Shrinking right after decoding (what the server keeps instead of the full-resolution image)
// changes nothing downstream: the same 8-bit pixels, so the same normalised values and patches.
TEST_P(ProcessorGolden, ShrinkForModelThenPreprocessIsBitExact) {
  const ProcessorConfig cfg = cfg_align(GetParam().align);
  const io::Image in = input();
  const ProcessedImage direct = preprocess(in, cfg);
  const io::Image small = shrink_for_model(in, cfg);
  EXPECT_EQ(small.height, direct.height);
  EXPECT_EQ(small.width, direct.width);
  EXPECT_FALSE(small.has_alpha());
  const ProcessedImage p = preprocess(small, cfg);
  EXPECT_EQ(p.rgb, direct.rgb);
  EXPECT_EQ(image_token_count(in.height, in.width, cfg), direct.n_image_tokens());
  // Patches normalised from the 8-bit image equal patches cut from the normalised floats.
  ProcessedImage as_floats = direct;
  as_floats.pixels = normalized_pixels(direct);
  as_floats.rgb.clear();
  EXPECT_EQ(extract_patches(direct), extract_patches(as_floats));
}

INSTANTIATE_TEST_SUITE_P(
    ProcessorCases, ProcessorGolden,
    testing::Values(PpCase{"tiny_10x7", 14}, PpCase{"tiny_10x7", 28}, PpCase{"noise_97x61", 14},
                    PpCase{"noise_97x61", 28}, PpCase{"noise_75x211", 14}, PpCase{"noise_75x211", 28},
                    PpCase{"exact_56x42", 14}, PpCase{"exact_56x42", 28}, PpCase{"doc_300x200", 14},
                    PpCase{"doc_300x200", 28}, PpCase{"wide_1700x90", 14}, PpCase{"wide_1700x90", 28},
                    PpCase{"strong_4000x300", 14}, PpCase{"strong_4000x300", 28}, PpCase{"big_1600x1700", 14},
                    PpCase{"big_1600x1700", 28}, PpCase{"rgba_45x33", 14}, PpCase{"rgba_45x33", 28}),
    [](const testing::TestParamInfo<PpCase>& info) {
      return std::string(info.param.name) + "_a" + std::to_string(info.param.align);
    });

TEST(ProcessorNormalize, UsesTransformersFusedConstants) {
  // No resize (56 x 42 at align 14): pixel = (x - 255 * mean) / (255 * std) in float32.
  io::Image img;
  img.width = 14;
  img.height = 14;
  img.rgb.assign(14 * 14 * 3, 0);
  img.rgb[0] = 255;
  img.rgb[1] = 128;
  const ProcessorConfig cfg = cfg_align(14);
  const std::vector<float> px = normalized_pixels(preprocess(img, cfg));
  const float m0 = 0.48145466f * 255.0f, s0 = 0.26862954f * 255.0f;
  const float m1 = 0.4578275f * 255.0f, s1 = 0.26130258f * 255.0f;
  EXPECT_EQ(px[0], (255.0f - m0) / s0);
  EXPECT_EQ(px[14 * 14], (128.0f - m1) / s1);
  EXPECT_EQ(px[1], (0.0f - m0) / s0);
  EXPECT_EQ(static_cast<float>(1.0 / cfg.rescale_factor), 255.0f);
}

TEST(ProcessorResize, IdentityAndConstantImages) {
  // A flat image stays flat through any resize (weights sum to 1 in fixed point).
  std::vector<uint8_t> flat(31 * 17 * 3);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<uint8_t>(i % 3 == 0 ? 200 : i % 3 == 1 ? 13 : 255);
  for (auto [oh, ow] : {std::pair{17, 31}, {28, 42}, {5, 9}, {1, 1}, {40, 3}}) {
    const auto out = resize_bicubic_aa(flat.data(), 17, 31, oh, ow);
    ASSERT_EQ(out.size(), static_cast<size_t>(oh) * ow * 3);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], flat[i % 3]) << oh << "x" << ow << " at " << i;
  }
}

TEST(ProcessorPatches, LayoutIsChannelRowColumnWithinRowMajorGrid) {
  ProcessedImage img;
  img.height = 28;  // grid 2 x 3
  img.width = 42;
  img.grid_h = 2;
  img.grid_w = 3;
  img.pixels.resize(3 * 28 * 42);
  auto f = [](int c, int y, int x) { return static_cast<float>(c * 10000 + y * 100 + x); };
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 42; ++x) img.pixels[(c * 28 + y) * 42 + x] = f(c, y, x);
  const std::vector<float> patches = extract_patches(img);
  ASSERT_EQ(patches.size(), 6u * 588u);
  // Hand-computed entries: patch index = gy * 3 + gx, element = c * 196 + ky * 14 + kx.
  EXPECT_EQ(patches[0], 0.0f);                         // patch 0, c0 ky0 kx0 -> pixel (0, 0)
  EXPECT_EQ(patches[1], 1.0f);                         // patch 0, kx1 -> (0, 1)
  EXPECT_EQ(patches[14], 100.0f);                      // patch 0, ky1 -> (1, 0)
  EXPECT_EQ(patches[196], 10000.0f);                   // patch 0, c1 -> channel 1 (0, 0)
  EXPECT_EQ(patches[1 * 588 + 439], 20319.0f);         // patch 1 (gx 1), c2 ky3 kx5 -> (3, 19)
  EXPECT_EQ(patches[3 * 588 + 0], 1400.0f);            // patch 3 (gy 1, gx 0) -> (14, 0)
  EXPECT_EQ(patches[5 * 588 + 587], 22741.0f);         // last patch, last element -> c2 (27, 41)
  for (int gy = 0; gy < 2; ++gy)
    for (int gx = 0; gx < 3; ++gx)
      for (int c = 0; c < 3; ++c)
        for (int ky = 0; ky < 14; ++ky)
          for (int kx = 0; kx < 14; ++kx)
            ASSERT_EQ(patches[(gy * 3 + gx) * 588 + c * 196 + ky * 14 + kx], f(c, gy * 14 + ky, gx * 14 + kx));
}

TEST(ProcessorPreprocess, FlattensAlphaLikeTransformers) {
  io::Image img;
  img.width = 14;
  img.height = 14;
  img.rgb.assign(14 * 14 * 3, 0);
  img.alpha.assign(14 * 14, 0);  // fully transparent black -> white
  ProcessorConfig cfg = cfg_align(14);
  const ProcessedImage white = preprocess(img, cfg);
  EXPECT_EQ(normalized_pixels(white)[0], (255.0f - 0.48145466f * 255.0f) / (0.26862954f * 255.0f));
  cfg.flatten_alpha_on_white = false;
  const ProcessedImage black = preprocess(img, cfg);
  EXPECT_EQ(normalized_pixels(black)[0], (0.0f - 0.48145466f * 255.0f) / (0.26862954f * 255.0f));
}

TEST(ProcessorPreprocess, RejectsBadInput) {
  io::Image img;
  img.width = 3;
  img.height = 3;
  img.rgb.resize(5);
  EXPECT_THROW(preprocess(img, ProcessorConfig{}), Error);
  img.rgb.resize(27);
  ProcessorConfig cfg;
  cfg.align = 20;
  EXPECT_THROW(preprocess(img, cfg), Error);
}

}  // namespace
}  // namespace locr::model
