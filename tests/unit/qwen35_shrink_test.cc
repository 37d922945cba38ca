// Qwen3.5's image steps as the front ends take them one image at a time (model::Model::image_size,
// shrink_for_model, preprocess): shrinking right after decoding (what a server keeps instead of the
// full-resolution image) changes nothing downstream, for images that are downscaled, upscaled
// (below min_pixels), already at the model's size, gray, with transparency, and too wide to shrink.
#include <gtest/gtest.h>

#include <string>

#include "io/image.h"
#include "model/qwen35/model.h"

namespace locr::model::qwen35 {
namespace {

const std::string kFixtures = LOCR_FIXTURES_DIR;

const Model& tiny() {  // min 4096 / max 9216 pixels: most test images shrink, a few grow
  static std::unique_ptr<Model> m = [] {
    LoadOptions lo;
    lo.backend = "ref";
    return Model::load(kFixtures + "/qwen35/qwen35_a", lo);
  }();
  return *m;
}

void expect_same_after_shrink(const io::Image& in, const std::string& what) {
  const Model& m = tiny();
  const ProcessedImage direct = m.preprocess(in);
  const io::Image small = m.shrink_for_model(in);
  // Shrunk to the model's size, or (when smart_resize of that size would resize again: a very
  // wide image whose short side is clamped to 32) kept as it was.
  const bool kept = small.height == in.height && small.width == in.width;
  if (!kept || direct.height == in.height) {
    EXPECT_FALSE(small.has_alpha()) << what;
    EXPECT_EQ(small.height, direct.height) << what;
    EXPECT_EQ(small.width, direct.width) << what;
  } else {
    EXPECT_EQ(small.rgb, in.rgb) << what;
  }
  EXPECT_EQ((m.image_size(in.height, in.width)), (std::array<int, 2>{direct.height, direct.width})) << what;
  const ProcessedImage p = m.preprocess(small);
  EXPECT_EQ(p.grid_h, direct.grid_h) << what;
  EXPECT_EQ(p.grid_w, direct.grid_w) << what;
  EXPECT_TRUE(p.rgb == direct.rgb) << what << ": pixels differ after shrinking";
  EXPECT_EQ(m.image_tokens(p), m.image_tokens(in.height, in.width)) << what;
}

TEST(Qwen35Shrink, PreprocessOfTheShrunkImageIsBitExact) {
  for (const char* f : {"page_small.png", "gray.png", "rgba.png", "photo.jpg", "wide.png", "qwen35_odd.png",
                        "qwen35_strip.png", "qwen35_tiny.png", "exact.png"})
    expect_same_after_shrink(io::load_image(kFixtures + "/images/" + f), f);
}

TEST(Qwen35Shrink, AnImageAtTheModelSizeIsKept) {
  io::Image im;
  im.height = 64;
  im.width = 96;  // 6144 pixels, multiples of 32: smart_resize keeps it
  im.rgb.resize(static_cast<size_t>(im.height) * im.width * 3);
  for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<uint8_t>(i * 37 % 251);
  const io::Image out = tiny().shrink_for_model(im);
  EXPECT_EQ(out.rgb, im.rgb);
  expect_same_after_shrink(im, "64x96");
}

}  // namespace
}  // namespace locr::model::qwen35
