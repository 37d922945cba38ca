// Layer-level golden tests: the decoder and the vision stack fed directly with transformers'
// inputs (fixture input_ids and pixel_values), bypassing tokenizer, template and preprocessing, so
// a numeric error is pinned to the model code rather than to the prompt path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/processor.h"
#include "model/lightonocr/text_decoder.h"
#include "model/lightonocr/vision_encoder.h"
#include "model/lightonocr/weights.h"
#include "toolkit/compare.h"

namespace fs = std::filesystem;

namespace locr::model {
namespace {

struct LayerCase {
  std::string model_dir, ref, name, backend;
};

std::vector<LayerCase> discover() {
  std::vector<LayerCase> out;
  const fs::path root = fs::path(LOCR_FIXTURES_DIR) / "models";
  if (!fs::exists(root)) return out;
  for (const auto& m : fs::directory_iterator(root)) {
    if (!fs::exists(m.path() / "cases")) continue;
    for (const auto& c : fs::directory_iterator(m.path() / "cases"))
      if (c.path().extension() == ".safetensors") {
        std::string n = m.path().filename().string() + "__" + c.path().stem().string();
        for (char& ch : n)
          if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
        for (const char* b : {"ref", "cpu-f32"})
          out.push_back({m.path().string(), c.path().string(), n + (b[0] == 'r' ? "__ref" : "__cpu_f32"), b});
      }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

class LayersGolden : public ::testing::TestWithParam<LayerCase> {};

void expect_close(const std::string& what, const float* got, const Tensor& ref) {
  const Tensor r = ref.to_f32();
  const auto d = toolkit::compare_tensors(got, r.data<float>(), r.numel());
  EXPECT_GE(d.cosine_similarity, 0.99999) << what << ": " << toolkit::to_json(d).dump();
  EXPECT_LE(d.max_abs_error, 1e-4) << what << ": " << toolkit::to_json(d).dump();
}

TEST_P(LayersGolden, DecoderAndVisionMatchTransformers) {
  const LayerCase& c = GetParam();
  const ModelConfig cfg = ModelConfig::from_file(c.model_dir + "/config.json");
  const auto st = io::SafetensorsSet::open_dir(c.model_dir);
  ModelWeights w = load_weights(st, cfg);
  auto ops = kernels::make_ops(c.backend);
  prepare_weights(w, *ops);
  auto ref = io::SafetensorsFile::open(c.ref);

  // Vision: pixel_values of the first image -> encoder -> projector.
  Tensor image_embeds;
  if (ref->has("pixel_values") && ref->has("vision_hidden")) {
    const Tensor pv = ref->get("pixel_values");
    ProcessedImage img;
    img.height = static_cast<int>(pv.dim(1));
    img.width = static_cast<int>(pv.dim(2));
    img.grid_h = img.height / cfg.vision.patch_size;
    img.grid_w = img.width / cfg.vision.patch_size;
    img.pixels.assign(pv.data<float>(), pv.data<float>() + pv.numel());
    const std::vector<float> patches = extract_patches(img, cfg.vision.patch_size);
    VisionEncoder enc(cfg.vision, w.vision, *ops);
    const std::vector<ImageGrid> grids = {{img.grid_h, img.grid_w}};
    const Tensor vh = enc.forward(patches.data(), grids);
    const Tensor vref = ref->get("vision_hidden").slice_rows(0, vh.dim(0));
    expect_close("vision_hidden (first image)", vh.data<float>(), vref);
    Projector proj(cfg, w.projector, *ops);
    const Tensor emb = proj.forward(vh, grids);
    expect_close("image_embeds (first image)", emb.data<float>(), ref->get("image_embeds").slice_rows(0, emb.dim(0)));
  }

  // Decoder: hidden.0 from the fixture (embeddings with image rows) -> every layer and logits.
  const Tensor ids = ref->get("input_ids");
  const int64_t T = ids.numel(), H = cfg.text.hidden_size;
  TextDecoder dec(cfg.text, w.text, *ops);
  std::vector<int32_t> id32(T);
  for (int64_t i = 0; i < T; ++i) id32[i] = static_cast<int32_t>(ids.data<int64_t>()[i]);
  Tensor x = Tensor::empty(DType::kF32, {T, H});
  dec.embed(id32.data(), T, x.data<float>());
  // Text rows of hidden.0 must equal the embedding table rows exactly.
  const Tensor h0 = ref->get("hidden.0").to_f32();
  for (int64_t t = 0; t < T; ++t) {
    if (id32[t] == cfg.image_token_id) continue;
    for (int64_t d = 0; d < H; ++d)
      ASSERT_EQ(x.data<float>()[t * H + d], h0.data<float>()[t * H + d]) << "embedding row " << t;
  }
  std::memcpy(x.data<float>(), h0.data<float>(), T * H * sizeof(float));
  KvCache cache(cfg.text, T + 1);
  int seen = 0;
  dec.forward(x.data<float>(), T, cache, [&](int i, const float* h) {
    expect_close("hidden." + std::to_string(i), h, ref->get("hidden." + std::to_string(i)));
    ++seen;
  });
  EXPECT_EQ(seen, cfg.text.num_hidden_layers + 1);
  std::vector<float> logits(cfg.text.vocab_size);
  dec.logits(x.data<float>() + (T - 1) * H, 1, logits.data());
  expect_close("logits", logits.data(), ref->get("logits"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LayersGolden, ::testing::ValuesIn(discover()),
                         [](const ::testing::TestParamInfo<LayerCase>& i) { return i.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LayersGolden);

}  // namespace
}  // namespace locr::model
