// The vision encoder runs its MLP over chunks of rows when an image has more than 2048 patches
// (lightonocr/vision_encoder.cc, kMlpChunkRows): the chunked pass must give every patch the same
// bits as the one-chunk pass it takes when taps are recorded, on every CPU backend and for several
// images at once (chunks then cross image boundaries).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/tap_names.h"
#include "model/lightonocr/vision_encoder.h"
#include "model/lightonocr/weights.h"
#include "model/taps.h"

namespace locr::model {
namespace {

class VisionMlpChunks : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionMlpChunks, ChunkedMlpEqualsOneChunkBitForBit) {
  const std::string dir = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a";
  const ModelConfig cfg = ModelConfig::from_file(dir + "/config.json");
  const auto st = io::SafetensorsSet::open_dir(dir);
  ModelWeights w = load_weights(st, cfg);
  auto ops = kernels::make_ops(GetParam());
  prepare_weights(w, *ops);
  const VisionEncoder enc(cfg.vision, w.vision, *ops);

  // 61 x 50 + 47 x 33 = 4,601 patches: three chunks of 1,534 rows, the second across the images.
  const std::vector<ImageGrid> grids = {{61, 50}, {47, 33}};
  int64_t n = 0;
  for (const auto& g : grids) n += g.n_patches();
  const int64_t p = 3LL * cfg.vision.patch_size * cfg.vision.patch_size;
  std::vector<float> patches(static_cast<size_t>(n * p));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : patches) v = normal(rng);

  const Tensor chunked = enc.forward(patches.data(), grids);
  Taps taps = Taps::select({"vision.0.mlp_act"}, tap_names(cfg, true));
  const Tensor whole = enc.forward(patches.data(), grids, &taps);
  ASSERT_EQ(chunked.dim(0), n);
  ASSERT_EQ(whole.dim(0), n);
  ASSERT_EQ(taps.tensors().size(), 1u);  // the one-chunk pass recorded the whole activation
  EXPECT_EQ(taps.tensors()[0].second.dim(0), n);
  const int64_t bytes = n * cfg.vision.hidden_size * static_cast<int64_t>(sizeof(float));
  EXPECT_EQ(std::memcmp(chunked.data<float>(), whole.data<float>(), static_cast<size_t>(bytes)), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, VisionMlpChunks, ::testing::Values("ref", "cpu-f32", "cpu-bf16"),
                         [](const testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace locr::model
