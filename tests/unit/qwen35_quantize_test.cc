// `--quantization q8_0 | q4_k` and `--kv-cache-dtype` on a Qwen3.5 model (model/qwen35/weights.h quantize_weights): the
// linear layers of the hybrid decoder (stacked attention and DeltaNet projections part by part) and
// of the vision tower become Q8_0 at load, the rest stays as stored; the quantized model stays within
// kBound (below) of the checkpoint's own FP32 forward pass on a text and an image prompt of the
// fixtures, and the ref backend (dequantize, then the f64 oracle's
// matmul) and cpu-f32 (the integer Q8_0 kernels) agree on the quantized model.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "model/qwen35/model.h"
#include "runtime/generate.h"
#include "vector_cosine.h"

namespace locr::model::qwen35 {
namespace {

const std::string kFixtures = LOCR_FIXTURES_DIR;

// The seeds' threshold is cosine > 0.999 (locr eval's default; LightOnOCR-2's tiny fixture meets it
// under Q8_0, tests/unit/quantize_weights_test.cc). These Qwen3.5 fixtures are 32 to 64 wide, so a
// Q8_0 block is a whole row and its rounding (about 0.6% of a Gaussian weight's scale, five times
// BF16's) is not averaged away: weight quantization alone (the ref backend, exact matmuls of the
// dequantized weights) gives 0.9976-0.9978 on qwen35_b, the CPU's 8-bit activations in the Q8_0 dot
// products (as llama.cpp's) 0.991-0.999 on both models. The bound is the one these fixtures have
// under cpu-bf16 (docs/numerics.md); a mis-quantized or mis-laid-out part gives cosines near 0.
constexpr double kBound = 0.99;

std::unique_ptr<Model> load(const std::string& name, const std::string& quantization,
                            const std::string& backend = "cpu-f32", const std::string& kv_cache_dtype = "") {
  LoadOptions lo;
  lo.backend = backend;
  lo.quantization = quantization;
  lo.kv_cache_dtype = kv_cache_dtype;
  return Model::load(kFixtures + "/qwen35/" + name, lo);
}

struct Captured {
  std::vector<float> logits, hidden;
};

Captured run(const Model& m, bool with_image) {
  std::vector<io::Image> images;
  if (with_image) images.push_back(io::load_image(kFixtures + "/images/page_small.png"));
  const std::string text = "Convert this page to markdown.";
  const Prompt p = m.build_prompt(
      m.render_chat(Model::make_messages(nullptr, &text, static_cast<int>(images.size())), {{"enable_thinking", false}}),
      images);
  runtime::DecodeParams go;
  go.max_tokens = 1;
  go.sampling.temperature = 0;
  runtime::GenerateHooks hooks;
  Captured c;
  const int64_t H = m.hidden_size();
  hooks.on_prompt_logits = [&](const float* l, int64_t v) { c.logits.assign(l, l + v); };
  hooks.on_hidden = [&](int, const float* h, int64_t rows) { c.hidden.insert(c.hidden.end(), h, h + rows * H); };
  runtime::generate(m, p, go, hooks);
  return c;
}

using test::cosine;

TEST(Qwen35Quantize, Q8_0QuantizesTheLinearLayersAndKeepsTheRest) {
  for (const char* name : {"qwen35_a", "qwen35_b"}) {
    SCOPED_TRACE(name);
    const auto q = load(name, "Q8_0"), plain = load(name, "");
    const Weights& w = q->weights();
    int full = 0, linear = 0;
    for (const LayerWeights& L : w.text.layers) {
      for (const Matrix& m : (L.full_attention ? L.attn.qgkv : L.linear.in_proj).parts) EXPECT_EQ(m.dtype, DType::kQ8_0);
      EXPECT_EQ((L.full_attention ? L.attn.o_proj : L.linear.out_proj).dtype, DType::kQ8_0);
      for (const Matrix& m : L.gate_up.parts) EXPECT_EQ(m.dtype, DType::kQ8_0);
      EXPECT_EQ(L.down_proj.dtype, DType::kQ8_0);
      if (!L.full_attention) {
        EXPECT_EQ(L.linear.conv.dtype, plain->weights().text.layers[0].linear.conv.dtype);
      }
      (L.full_attention ? full : linear) += 1;
    }
    EXPECT_GT(full, 0);
    EXPECT_GT(linear, 0);
    EXPECT_EQ(w.text.lm_head.dtype, DType::kQ8_0);
    for (const VisionBlockWeights& B : w.vision.blocks)
      for (const Linear* l : {&B.qkv, &B.proj, &B.fc1, &B.fc2}) EXPECT_EQ(l->w.dtype, DType::kQ8_0);
    EXPECT_EQ(w.vision.merger_fc2.w.dtype, DType::kQ8_0);
    const Weights& p = plain->weights();
    EXPECT_EQ(w.text.embed_tokens.dtype, p.text.embed_tokens.dtype);  // gathered, kept
    EXPECT_EQ(w.text.norm.dtype, p.text.norm.dtype);
    EXPECT_EQ(w.vision.patch_embed.w.dtype, p.vision.patch_embed.w.dtype);
    EXPECT_EQ(w.vision.pos_embed.dtype, p.vision.pos_embed.dtype);
  }
}

TEST(Qwen35Quantize, Q8_0ModelStaysWithinTheSeedsThresholdOfTheCheckpoint) {
  for (const char* name : {"qwen35_a", "qwen35_b"}) {
    const auto q = load(name, "q8_0"), f = load(name, "");
    for (const bool image : {false, true}) {
      SCOPED_TRACE(std::string(name) + (image ? ", image prompt" : ", text prompt"));
      const Captured a = run(*q, image), b = run(*f, image);
      ASSERT_EQ(a.logits.size(), b.logits.size());
      ASSERT_FALSE(a.logits.empty());
      EXPECT_NE(a.logits, b.logits) << "the weights were not quantized";
      EXPECT_GT(cosine(a.logits, b.logits), kBound);
      ASSERT_EQ(a.hidden.size(), b.hidden.size());
      EXPECT_GT(cosine(a.hidden, b.hidden), kBound);
    }
  }
}

// The same quantized weights through the oracle and through the CPU's integer kernels: only the
// activations' rounding to 8 bits in the Q8_0 dot products (as llama.cpp) separates them.
TEST(Qwen35Quantize, RefAndCpuAgreeOnTheQuantizedModel) {
  const auto r = load("qwen35_b", "q8_0", "ref"), c = load("qwen35_b", "q8_0", "cpu-f32");
  const Captured a = run(*r, true), b = run(*c, true);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  EXPECT_GT(cosine(a.logits, b.logits), kBound);
  EXPECT_GT(cosine(a.hidden, b.hidden), kBound);
}

TEST(Qwen35Quantize, Q4_KAndQ4_K_MRun) {
  const auto q = load("qwen35_a", "q4_k");  // widths of 64: not whole super-blocks, Q8_0 instead
  EXPECT_EQ(q->weights().text.layers[0].down_proj.dtype, DType::kQ8_0);
  EXPECT_FALSE(run(*q, false).logits.empty());
  // The mix (its types on whole super-blocks: tests/golden/qwen35_q4_k_m_test.cc) runs too.
  const auto m = load("qwen35_a", "q4_k_m");
  EXPECT_FALSE(run(*m, false).logits.empty());
}

// --kv-cache-dtype bfloat16 / fp8 on a Qwen3.5 model: the full-attention layers' KV pool holds that
// type (a block of it is smaller), and the prompt's logits and hidden states stay within kBound of
// the F32 cache's (the DeltaNet layers keep their F32 state either way).
TEST(Qwen35KvCacheDtype, Bf16AndFp8CachesStayCloseToF32) {
  const auto f = load("qwen35_b", "");
  const Captured ref = run(*f, true);
  for (const char* dtype : {"bfloat16", "fp8"}) {
    SCOPED_TRACE(dtype);
    const auto m = load("qwen35_b", "", "cpu-f32", dtype);
    EXPECT_EQ(m->kv_dtype(), std::string(dtype) == "fp8" ? DType::kF8E4M3 : DType::kBF16);
    EXPECT_LT(m->kv_bytes_per_block(16), f->kv_bytes_per_block(16));
    const Captured c = run(*m, true);
    ASSERT_EQ(c.logits.size(), ref.logits.size());
    EXPECT_NE(c.logits, ref.logits) << "the cache type changed nothing";
    EXPECT_GT(cosine(c.logits, ref.logits), kBound);
    EXPECT_GT(cosine(c.hidden, ref.hidden), kBound);
  }
}

}  // namespace
}  // namespace locr::model::qwen35
