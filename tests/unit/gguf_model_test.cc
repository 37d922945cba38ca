// Loading LightOnOCR from llama.cpp's GGUF files (tests/fixtures/gguf/models/, written by
// llama.cpp's own convert_hf_to_gguf.py from tiny_a: tools/reference/make_gguf_model_fixtures.py),
// against the same model loaded from its safetensors directory.
//   F32 GGUF: the same bytes, so the same numbers bit for bit (logits, vision output, embeddings, ids).
//   F16 / BF16 GGUF: the weights rounded once; logits within a stated tolerance.
//   Q8_0 GGUF: run in place by the int8 kernels (the converter's blocks are the bytes locr's own
//   quantizer writes), against ref on the dequantized tensors (bit for bit on ref itself).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/gguf.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/gguf_binder.h"
#include "model/lightonocr/gguf_checkpoint.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/generate.h"
#include "vector_cosine.h"
#include "../common/error_of.h"

namespace fs = std::filesystem;

namespace locr::model {
namespace {

const std::string kFix = LOCR_FIXTURES_DIR;
const std::string kDir = kFix + "/models/tiny_a";
std::string gguf(const std::string& name) { return kFix + "/gguf/models/" + name; }

std::unique_ptr<LightOnOcr> load_gguf(const std::string& text, const std::string& mmproj, const std::string& backend) {
  LoadOptions lo;
  lo.backend = backend;
  lo.mmproj = mmproj.empty() ? "" : gguf(mmproj);
  return LightOnOcr::load(gguf(text), lo);
}

std::unique_ptr<LightOnOcr> load_dir(const std::string& dir, const std::string& backend) {
  LoadOptions lo;
  lo.backend = backend;
  return LightOnOcr::load(dir, lo);
}

struct Outputs {
  std::vector<float> logits, vision, embeds;
  std::vector<int32_t> tokens;
};

// The image case (page_small.png, "Describe.") and greedy decoding of 8 tokens.
Outputs run_case(const LightOnOcr& m, bool image = true) {
  std::vector<io::Image> images;
  if (image) images.push_back(io::load_image(kFix + "/images/page_small.png"));
  const std::string text = "Describe.";
  const Prompt p = m.build_prompt(LightOnOcr::make_messages(nullptr, &text, static_cast<int>(images.size())), images);
  runtime::DecodeParams go;
  go.max_tokens = 8;
  go.sampling.temperature = 0;
  runtime::GenerateHooks hooks;
  Outputs r;
  hooks.on_prompt_logits = [&](const float* l, int64_t n) { r.logits.assign(l, l + n); };
  hooks.on_images = [&](const ImageEncoding& e) {
    r.vision.assign(e.vision_hidden.data<float>(), e.vision_hidden.data<float>() + e.vision_hidden.numel());
    r.embeds.assign(e.embeds.data<float>(), e.embeds.data<float>() + e.embeds.numel());
  };
  r.tokens = runtime::generate(m, p, go, hooks).tokens;
  return r;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

bool same_matrix(const Matrix& a, const Matrix& b) {
  if (a.rows != b.rows || a.cols != b.cols) return false;
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < a.cols; ++c) {
      const float x = a.at(r, c), y = b.at(r, c);
      if (std::memcmp(&x, &y, 4) != 0) return false;
    }
  return true;
}

TEST(GgufModel, UnpermuteRowsInvertsTheConvertersPermutation) {
  // llama.cpp's LlamaModel.permute: w.reshape(heads, 2, hd/2, in).swapaxes(1, 2): GGUF row
  // h*hd + 2j + s holds HF row h*hd + s*hd/2 + j.
  EXPECT_EQ(unpermute_rows(1, 4), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(unpermute_rows(2, 4), (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
}

TEST(GgufModel, BindDequantizesEveryQuantizedTypeAsGgufsNumPyReference) {
  // types.gguf / expected.gguf: one tensor of each type and gguf's NumPy dequantization of it.
  const auto types = io::GgufFile::open(kFix + "/gguf/types.gguf");
  const auto expected = io::GgufFile::open(kFix + "/gguf/expected.gguf");
  int checked = 0;
  for (const char* name : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"}) {
    SCOPED_TRACE(name);
    const io::GgufTensor& t = *types->find(name);
    const std::vector<float> want = expected->dequantize(*expected->find(name));
    const int64_t rows = t.ne[1], cols = t.ne[0];
    const Matrix f = bind_gguf_matrix(types, t, rows, cols, DType::kF32);
    const Matrix b = bind_gguf_matrix(types, t, rows, cols, DType::kBF16);
    // Rows reversed through row_of (as the vision q/k unpermutation does).
    std::vector<int64_t> rev(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) rev[r] = rows - 1 - r;
    const Matrix p = bind_gguf_matrix(types, t, rows, cols, DType::kF32, &rev);
    const bool plain = std::string(name) == "f32" || std::string(name) == "f16" || std::string(name) == "bf16";
    EXPECT_EQ(b.dtype, plain ? f.dtype : DType::kBF16);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float w = want[r * cols + c];
        ASSERT_EQ(f.at(r, c), w) << r << "," << c;
        ASSERT_EQ(b.at(r, c), plain ? w : bf16_to_f32(f32_to_bf16(w))) << r << "," << c;
        ASSERT_EQ(p.at(rows - 1 - r, c), w) << r << "," << c;
      }
    ++checked;
  }
  EXPECT_EQ(checked, 11);
  // Plain types point into the file; the others are a buffer of their own.
  EXPECT_EQ(bind_gguf_matrix(types, *types->find("f16"), 3, 64, DType::kF32).data, types->data(*types->find("f16")).data());
  EXPECT_THROW(bind_gguf_matrix(types, *types->find("q3_k"), 2, 512, DType::kF32), Error);
}

TEST(GgufModel, ConfigAndPreprocessingFromTheMetadata) {
  const auto g = load_gguf("tiny_a-f32.gguf", "mmproj-tiny_a-f32.gguf", "ref");
  const auto d = load_dir(kDir, "ref");
  const TextConfig &gt = g->config().text, &dt = d->config().text;
  EXPECT_EQ(gt.hidden_size, dt.hidden_size);
  EXPECT_EQ(gt.intermediate_size, dt.intermediate_size);
  EXPECT_EQ(gt.num_hidden_layers, dt.num_hidden_layers);
  EXPECT_EQ(gt.num_attention_heads, dt.num_attention_heads);
  EXPECT_EQ(gt.num_key_value_heads, dt.num_key_value_heads);
  EXPECT_EQ(gt.head_dim, dt.head_dim);
  EXPECT_EQ(gt.vocab_size, dt.vocab_size);
  EXPECT_EQ(gt.rms_norm_eps, dt.rms_norm_eps);
  EXPECT_EQ(gt.rope_theta, dt.rope_theta);
  EXPECT_EQ(gt.max_position_embeddings, dt.max_position_embeddings);
  EXPECT_EQ(gt.tie_word_embeddings, dt.tie_word_embeddings);
  const VisionConfig &gv = g->config().vision, &dv = d->config().vision;
  EXPECT_EQ(gv.hidden_size, dv.hidden_size);
  EXPECT_EQ(gv.intermediate_size, dv.intermediate_size);
  EXPECT_EQ(gv.num_hidden_layers, dv.num_hidden_layers);
  EXPECT_EQ(gv.num_attention_heads, dv.num_attention_heads);
  EXPECT_EQ(gv.head_dim, dv.head_dim);
  EXPECT_EQ(gv.patch_size, dv.patch_size);
  EXPECT_EQ(gv.image_size, dv.image_size);
  EXPECT_EQ(gv.norm_eps, dv.norm_eps);
  EXPECT_EQ(gv.rope_theta, dv.rope_theta);
  EXPECT_EQ(g->config().image_token_id, 712);  // <|image_pad|>, looked up in tokenizer.ggml.tokens
  EXPECT_EQ(g->config().spatial_merge_size, d->config().spatial_merge_size);
  // HF's projector norm uses the text eps (1e-6), not the mmproj's clip eps (1e-5).
  EXPECT_EQ(g->config().projector_norm_eps, d->config().projector_norm_eps);
  const ProcessorConfig &gp = g->processor_config(), &dp = d->processor_config();
  EXPECT_EQ(gp.longest_edge, dp.longest_edge);
  EXPECT_EQ(gp.patch_size, dp.patch_size);
  EXPECT_EQ(gp.image_mean, dp.image_mean);
  EXPECT_EQ(gp.image_std, dp.image_std);
  // processor_config.json's rescale_factor is read as the double it is: 1 / it is exactly 255.
  EXPECT_EQ(dp.rescale_factor, 1.0 / 255.0);
  EXPECT_EQ(gp.rescale_factor, dp.rescale_factor);
  // generation_config is not in GGUF: LightOnOCR-2's documented defaults, ids from the GGUF.
  const GenerationConfig &gg = g->generation_config(), &dg = d->generation_config();
  EXPECT_EQ(gg.eos_token_ids, dg.eos_token_ids);
  EXPECT_EQ(gg.pad_token_id, dg.pad_token_id);
  EXPECT_EQ(gg.do_sample, dg.do_sample);
  EXPECT_EQ(gg.temperature, dg.temperature);
  EXPECT_EQ(gg.top_p, dg.top_p);
  EXPECT_EQ(gg.top_k, dg.top_k);
  EXPECT_TRUE(g->has_vision());
}

TEST(GgufModel, F32WeightsAreTheSafetensorsOnesWithVisionQkUnpermuted) {
  const auto g = load_gguf("tiny_a-f32.gguf", "mmproj-tiny_a-f32.gguf", "ref");
  const auto d = load_dir(kDir, "ref");
  const ModelWeights &a = g->weights(), &b = d->weights();
  EXPECT_TRUE(same_matrix(a.text.embed_tokens, b.text.embed_tokens));
  EXPECT_TRUE(same_matrix(a.text.lm_head, b.text.lm_head));
  EXPECT_TRUE(same_matrix(a.text.norm, b.text.norm));
  ASSERT_EQ(a.text.layers.size(), b.text.layers.size());
  for (size_t i = 0; i < a.text.layers.size(); ++i) {
    const auto &x = a.text.layers[i], &y = b.text.layers[i];
    for (auto [p, q] : {std::pair{&x.q_proj, &y.q_proj}, {&x.k_proj, &y.k_proj}, {&x.v_proj, &y.v_proj},
                        {&x.o_proj, &y.o_proj}, {&x.gate_proj, &y.gate_proj}, {&x.up_proj, &y.up_proj},
                        {&x.down_proj, &y.down_proj}, {&x.q_norm, &y.q_norm}, {&x.k_norm, &y.k_norm},
                        {&x.input_layernorm, &y.input_layernorm},
                        {&x.post_attention_layernorm, &y.post_attention_layernorm}})
      EXPECT_TRUE(same_matrix(*p, *q)) << "text layer " << i;
  }
  EXPECT_TRUE(same_matrix(a.vision.patch_conv, b.vision.patch_conv));
  EXPECT_TRUE(same_matrix(a.vision.ln_pre, b.vision.ln_pre));
  for (size_t i = 0; i < a.vision.layers.size(); ++i) {
    const auto &x = a.vision.layers[i], &y = b.vision.layers[i];
    for (auto [p, q] : {std::pair{&x.q_proj, &y.q_proj}, {&x.k_proj, &y.k_proj}, {&x.v_proj, &y.v_proj},
                        {&x.o_proj, &y.o_proj}, {&x.gate_proj, &y.gate_proj}, {&x.up_proj, &y.up_proj},
                        {&x.down_proj, &y.down_proj}, {&x.attention_norm, &y.attention_norm},
                        {&x.ffn_norm, &y.ffn_norm}})
      EXPECT_TRUE(same_matrix(*p, *q)) << "vision layer " << i;
  }
  for (auto [p, q] : {std::pair{&a.projector.norm, &b.projector.norm},
                      {&a.projector.merging_layer, &b.projector.merging_layer},
                      {&a.projector.linear_1, &b.projector.linear_1}, {&a.projector.linear_2, &b.projector.linear_2}})
    EXPECT_TRUE(same_matrix(*p, *q));
  // The converter did permute: the file's rows are not the HF rows (else the check above proves nothing).
  const auto mm = io::GgufFile::open(gguf("mmproj-tiny_a-f32.gguf"));
  const std::vector<float> q_file = mm->dequantize(*mm->find("v.blk.0.attn_q.weight"));
  const Matrix& q_hf = b.vision.layers[0].q_proj;
  EXPECT_NE(q_file[1 * q_hf.cols], q_hf.at(1, 0));
  EXPECT_EQ(q_file[1 * q_hf.cols], q_hf.at(8, 0));  // head_dim 16: file row 1 (j 0, s 1) = HF row 8
}

TEST(GgufModel, F32GgufComputesTheSafetensorsNumbersBitForBit) {
  for (const char* backend : {"ref", "cpu-f32", "cpu-bf16"}) {
    SCOPED_TRACE(backend);
    const Outputs g = run_case(*load_gguf("tiny_a-f32.gguf", "mmproj-tiny_a-f32.gguf", backend));
    const Outputs d = run_case(*load_dir(kDir, backend));
    ASSERT_FALSE(d.logits.empty());
    ASSERT_FALSE(d.vision.empty());
    EXPECT_TRUE(bit_equal(g.vision, d.vision));
    EXPECT_TRUE(bit_equal(g.embeds, d.embeds));
    EXPECT_TRUE(bit_equal(g.logits, d.logits));
    EXPECT_EQ(g.tokens, d.tokens);
  }
}

TEST(GgufModel, F16AndBf16GgufWithinTolerance) {
  const Outputs d = run_case(*load_dir(kDir, "ref"));
  // Weights rounded once to 11 (F16) or 8 (BF16) significant bits; logit std is about 3.
  for (auto [text, mmproj, tol] : {std::tuple{"tiny_a-f16.gguf", "mmproj-tiny_a-f16.gguf", 2e-2},
                                   std::tuple{"tiny_a-bf16.gguf", "mmproj-tiny_a-f32.gguf", 1.5e-1}}) {
    SCOPED_TRACE(text);
    const Outputs g = run_case(*load_gguf(text, mmproj, "ref"));
    const double dl = max_abs_diff(g.logits, d.logits), de = max_abs_diff(g.embeds, d.embeds);
    std::printf("[gguf] %s + %s vs safetensors (ref): logits max abs %.3g, image embeds max abs %.3g\n", text, mmproj,
                dl, de);
    EXPECT_LE(dl, tol);
    EXPECT_GT(dl, 0.0);  // the weights really are rounded
  }
}

// tiny_a's checkpoint with each text tensor replaced by the Q8_0 GGUF's dequantized values (the
// dequantizer is checked against gguf's NumPy one in gguf_test.cc).
std::string dequantized_checkpoint(const std::string& q8) {
  const fs::path dst = fs::temp_directory_path() / ("locr_gguf_deq_" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.is_regular_file() && e.path().filename() != "model.safetensors") fs::copy_file(e.path(), dst / e.path().filename());
  const auto st = io::SafetensorsFile::open(kDir + "/model.safetensors");
  const auto f = io::GgufFile::open(q8);
  const std::string lm = "model.language_model.";
  const std::map<std::string, std::string> names = {
      {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"}, {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "ffn_norm"}, {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"}};
  std::vector<std::pair<std::string, Tensor>> out;
  int replaced = 0;
  for (const auto& [name, info] : st->tensors()) {
    std::string g;
    if (name == lm + "embed_tokens.weight") g = "token_embd.weight";
    if (name == lm + "norm.weight") g = "output_norm.weight";
    if (name.rfind(lm + "layers.", 0) == 0) {
      const size_t a = (lm + "layers.").size(), b = name.find('.', a);
      const std::string rest = name.substr(b + 1, name.size() - b - 1 - std::string(".weight").size());
      g = "blk." + name.substr(a, b - a) + "." + names.at(rest) + ".weight";
    }
    if (g.empty()) {
      out.emplace_back(name, st->get(name));
      continue;
    }
    const io::GgufTensor* t = f->find(g);
    EXPECT_NE(t, nullptr) << g;
    if (!t) continue;
    const std::vector<float> v = f->dequantize(*t);
    Tensor x = Tensor::empty(DType::kF32, info.shape);
    std::memcpy(x.raw(), v.data(), v.size() * 4);
    out.emplace_back(name, x);
    replaced += t->type == static_cast<uint32_t>(io::GgmlType::kQ8_0);
  }
  EXPECT_GE(replaced, 15);  // every 2-D text weight is Q8_0 in the file
  io::write_safetensors((dst / "model.safetensors").string(), out);
  return dst.string();
}

using test::cosine;

TEST(GgufModel, Q8_0GgufRunsNativelyAgainstTheDequantizedReference) {
  const std::string deq = dequantized_checkpoint(gguf("tiny_a-q8_0.gguf"));
  const Outputs f32 = run_case(*load_dir(kDir, "ref"));
  // ref reads each Q8_0 weight dequantized exactly (Matrix::at) with unquantized activations: the
  // same numbers as the checkpoint holding the dequantized tensors.
  const Outputs ref = run_case(*load_gguf("tiny_a-q8_0.gguf", "mmproj-tiny_a-f32.gguf", "ref"));
  {
    const Outputs r = run_case(*load_dir(deq, "ref"));
    EXPECT_TRUE(bit_equal(ref.logits, r.logits)) << max_abs_diff(ref.logits, r.logits);
    EXPECT_TRUE(bit_equal(ref.embeds, r.embeds));
    EXPECT_EQ(ref.tokens, r.tokens);
  }
  const auto st = io::SafetensorsFile::open(kDir + "/model.safetensors");
  for (const char* backend : {"cpu-f32", "cpu-bf16"}) {
    SCOPED_TRACE(backend);
    const auto q8 = load_gguf("tiny_a-q8_0.gguf", "mmproj-tiny_a-f32.gguf", backend);
    // The CPU backends run the file's Q8_0 blocks in place (the int8 kernels), no copy.
    const auto file = io::GgufFile::open(gguf("tiny_a-q8_0.gguf"));
    const TextLayerWeights& L0 = q8->weights().text.layers[0];
    ASSERT_EQ(L0.q_proj.dtype, DType::kQ8_0);
    EXPECT_EQ(q8->weights().text.embed_tokens.dtype, DType::kQ8_0);
    const std::string_view bytes = file->data(*file->find("blk.0.attn_q.weight"));
    ASSERT_EQ(static_cast<size_t>(L0.q_proj.rows * dtype_row_bytes(DType::kQ8_0, L0.q_proj.cols)), bytes.size());
    EXPECT_EQ(std::memcmp(L0.q_proj.data, bytes.data(), bytes.size()), 0);
    // The converter's blocks are llama.cpp's quantizer applied to the checkpoint's F32 weight:
    // what --quantization q8_0 writes from the safetensors too.
    {
      LoadOptions lo;
      lo.backend = backend;
      lo.quantization = "q8_0";
      const auto sq = LightOnOcr::load(kDir, lo);
      const Matrix& q = sq->weights().text.layers[0].q_proj;
      ASSERT_EQ(q.dtype, DType::kQ8_0);
      EXPECT_EQ(std::memcmp(q.data, bytes.data(), bytes.size()), 0) << "locr's Q8_0 bytes differ from the converter's";
    }
    // Activations are quantized per 32 as well: within the seeds' threshold of the exact product.
    const Outputs g = run_case(*q8);
    const double d = max_abs_diff(g.logits, ref.logits), c = cosine(g.logits, ref.logits);
    std::printf("[gguf] tiny_a-q8_0 on %s (int8 kernels) vs ref on the same weights: logits max abs %.3g, "
                "cosine %.6f\n", backend, d, c);
    EXPECT_GT(d, 0.0);
    EXPECT_GT(c, 0.999);
    // The vision side is the F32 mmproj in both: FP32 arithmetic on cpu-f32, BF16 matmul inputs on cpu-bf16.
    EXPECT_GT(cosine(g.embeds, ref.embeds), std::string(backend) == "cpu-f32" ? 0.99999 : 0.999);
  }
  const double dl = max_abs_diff(ref.logits, f32.logits);
  std::printf("[gguf] tiny_a-q8_0 vs the F32 safetensors (ref): logits max abs %.3g\n", dl);
  EXPECT_GT(dl, 0.0);
  EXPECT_LE(dl, 0.5);  // Q8_0's rounding (relative 2^-8 per block) through 2 random layers; logit std ~3
  fs::remove_all(deq);
}

// A GGUF alone (no tokenizer.json beside it, as llama.cpp users have it): the tokenizer comes from
// its tokenizer.ggml.* metadata and gives the directory model's prompt ids and greedy tokens.
TEST(GgufModel, TokenizerFromTheGgufMetadataWhenNoTokenizerJsonIsBeside) {
  const fs::path dst = fs::temp_directory_path() / ("locr_gguf_alone_" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const char* f : {"tiny_a-f32.gguf", "mmproj-tiny_a-f32.gguf"}) fs::copy_file(gguf(f), dst / f);
  ASSERT_FALSE(fs::exists(dst / "tokenizer.json"));
  LoadOptions lo;
  lo.backend = "cpu-f32";
  lo.mmproj = (dst / "mmproj-tiny_a-f32.gguf").string();
  const auto g = LightOnOcr::load((dst / "tiny_a-f32.gguf").string(), lo);
  const auto d = load_dir(kDir, "cpu-f32");
  const std::string text = "Describe | a | b |\n用一句中文 <|box_start|>1,2<|box_end|> tokens.";
  const auto messages = LightOnOcr::make_messages(nullptr, &text, 1);
  const std::vector<io::Image> images{io::load_image(kFix + "/images/page_small.png")};
  EXPECT_EQ(g->build_prompt(messages, images).ids, d->build_prompt(messages, images).ids);
  const Outputs a = run_case(*g), b = run_case(*d);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_TRUE(bit_equal(a.logits, b.logits));
  fs::remove_all(dst);
}

TEST(GgufModel, TextOnlyWithoutMmprojRefusesImages) {
  const auto m = load_gguf("tiny_a-f32.gguf", "", "ref");
  EXPECT_FALSE(m->has_vision());
  const Outputs t = run_case(*m, /*image=*/false);
  const Outputs d = run_case(*load_dir(kDir, "ref"), /*image=*/false);
  EXPECT_TRUE(bit_equal(t.logits, d.logits));
  EXPECT_EQ(t.tokens, d.tokens);
  const std::string e = error_of([&] { run_case(*m, /*image=*/true); });
  EXPECT_NE(e.find("no vision encoder"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { m->image_tokens(56, 56); }).find("--mmproj"), std::string::npos);
}

TEST(GgufModel, WrongFilesAreClearErrors) {
  // The mmproj as the model, the text GGUF as the mmproj, an mmproj with --mmproj for a directory.
  EXPECT_NE(error_of([] { load_gguf("mmproj-tiny_a-f32.gguf", "", "ref"); }).find("is an mmproj"), std::string::npos);
  EXPECT_NE(error_of([] { load_gguf("tiny_a-f32.gguf", "tiny_a-f16.gguf", "ref"); }).find("general.architecture 'clip'"),
            std::string::npos);
  LoadOptions lo;
  lo.mmproj = gguf("mmproj-tiny_a-f32.gguf");
  EXPECT_NE(error_of([&] { LightOnOcr::load(kDir, lo); }).find("goes with a text GGUF"), std::string::npos);
  EXPECT_NE(error_of([] { load_gguf("nonexistent.gguf", "", "ref"); }).find("not found"), std::string::npos);
}

// Rewrites a GGUF with one change (a metadata string, a tensor name), keeping every offset valid.
std::string patched(const std::string& src, const std::string& from, const std::string& to, const std::string& tag) {
  EXPECT_EQ(from.size(), to.size());
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) bytes.replace(at, from.size(), to);
  const fs::path dir = fs::temp_directory_path() / ("locr_gguf_bad_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(gguf("tokenizer.json"), dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  const std::string out = (dir / fs::path(src).filename()).string();
  std::ofstream(out, std::ios::binary) << bytes;
  return out;
}

TEST(GgufModel, BadArchitectureProjectorAndMissingTensorsAreNamed) {
  LoadOptions lo;
  lo.backend = "ref";
  // general.architecture "qwen3" -> "qwen2": the keys are qwen3.*, so change the value only.
  std::string p = patched(gguf("tiny_a-f32.gguf"), std::string("\x05\x00\x00\x00\x00\x00\x00\x00qwen3", 13),
                          std::string("\x05\x00\x00\x00\x00\x00\x00\x00llama", 13), "arch");
  std::string e = error_of([&] { LightOnOcr::load(p, lo); });
  EXPECT_NE(e.find("general.architecture is 'llama'"), std::string::npos) << e;
  // A missing tensor: rename blk.1.ffn_up.weight.
  p = patched(gguf("tiny_a-f32.gguf"), "blk.1.ffn_up.weight", "blk.1.ffn_uq.weight", "tensor");
  e = error_of([&] { LightOnOcr::load(p, lo); });
  EXPECT_NE(e.find("missing tensor 'blk.1.ffn_up.weight'"), std::string::npos) << e;
  // A shape that disagrees with the metadata: qwen3.feed_forward_length (u32) 128 -> 96.
  const std::string ffn = "qwen3.feed_forward_length";
  p = patched(gguf("tiny_a-f32.gguf"), ffn + std::string("\x04\x00\x00\x00\x80\x00\x00\x00", 8),
              ffn + std::string("\x04\x00\x00\x00\x60\x00\x00\x00", 8), "shape");
  e = error_of([&] { LightOnOcr::load(p, lo); });
  EXPECT_NE(e.find("tensor 'blk.0.ffn_gate.weight' has shape [128, 64], expected [96, 64]"), std::string::npos) << e;
  // An mmproj of another width than the text model: clip.vision.projection_dim (u32) 64 -> 32.
  const std::string pd = "clip.vision.projection_dim";
  lo.mmproj = patched(gguf("mmproj-tiny_a-f32.gguf"), pd + std::string("\x04\x00\x00\x00\x40\x00\x00\x00", 8),
                      pd + std::string("\x04\x00\x00\x00\x20\x00\x00\x00", 8), "projdim");
  e = error_of([&] { LightOnOcr::load(gguf("tiny_a-f32.gguf"), lo); });
  EXPECT_NE(e.find("clip.vision.projection_dim 32 differs from the text model's embedding_length 64"),
            std::string::npos) << e;
  // Projector type other than lightonocr.
  lo.mmproj = patched(gguf("mmproj-tiny_a-f32.gguf"), "lightonocr", "lightonocX", "proj");
  e = error_of([&] { LightOnOcr::load(gguf("tiny_a-f32.gguf"), lo); });
  EXPECT_NE(e.find("clip.projector_type is 'lightonocX'"), std::string::npos) << e;
  // A vision tensor missing.
  lo.mmproj = patched(gguf("mmproj-tiny_a-f32.gguf"), "mm.patch_merger.weight", "mm.patch_mergeX.weight", "vt");
  e = error_of([&] { LightOnOcr::load(gguf("tiny_a-f32.gguf"), lo); });
  EXPECT_NE(e.find("missing tensor 'mm.patch_merger.weight'"), std::string::npos) << e;
}

}  // namespace
}  // namespace locr::model
