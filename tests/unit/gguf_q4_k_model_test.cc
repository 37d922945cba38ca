// A GGUF whose weights are Q4_K runs them natively (zero-copy from the map, the int kernels of
// kernels/cpu/quant_q4_k.h), against the same weights dequantized by the reference reader
// (io::dequantize_row, checked against gguf's NumPy dequantizer in gguf_test.cc) in an F32 GGUF.
// tiny_a's widths (64) are not whole Q4_K super-blocks, so the model here is tiny_a's tokenizer and
// metadata with hidden 256, 8 heads, ffn 512 and random weights quantized by quantize_row_q4_K;
// one tensor is Q5_K (random blocks), which has no kernels and stays dequantized at load. A second
// model is llama.cpp's Q4_K_M mix (the embedding / tied head and blk.0's attn_v Q6_K, by
// quantize_row_q6_K): its Q6_K tensors run natively too (kernels/cpu/quant_q6_k.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include "core/dtype.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/generate.h"
#include "vector_cosine.h"

namespace fs = std::filesystem;

namespace locr::model {
namespace {

using io::GgmlType;
using io::GgufValueType;

constexpr int64_t kH = 256, kHeads = 8, kKvHeads = 2, kHd = 32, kFfn = 512, kVocab = 768;

// tiny_a's text GGUF metadata (tokenizer, template, rope, eps) with the widths above.
void copy_metadata(const io::GgufFile& src, io::GgufWriter& w) {
  const std::map<std::string, uint32_t> widths = {{"qwen3.embedding_length", kH},
                                                  {"qwen3.feed_forward_length", kFfn},
                                                  {"qwen3.attention.head_count", kHeads},
                                                  {"qwen3.attention.head_count_kv", kKvHeads}};
  for (const auto& [key, type] : src.types()) {
    if (key == "general.alignment") continue;
    const nlohmann::json& v = src.metadata()[key];
    if (widths.count(key)) {
      w.add_u32(key, widths.at(key));
      continue;
    }
    switch (type) {
      case GgufValueType::kString: w.add_string(key, v.get<std::string>()); break;
      case GgufValueType::kU32: w.add_u32(key, v.get<uint32_t>()); break;
      case GgufValueType::kI32: w.add_i32(key, v.get<int32_t>()); break;
      case GgufValueType::kF32: w.add_f32(key, v.get<float>()); break;
      case GgufValueType::kBool: w.add_bool(key, v.get<bool>()); break;
      case GgufValueType::kArray: w.add_array(key, src.array_types().at(key), v); break;
      default: FAIL() << "metadata type of " << key;
    }
  }
}

struct Spec {
  std::string name;
  int64_t rows, cols;
  GgmlType type;  // kQ4_K, kQ6_K, kQ5_K or kF32 (norms)
};

// k_mix: token_embd and blk.0.attn_v Q6_K, as in a Q4_K_M file.
std::vector<Spec> specs(bool k_mix) {
  std::vector<Spec> s = {{"token_embd.weight", kVocab, kH, k_mix ? GgmlType::kQ6_K : GgmlType::kQ4_K},
                         {"output_norm.weight", 1, kH, GgmlType::kF32}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    s.push_back({p + "attn_norm.weight", 1, kH, GgmlType::kF32});
    s.push_back({p + "ffn_norm.weight", 1, kH, GgmlType::kF32});
    s.push_back({p + "attn_q_norm.weight", 1, kHd, GgmlType::kF32});
    s.push_back({p + "attn_k_norm.weight", 1, kHd, GgmlType::kF32});
    s.push_back({p + "attn_q.weight", kHeads * kHd, kH, GgmlType::kQ4_K});
    s.push_back({p + "attn_k.weight", kKvHeads * kHd, kH, GgmlType::kQ4_K});
    s.push_back({p + "attn_v.weight", kKvHeads * kHd, kH, k_mix && l == 0 ? GgmlType::kQ6_K : GgmlType::kQ4_K});
    s.push_back({p + "attn_output.weight", kH, kHeads * kHd, GgmlType::kQ4_K});
    s.push_back({p + "ffn_gate.weight", kFfn, kH, GgmlType::kQ4_K});
    s.push_back({p + "ffn_up.weight", kFfn, kH, GgmlType::kQ4_K});
    s.push_back({p + "ffn_down.weight", kH, kFfn, l == 1 ? GgmlType::kQ5_K : GgmlType::kQ4_K});
  }
  return s;
}

// The tensor's bytes in its type: norms 1 + N(0, 0.05^2), Q4_K / Q6_K = quantize_row_q4_K /
// quantize_row_q6_K of N(0, 1/cols), Q5_K = random blocks with small f16 scales.
std::string tensor_bytes(const Spec& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(s.rows * s.cols));
  if (s.type == GgmlType::kF32) {
    for (float& v : x) v = 1.0f + 0.05f * normal(rng);
    return {reinterpret_cast<const char*>(x.data()), x.size() * 4};
  }
  if (s.type == GgmlType::kQ5_K) {
    std::string b(static_cast<size_t>(s.rows * s.cols / 256 * 176), '\0');
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> d(0.0f, 1e-4f);
    for (size_t i = 0; i < b.size(); i += 176) {
      for (int j = 4; j < 176; ++j) b[i + j] = static_cast<char>(byte(rng));
      const uint16_t hd = f32_to_f16(d(rng)), hm = f32_to_f16(d(rng));
      std::memcpy(&b[i], &hd, 2);
      std::memcpy(&b[i + 2], &hm, 2);
    }
    return b;
  }
  const float sd = 1.0f / std::sqrt(static_cast<float>(s.cols));
  for (float& v : x) v = sd * normal(rng);
  if (s.type == GgmlType::kQ6_K) {
    std::string b(static_cast<size_t>(s.rows * s.cols / 256 * 210), '\0');
    kernels::quantize_row_q6_K(x.data(), b.data(), s.rows * s.cols);
    return b;
  }
  std::string b(static_cast<size_t>(s.rows * s.cols / 256 * 144), '\0');
  kernels::quantize_row_q4_K(x.data(), b.data(), s.rows * s.cols);
  return b;
}

std::vector<int64_t> ne_of(const Spec& s) { return s.rows == 1 ? std::vector<int64_t>{s.cols} : std::vector<int64_t>{s.cols, s.rows}; }

// Writes DIR/q4k.gguf (the quantized tensors) and DIR/deq.gguf (the same, dequantized to F32).
void write_models(const fs::path& dir, bool k_mix = false) {
  const auto src = io::GgufFile::open(std::string(LOCR_FIXTURES_DIR) + "/gguf/models/tiny_a-f32.gguf");
  io::GgufWriter q, d;
  copy_metadata(*src, q);
  copy_metadata(*src, d);
  uint32_t seed = 1;
  for (const Spec& s : specs(k_mix)) {
    const std::string bytes = tensor_bytes(s, seed++);
    q.add_tensor(s.name, s.type, ne_of(s), bytes);
    std::vector<float> f(static_cast<size_t>(s.rows * s.cols));
    io::dequantize_row(static_cast<uint32_t>(s.type), bytes.data(), f.data(), s.rows * s.cols);
    d.add_tensor(s.name, GgmlType::kF32, ne_of(s), std::string(reinterpret_cast<const char*>(f.data()), f.size() * 4));
  }
  q.write((dir / "q4k.gguf").string());
  d.write((dir / "deq.gguf").string());
}

std::vector<float> prompt_logits(const LightOnOcr& m) {
  const std::string text = "Describe.";
  const Prompt p = m.build_prompt(LightOnOcr::make_messages(nullptr, &text, 0), {});
  runtime::DecodeParams go;
  go.max_tokens = 4;
  go.sampling.temperature = 0;
  runtime::GenerateHooks hooks;
  std::vector<float> logits;
  hooks.on_prompt_logits = [&](const float* l, int64_t n) { logits.assign(l, l + n); };
  runtime::generate(m, p, go, hooks);
  return logits;
}

std::unique_ptr<LightOnOcr> load(const fs::path& file, const std::string& backend) {
  LoadOptions lo;
  lo.backend = backend;
  return LightOnOcr::load(file.string(), lo);
}

using test::cosine;

TEST(GgufQ4_K, Q4_KTensorsRunNativelyWithTheDequantizedWeightsLogits) {
  const fs::path dir = fs::temp_directory_path() / ("locr_gguf_q4k_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_models(dir);
  const auto file = io::GgufFile::open((dir / "q4k.gguf").string());
  // ref reads the Q4_K weights exactly dequantized (Matrix::at): the F32 file's logits, bit for bit.
  const std::vector<float> ref_deq = prompt_logits(*load(dir / "deq.gguf", "ref"));
  {
    const auto m = load(dir / "q4k.gguf", "ref");
    EXPECT_EQ(m->weights().text.layers[0].q_proj.dtype, DType::kQ4_K);
    const std::vector<float> got = prompt_logits(*m);
    ASSERT_EQ(got.size(), static_cast<size_t>(kVocab));
    EXPECT_EQ(std::memcmp(got.data(), ref_deq.data(), got.size() * 4), 0);
  }
  for (const char* backend : {"cpu-f32", "cpu-bf16"}) {
    SCOPED_TRACE(backend);
    const auto m = load(dir / "q4k.gguf", backend);
    const TextWeights& w = m->weights().text;
    // Q4_K: in place, the file's bytes (embedding and tied head too); Q5_K: dequantized at load.
    EXPECT_EQ(w.embed_tokens.dtype, DType::kQ4_K);
    EXPECT_EQ(w.lm_head.dtype, DType::kQ4_K);
    for (const auto& [mat, name] : {std::pair{&w.layers[0].q_proj, "blk.0.attn_q.weight"},
                                    std::pair{&w.layers[1].gate_proj, "blk.1.ffn_gate.weight"},
                                    std::pair{&w.layers[0].down_proj, "blk.0.ffn_down.weight"},
                                    std::pair{&w.embed_tokens, "token_embd.weight"}}) {
      ASSERT_EQ(mat->dtype, DType::kQ4_K) << name;
      const std::string_view bytes = file->data(*file->find(name));
      ASSERT_EQ(static_cast<size_t>(mat->rows * dtype_row_bytes(DType::kQ4_K, mat->cols)), bytes.size()) << name;
      EXPECT_EQ(std::memcmp(mat->data, bytes.data(), bytes.size()), 0) << name;
    }
    EXPECT_EQ(w.layers[1].down_proj.dtype, std::string(backend) == "cpu-f32" ? DType::kF32 : DType::kBF16);
    // Activations quantized per 256 (8 bits): close to the same backend on the dequantized weights.
    const std::vector<float> got = prompt_logits(*m), deq = prompt_logits(*load(dir / "deq.gguf", backend));
    double dmax = 0;
    for (size_t i = 0; i < got.size(); ++i) dmax = std::max(dmax, std::fabs(double(got[i]) - deq[i]));
    const double c = cosine(got, deq);
    std::printf("[gguf] Q4_K GGUF on %s vs the dequantized F32 GGUF: logits max abs %.3g, cosine %.6f\n", backend,
                dmax, c);
    EXPECT_GT(dmax, 0.0);  // the int kernels ran, not a dequantized copy
    EXPECT_GT(c, 0.999);
    EXPECT_GT(cosine(got, ref_deq), 0.999);
  }
  // --quantization q4_k on the F32 file: the matmul weights (and a copy for the tied head) become
  // quantize_row_q4_K of their rows, the embedding table stays F32.
  {
    LoadOptions lo;
    lo.backend = "cpu-f32";
    lo.quantization = "q4_k";
    const auto m = LightOnOcr::load((dir / "deq.gguf").string(), lo);
    const TextWeights& w = m->weights().text;
    EXPECT_EQ(w.embed_tokens.dtype, DType::kF32);
    EXPECT_EQ(w.lm_head.dtype, DType::kQ4_K);
    const auto deq = io::GgufFile::open((dir / "deq.gguf").string());
    for (const auto& [mat, name] : {std::pair{&w.layers[1].o_proj, "blk.1.attn_output.weight"},
                                    std::pair{&w.layers[1].down_proj, "blk.1.ffn_down.weight"}}) {
      ASSERT_EQ(mat->dtype, DType::kQ4_K) << name;
      const std::vector<float> f = deq->dequantize(*deq->find(name));
      std::vector<uint8_t> want(static_cast<size_t>(mat->rows * dtype_row_bytes(DType::kQ4_K, mat->cols)));
      kernels::quantize_row_q4_K(f.data(), want.data(), static_cast<int64_t>(f.size()));
      EXPECT_EQ(std::memcmp(mat->data, want.data(), want.size()), 0) << name;
    }
    const double c = cosine(prompt_logits(*m), ref_deq);
    std::printf("[gguf] --quantization q4_k on the F32 GGUF (cpu-f32) vs ref: logits cosine %.6f\n", c);
    EXPECT_GT(c, 0.99);
  }
  fs::remove_all(dir);
}

// The Q4_K_M mix: the Q6_K tensors (embedding, tied head, an attn_v) stay in the mapped file too.
TEST(GgufQ4_K, Q6_KTensorsOfAQ4_KMMixRunNatively) {
  const fs::path dir = fs::temp_directory_path() / ("locr_gguf_q4km_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_models(dir, /*k_mix=*/true);
  const auto file = io::GgufFile::open((dir / "q4k.gguf").string());
  const std::vector<float> ref_deq = prompt_logits(*load(dir / "deq.gguf", "ref"));
  {
    const auto m = load(dir / "q4k.gguf", "ref");  // Matrix::at: exactly the dequantized weights
    EXPECT_EQ(m->weights().text.layers[0].v_proj.dtype, DType::kQ6_K);
    const std::vector<float> got = prompt_logits(*m);
    ASSERT_EQ(got.size(), static_cast<size_t>(kVocab));
    EXPECT_EQ(std::memcmp(got.data(), ref_deq.data(), got.size() * 4), 0);
  }
  for (const char* backend : {"cpu-f32", "cpu-bf16"}) {
    SCOPED_TRACE(backend);
    const auto m = load(dir / "q4k.gguf", backend);
    const TextWeights& w = m->weights().text;
    EXPECT_EQ(w.lm_head.dtype, DType::kQ6_K);
    for (const auto& [mat, name, dt] : {std::tuple{&w.embed_tokens, "token_embd.weight", DType::kQ6_K},
                                        std::tuple{&w.layers[0].v_proj, "blk.0.attn_v.weight", DType::kQ6_K},
                                        std::tuple{&w.layers[1].v_proj, "blk.1.attn_v.weight", DType::kQ4_K}}) {
      ASSERT_EQ(mat->dtype, dt) << name;
      const std::string_view bytes = file->data(*file->find(name));
      ASSERT_EQ(static_cast<size_t>(mat->rows * dtype_row_bytes(dt, mat->cols)), bytes.size()) << name;
      EXPECT_EQ(std::memcmp(mat->data, bytes.data(), bytes.size()), 0) << name;
    }
    const std::vector<float> got = prompt_logits(*m), deq = prompt_logits(*load(dir / "deq.gguf", backend));
    double dmax = 0;
    for (size_t i = 0; i < got.size(); ++i) dmax = std::max(dmax, std::fabs(double(got[i]) - deq[i]));
    const double c = cosine(got, deq);
    std::printf("[gguf] Q4_K_M-mix GGUF on %s vs the dequantized F32 GGUF: logits max abs %.3g, cosine %.6f\n",
                backend, dmax, c);
    EXPECT_GT(dmax, 0.0);  // the int kernels ran, not a dequantized copy
    EXPECT_GT(c, 0.999);
  }
  // --quantization q4_k_m on the F32 file: Q4_K, with attn_v / ffn_down of the use_more_bits layers
  // (of 2: layer 1 only) and a copy for the tied head Q6_K, the embedding table F32; each matrix
  // quantize_row_q4_K / q6_K of its rows.
  {
    LoadOptions lo;
    lo.backend = "cpu-f32";
    lo.quantization = "q4_k_m";
    const auto m = LightOnOcr::load((dir / "deq.gguf").string(), lo);
    const TextWeights& w = m->weights().text;
    EXPECT_EQ(w.embed_tokens.dtype, DType::kF32);
    const auto deq = io::GgufFile::open((dir / "deq.gguf").string());
    for (const auto& [mat, name, dt] : {std::tuple{&w.lm_head, "token_embd.weight", DType::kQ6_K},
                                        std::tuple{&w.layers[0].v_proj, "blk.0.attn_v.weight", DType::kQ4_K},
                                        std::tuple{&w.layers[0].down_proj, "blk.0.ffn_down.weight", DType::kQ4_K},
                                        std::tuple{&w.layers[1].v_proj, "blk.1.attn_v.weight", DType::kQ6_K},
                                        std::tuple{&w.layers[1].down_proj, "blk.1.ffn_down.weight", DType::kQ6_K},
                                        std::tuple{&w.layers[1].q_proj, "blk.1.attn_q.weight", DType::kQ4_K}}) {
      ASSERT_EQ(mat->dtype, dt) << name;
      const std::vector<float> f = deq->dequantize(*deq->find(name));
      std::vector<uint8_t> want(static_cast<size_t>(mat->rows * dtype_row_bytes(dt, mat->cols)));
      if (dt == DType::kQ6_K) kernels::quantize_row_q6_K(f.data(), want.data(), static_cast<int64_t>(f.size()));
      else kernels::quantize_row_q4_K(f.data(), want.data(), static_cast<int64_t>(f.size()));
      EXPECT_EQ(std::memcmp(mat->data, want.data(), want.size()), 0) << name;
    }
    const double c = cosine(prompt_logits(*m), ref_deq);
    std::printf("[gguf] --quantization q4_k_m on the F32 GGUF (cpu-f32) vs ref: logits cosine %.6f\n", c);
    EXPECT_GT(c, 0.99);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace locr::model
