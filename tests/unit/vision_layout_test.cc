// The projector's channel-major 2x2 merge and the 2-D RoPE table layout, checked against hand
// computations of torch.nn.functional.unfold and transformers' PixtralRotaryEmbedding.
#include <gtest/gtest.h>

#include <cmath>

#include "model/lightonocr/vision_encoder.h"
#include "model/rope.h"

namespace locr::model {
namespace {

TEST(PatchMerge, ChannelMajorUnfoldOrder) {
  const int gh = 5, gw = 4;  // odd rows: the last row is dropped
  const int64_t d = 3;
  std::vector<float> in(gh * gw * d);
  for (int r = 0; r < gh; ++r)
    for (int c = 0; c < gw; ++c)
      for (int ch = 0; ch < d; ++ch) in[(r * gw + c) * d + ch] = r * 100 + c * 10 + ch;
  std::vector<float> out((gh / 2) * (gw / 2) * d * 4);
  patch_merge(in.data(), gh, gw, d, 2, out.data());
  // merged token m = i*(gw/2)+j, feature c*4 + a*2 + b  <-  patch (2i+a, 2j+b), channel c
  for (int i = 0; i < gh / 2; ++i)
    for (int j = 0; j < gw / 2; ++j)
      for (int ch = 0; ch < d; ++ch)
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b)
            EXPECT_EQ(out[(i * (gw / 2) + j) * d * 4 + ch * 4 + a * 2 + b], (2 * i + a) * 100 + (2 * j + b) * 10 + ch);
}

TEST(Rope, VisionEvenFrequenciesRowsOddColumns) {
  const int hd = 16;
  const RopeTable t = vision_rope(10000.0, hd, 3, 5);
  const std::vector<float> w = rope_inv_freq(10000.0, hd);
  ASSERT_EQ(w.size(), 8u);
  const int r = 2, c = 3, row = r * 5 + c;
  for (int k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(t.cos[row * 8 + k], std::cos(static_cast<float>(r) * w[2 * k]));
    EXPECT_FLOAT_EQ(t.sin[row * 8 + 4 + k], std::sin(static_cast<float>(c) * w[2 * k + 1]));
  }
  EXPECT_FLOAT_EQ(w[1], 1.0f / std::pow(10000.0f, 2.0f / 16.0f));
}

TEST(Rope, TextPositionsOffset) {
  const RopeTable a = text_rope(1e6, 8, 0, 10), b = text_rope(1e6, 8, 7, 3);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(a.cos[7 * 4 + d], b.cos[d]);
    EXPECT_EQ(a.sin[9 * 4 + d], b.sin[2 * 4 + d]);
  }
}

}  // namespace
}  // namespace locr::model
