// `--quantization q8_0` (model/lightonocr/quantize_weights.h): the tiny model's matmul weights become Q8_0 at
// load, the rest stays as stored, and the quantized model's prompt logits, hidden states and image
// embeddings stay within the seeds' accuracy threshold (cosine similarity > 0.999, locr eval's
// default) of the checkpoint's own FP32 forward pass, on a text prompt and an image prompt.
#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "kernels/devices.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/lightonocr/quantize_weights.h"
#include "runtime/generate.h"
#include "vector_cosine.h"

namespace locr::model {
namespace {

std::string tiny(const char* name) { return std::string(LOCR_FIXTURES_DIR) + "/models/" + name; }

std::unique_ptr<LightOnOcr> load(const std::string& quantization, const std::string& backend = "cpu-f32") {
  LoadOptions lo;
  lo.backend = backend;
  lo.quantization = quantization;
  return LightOnOcr::load(tiny("tiny_a"), lo);
}

struct Captured {
  std::vector<float> logits, embeds, hidden;
};

Captured run(const LightOnOcr& m, bool with_image) {
  std::vector<io::Image> images;
  if (with_image) images.push_back(io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png"));
  const std::string text = "Convert this page to markdown.";
  const auto messages = LightOnOcr::make_messages(nullptr, &text, static_cast<int>(images.size()));
  const Prompt p = m.build_prompt(messages, images);
  runtime::DecodeParams go;
  go.max_tokens = 1;
  go.sampling.temperature = 0;
  runtime::GenerateHooks hooks;
  Captured c;
  const int64_t H = m.config().text.hidden_size;
  hooks.on_prompt_logits = [&](const float* l, int64_t v) { c.logits.assign(l, l + v); };
  hooks.on_images = [&](const ImageEncoding& e) { c.embeds.assign(e.embeds.data<float>(), e.embeds.data<float>() + e.embeds.numel()); };
  hooks.on_hidden = [&](int, const float* h, int64_t rows) { c.hidden.insert(c.hidden.end(), h, h + rows * H); };
  runtime::generate(m, p, go, hooks);
  return c;
}

using test::cosine;

TEST(QuantizeWeights, Q8_0QuantizesTheMatmulWeightsAndKeepsTheRest) {
  const auto m = load("Q8_0");  // vLLM-style case-insensitive spelling
  const ModelWeights& w = m->weights();
  for (const auto& L : w.text.layers)
    for (const Matrix* x : {&L.q_proj, &L.k_proj, &L.v_proj, &L.o_proj, &L.gate_proj, &L.up_proj, &L.down_proj})
      EXPECT_EQ(x->dtype, DType::kQ8_0);
  EXPECT_EQ(w.text.lm_head.dtype, DType::kQ8_0);
  for (const auto& L : w.vision.layers) EXPECT_EQ(L.down_proj.dtype, DType::kQ8_0);
  EXPECT_EQ(w.projector.linear_2.dtype, DType::kQ8_0);
  const auto plain = load("");
  EXPECT_EQ(w.text.embed_tokens.dtype, plain->weights().text.embed_tokens.dtype);  // gathered, kept
  EXPECT_EQ(w.text.norm.dtype, plain->weights().text.norm.dtype);
  EXPECT_EQ(w.vision.patch_conv.dtype, plain->weights().vision.patch_conv.dtype);  // 588 inputs
}

TEST(QuantizeWeights, Q8_0ModelStaysWithinTheSeedsThresholdOfTheCheckpoint) {
  const auto q = load("q8_0"), f = load("");
  for (const bool image : {false, true}) {
    SCOPED_TRACE(image ? "image prompt" : "text prompt");
    const Captured a = run(*q, image), b = run(*f, image);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    ASSERT_FALSE(a.logits.empty());
    EXPECT_NE(a.logits, b.logits) << "the weights were not quantized";
    EXPECT_GT(cosine(a.logits, b.logits), 0.999);
    ASSERT_EQ(a.hidden.size(), b.hidden.size());
    EXPECT_GT(cosine(a.hidden, b.hidden), 0.999);
    ASSERT_EQ(a.embeds.size(), b.embeds.size());
    if (image) {
      EXPECT_GT(cosine(a.embeds, b.embeds), 0.999);
    }
  }
}

// vLLM's `--quantization fp8` (online 8-bit weights) is locr's Q8_0: the same quantized bytes.
TEST(QuantizeWeights, Fp8IsVllmSpellingForQ8_0) {
  LoadOptions lo;
  lo.backend = "cpu-f32";
  const auto base = LightOnOcr::load(tiny("tiny_a"), lo);
  ModelWeights a = base->weights(), b = base->weights();
  const QuantizeCounts na = quantize_weights(a, "fp8"), nb = quantize_weights(b, "q8_0");
  EXPECT_EQ(na.q8_0, nb.q8_0);
  EXPECT_GT(na.q8_0, 14);
  const Matrix& x = a.text.layers[0].q_proj;
  const Matrix& y = b.text.layers[0].q_proj;
  ASSERT_EQ(x.dtype, DType::kQ8_0);
  ASSERT_EQ(y.dtype, DType::kQ8_0);
  EXPECT_EQ(std::memcmp(x.data, y.data, static_cast<size_t>(x.rows * dtype_row_bytes(x.dtype, x.cols))), 0);
}

// tiny_a's widths (64, 128) are no whole Q4_K super-blocks: with q4_k those weights become Q8_0
// (the 256-wide model of gguf_q4_k_model_test.cc gets Q4_K), the rest stays as stored.
TEST(QuantizeWeights, Q4_KKeepsWeightsNarrowerThanASuperBlockInQ8_0) {
  LoadOptions lo;
  lo.backend = "cpu-f32";
  const auto base = LightOnOcr::load(tiny("tiny_a"), lo);
  ModelWeights w = base->weights();
  const QuantizeCounts n = quantize_weights(w, "Q4_K");
  EXPECT_EQ(n.q4_k, 0);
  EXPECT_EQ(n.total(), n.q8_0);
  EXPECT_GT(n.q8_0, 14);
  for (const auto& L : w.text.layers) EXPECT_EQ(L.down_proj.dtype, DType::kQ8_0);
  EXPECT_EQ(w.text.lm_head.dtype, DType::kQ8_0);
  EXPECT_EQ(w.text.embed_tokens.dtype, base->weights().text.embed_tokens.dtype);
  const auto q = load("q4_k");
  EXPECT_GT(cosine(run(*q, false).logits, run(*load(""), false).logits), 0.999);
}

TEST(QuantizeWeights, UnsupportedMethodsAndBackendsAreClearErrors) {
  try {
    load("awq");
    ADD_FAILURE() << "awq accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--quantization awq is not supported: use q8_0 (GGUF Q8_0, int8 weights with a scale per 32), q4_k (GGUF Q4_K, 4-bit weights in super-blocks of 256) or q4_k_m"), std::string::npos) << e.what();
  }
  // The CUDA backend runs quantized weights too: only a build or machine without it refuses, naming it.
  if (kernels::cuda_usable()) {
    EXPECT_EQ(load("q8_0", "cuda")->weights().text.layers[0].q_proj.dtype, DType::kQ8_0);
  } else {
    try {
      load("q8_0", "cuda");
      ADD_FAILURE() << "cuda accepted without a usable device";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace locr::model
