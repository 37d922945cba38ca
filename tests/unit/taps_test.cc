// Named taps (model/taps.h): selection by name and pattern with clear errors, and on the tiny
// fixture model the tapped intermediates equal what the test computes itself from the weights
// (RMSNorm of the embedding rows, v/k projections with the per-head norm and RoPE, o_proj of the
// attention output, the residual relations), what transformers computed (the fixture goldens),
// and each other across the CPU backends. An executor that cannot tap makes generate fail.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/executor.h"
#include "model/lightonocr/executor.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/lightonocr/tap_names.h"
#include "model/taps.h"
#include "runtime/executor_factory.h"
#include "runtime/generate.h"

namespace locr::model {
namespace {

const std::string kTiny = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a";

const LightOnOcr& tiny(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<LightOnOcr>> models;
  auto& m = models[backend];
  if (!m) {
    LoadOptions lo;
    lo.backend = backend;
    lo.image_align = 14;  // as the fixture cases were made
    m = LightOnOcr::load(kTiny, lo);
  }
  return *m;
}

// The fixture cases' prompts (tests/fixtures/models/tiny_a/cases/{text_only,image_a14}.json).
Prompt text_prompt(const LightOnOcr& m) {
  const std::string text = "Hello, world! Bonjour le monde.";
  return m.build_prompt(LightOnOcr::make_messages(nullptr, &text, 0), {});
}
Prompt image_prompt(const LightOnOcr& m) {
  const io::Image img = io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png");
  return m.build_prompt(LightOnOcr::make_messages(nullptr, nullptr, 1), {img});
}

std::map<std::string, Tensor> run_taps(const LightOnOcr& m, const Prompt& p, const std::vector<std::string>& sel,
                                       std::vector<std::string>* missing = nullptr) {
  Taps taps = Taps::select(sel, tap_names(m.config(), m.has_vision()));
  runtime::DecodeParams go;
  go.max_tokens = 2;
  go.sampling.temperature = 0;
  runtime::GenerateHooks hooks;
  hooks.taps = &taps;
  runtime::generate(m, p, go, hooks);
  if (missing) *missing = taps.missing();
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : taps.tensors()) out[n] = t;
  return out;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  const Tensor x = a.to_f32(), y = b.to_f32();
  double d = 0;
  for (int64_t i = 0; i < x.numel(); ++i) d = std::max(d, std::fabs(double(x.data<float>()[i]) - y.data<float>()[i]));
  return d;
}

double cosine(const Tensor& a, const Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    ab += x * y, aa += x * x, bb += y * y;
  }
  return ab / std::sqrt(aa * bb + 1e-30);
}

// Independent helpers over row-major F32 (x [n, k], w [m, k] as the checkpoint stores Linear).
std::vector<float> rms_norm(const float* x, const float* w, int64_t n, int64_t d, double eps) {
  std::vector<float> y(n * d);
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += double(x[r * d + i]) * x[r * d + i];
    const double inv = 1.0 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = static_cast<float>(x[r * d + i] * inv * w[i]);
  }
  return y;
}
std::vector<float> linear(const float* x, const Tensor& w, int64_t n) {
  const int64_t m = w.dim(0), k = w.dim(1);
  std::vector<float> y(n * m);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < m; ++o) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += double(x[r * k + i]) * w.data<float>()[o * k + i];
      y[r * m + o] = static_cast<float>(s);
    }
  return y;
}
Tensor as_tensor(const std::vector<float>& v, int64_t rows) {
  Tensor t = Tensor::empty(DType::kF32, {rows, static_cast<int64_t>(v.size()) / rows});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST(TapsSelect, NamesPatternsAndOrder) {
  const std::vector<std::string> known = {"text.0.q", "text.0.k", "text.1.q", "text.1.k", "vision.patch_embed"};
  const Taps t = Taps::select({"text.*.k", "vision.patch_embed", "text.0.k"}, known);
  EXPECT_EQ(t.selected(), (std::vector<std::string>{"text.0.k", "text.1.k", "vision.patch_embed"}));
  EXPECT_EQ(t.exact(), (std::vector<std::string>{"vision.patch_embed", "text.0.k"}));
  EXPECT_EQ(Taps::select({"text.?.q"}, known).selected(), (std::vector<std::string>{"text.0.q", "text.1.q"}));
  EXPECT_TRUE(tap_glob_match("*", "text.0.q"));
  EXPECT_TRUE(tap_glob_match("text.*.attn_out", "text.12.attn_out"));
  EXPECT_FALSE(tap_glob_match("text.*.attn_out", "text.12.attn_proj"));
  EXPECT_FALSE(tap_glob_match("text.1", "text.12"));
}

TEST(TapsSelect, UnknownNameListsCloseNames) {
  const std::vector<std::string> known = tap_names(tiny("ref").config(), true);
  try {
    Taps::select({"text.0.atn_out"}, known);
    FAIL() << "an unknown tap was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown tap 'text.0.atn_out'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("text.0.attn_out"), std::string::npos) << msg;  // the closest name first
  }
  try {
    Taps::select({"text.*.nope"}, known);
    FAIL() << "a pattern matching nothing was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matches no tap"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Taps::select({"text.5.q"}, known), Error);  // tiny_a has 2 text layers
  EXPECT_THROW(Taps::select({}, known), Error);
}

TEST(TapsNames, EverySiteIsRecordedWithItsShape) {
  const LightOnOcr& m = tiny("ref");
  const Prompt p = image_prompt(m);
  std::vector<std::string> missing;
  const auto t = run_taps(m, p, {"*"}, &missing);
  EXPECT_TRUE(missing.empty()) << missing.size() << " not recorded, first " << (missing.empty() ? "" : missing[0]);
  const auto& tc = m.config().text;
  const auto& vc = m.config().vision;
  const int64_t T = static_cast<int64_t>(p.ids.size());
  EXPECT_EQ(t.size(), tap_names(m.config(), true).size());
  EXPECT_EQ(t.at("text.0.attn_norm").shape(), (std::vector<int64_t>{T, tc.hidden_size}));
  EXPECT_EQ(t.at("text.1.q").shape(), (std::vector<int64_t>{T, int64_t(tc.num_attention_heads) * tc.head_dim}));
  EXPECT_EQ(t.at("text.1.k").shape(), (std::vector<int64_t>{T, int64_t(tc.num_key_value_heads) * tc.head_dim}));
  EXPECT_EQ(t.at("text.0.attn_out").shape(), (std::vector<int64_t>{T, int64_t(tc.num_attention_heads) * tc.head_dim}));
  EXPECT_EQ(t.at("text.0.mlp_act").shape(), (std::vector<int64_t>{T, tc.intermediate_size}));
  const int64_t N = t.at("vision.patch_embed").dim(0);
  EXPECT_EQ(t.at("vision.1.mlp_act").shape(), (std::vector<int64_t>{N, vc.intermediate_size}));
  EXPECT_EQ(t.at("projector.merged").dim(1), 4 * vc.hidden_size);
  EXPECT_EQ(t.at("projector.out").dim(1), tc.hidden_size);
}

TEST(TapsText, MatchIndependentComputation) {
  const LightOnOcr& m = tiny("ref");
  const Prompt p = text_prompt(m);
  const auto t = run_taps(m, p, {"text.*"});
  auto w = io::SafetensorsFile::open(kTiny + "/model.safetensors");
  const std::string pre = "model.language_model.";
  const auto& tc = m.config().text;
  const int64_t T = static_cast<int64_t>(p.ids.size()), H = tc.hidden_size, hd = tc.head_dim;
  const double eps = tc.rms_norm_eps;

  // text.0.attn_norm = RMSNorm(embedding rows of the prompt ids) * input_layernorm.
  const Tensor emb = w->get(pre + "embed_tokens.weight");
  std::vector<float> x(T * H);
  for (int64_t r = 0; r < T; ++r)
    std::copy_n(emb.data<float>() + int64_t(p.ids[r]) * H, H, x.begin() + r * H);
  EXPECT_LE(max_abs_diff(t.at("text.embed"), as_tensor(x, T)), 0.0);
  const std::vector<float> h =
      rms_norm(x.data(), w->get(pre + "layers.0.input_layernorm.weight").data<float>(), T, H, eps);
  EXPECT_LE(max_abs_diff(t.at("text.0.attn_norm"), as_tensor(h, T)), 1e-5);

  // text.0.v = attn_norm · v_proj^T.
  const float* hn = t.at("text.0.attn_norm").data<float>();
  EXPECT_LE(max_abs_diff(t.at("text.0.v"), as_tensor(linear(hn, w->get(pre + "layers.0.self_attn.v_proj.weight"), T), T)),
            1e-5);

  // text.0.k = RoPE(per-head RMSNorm(attn_norm · k_proj^T) * k_norm), rotate-half at positions 0..T-1.
  std::vector<float> k = linear(hn, w->get(pre + "layers.0.self_attn.k_proj.weight"), T);
  const int64_t nkv = tc.num_key_value_heads;
  k = rms_norm(k.data(), w->get(pre + "layers.0.self_attn.k_norm.weight").data<float>(), T * nkv, hd, eps);
  for (int64_t r = 0; r < T; ++r)
    for (int64_t hh = 0; hh < nkv; ++hh) {
      float* v = k.data() + (r * nkv + hh) * hd;
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double a = r * std::pow(double(tc.rope_theta), -2.0 * i / hd);
        const double x1 = v[i], x2 = v[i + hd / 2];
        v[i] = static_cast<float>(x1 * std::cos(a) - x2 * std::sin(a));
        v[i + hd / 2] = static_cast<float>(x2 * std::cos(a) + x1 * std::sin(a));
      }
    }
  EXPECT_LE(max_abs_diff(t.at("text.0.k"), as_tensor(k, T)), 1e-4);

  const int L = tc.num_hidden_layers;
  for (int l = 0; l < L; ++l) {
    SCOPED_TRACE(l);
    const std::string s = "text." + std::to_string(l) + ".";
    const std::string wl = pre + "layers." + std::to_string(l) + ".";
    // o_proj of the attention output (attn_out is taken before o_proj).
    EXPECT_LE(max_abs_diff(t.at(s + "attn_proj"),
                           as_tensor(linear(t.at(s + "attn_out").data<float>(), w->get(wl + "self_attn.o_proj.weight"), T), T)),
              1e-5);
    EXPECT_LE(max_abs_diff(t.at(s + "mlp_out"),
                           as_tensor(linear(t.at(s + "mlp_act").data<float>(), w->get(wl + "mlp.down_proj.weight"), T), T)),
              1e-5);
    // The residual stream: out = post_attn + mlp_out, post_attn = (previous out) + attn_proj.
    const Tensor& post = t.at(s + "post_attn");
    const Tensor& mlp = t.at(s + "mlp_out");
    std::vector<float> sum(T * H);
    for (int64_t i = 0; i < T * H; ++i) sum[i] = post.data<float>()[i] + mlp.data<float>()[i];
    EXPECT_LE(max_abs_diff(t.at(s + "out"), as_tensor(sum, T)), 1e-6);
    const Tensor& prev = l == 0 ? t.at("text.embed") : t.at("text." + std::to_string(l - 1) + ".out");
    for (int64_t i = 0; i < T * H; ++i) sum[i] = prev.data<float>()[i] + t.at(s + "attn_proj").data<float>()[i];
    EXPECT_LE(max_abs_diff(post, as_tensor(sum, T)), 1e-6);
  }
  // The last layer's output, final-normed, is text.norm.
  const std::vector<float> fin = rms_norm(t.at("text." + std::to_string(L - 1) + ".out").data<float>(),
                                          w->get(pre + "norm.weight").data<float>(), T, H, eps);
  EXPECT_LE(max_abs_diff(t.at("text.norm"), as_tensor(fin, T)), 1e-5);

  // transformers' hidden states of the same prompt (tests/fixtures/models/tiny_a/cases/text_only).
  auto g = io::SafetensorsFile::open(kTiny + "/cases/text_only.safetensors");
  EXPECT_LE(max_abs_diff(t.at("text.embed"), g->get("hidden.0")), 1e-6);
  for (int l = 0; l + 1 < L; ++l)
    EXPECT_LE(max_abs_diff(t.at("text." + std::to_string(l) + ".out"), g->get("hidden." + std::to_string(l + 1))), 1e-4);
  EXPECT_LE(max_abs_diff(t.at("text.norm"), g->get("hidden." + std::to_string(L))), 1e-4);
}

TEST(TapsVision, MatchGoldensAndPatchConv) {
  const LightOnOcr& m = tiny("ref");
  const Prompt p = image_prompt(m);
  const auto t = run_taps(m, p, {"vision.*", "projector.*"});
  auto g = io::SafetensorsFile::open(kTiny + "/cases/image_a14.safetensors");
  EXPECT_LE(max_abs_diff(t.at("projector.in"), g->get("vision_hidden")), 1e-4);
  EXPECT_LE(max_abs_diff(t.at("projector.out"), g->get("image_embeds")), 1e-4);
  const int last = m.config().vision.num_hidden_layers - 1;
  EXPECT_LE(max_abs_diff(t.at("vision." + std::to_string(last) + ".out"), t.at("projector.in")), 0.0);
  // vision.patch_embed = patches · patch_conv^T (the conv as a matmul over (c, ky, kx)).
  std::vector<ImageGrid> grids;
  const std::vector<float> patches = m.vision_patches(p.images, &grids);
  auto w = io::SafetensorsFile::open(kTiny + "/model.safetensors");
  Tensor conv = w->get("model.vision_encoder.patch_conv.weight");
  const int64_t V = conv.dim(0), K = conv.numel() / V, N = static_cast<int64_t>(patches.size()) / K;
  Tensor conv2 = Tensor::empty(DType::kF32, {V, K});
  std::copy_n(conv.data<float>(), V * K, conv2.data<float>());
  EXPECT_LE(max_abs_diff(t.at("vision.patch_embed"), as_tensor(linear(patches.data(), conv2, N), N)), 1e-5);
}

TEST(TapsBackends, CpuBackendsAgreeWithRef) {
  const std::vector<std::string> all = {"*"};
  const auto ref = run_taps(tiny("ref"), image_prompt(tiny("ref")), all);
  const auto f32 = run_taps(tiny("cpu-f32"), image_prompt(tiny("cpu-f32")), all);
  const auto bf16 = run_taps(tiny("cpu-bf16"), image_prompt(tiny("cpu-bf16")), all);
  ASSERT_EQ(f32.size(), ref.size());
  ASSERT_EQ(bf16.size(), ref.size());
  for (const auto& [name, r] : ref) {
    SCOPED_TRACE(name);
    // cpu-f32 against the scalar oracle: FP32 with another summation order (docs/numerics.md).
    double scale = 0;
    for (int64_t i = 0; i < r.numel(); ++i) scale = std::max(scale, double(std::fabs(r.data<float>()[i])));
    EXPECT_LE(max_abs_diff(f32.at(name), r), 1e-4 * std::max(1.0, scale));
    // cpu-bf16 rounds matmul inputs to BF16: same direction, not the same digits.
    EXPECT_EQ(bf16.at(name).shape(), r.shape());
    EXPECT_GE(cosine(bf16.at(name), r), 0.99);
  }
}

TEST(TapsGenerate, TapsDoNotChangeTheResult) {
  const LightOnOcr& m = tiny("cpu-f32");
  const Prompt p = image_prompt(m);
  runtime::DecodeParams go;
  go.max_tokens = 6;
  go.sampling.temperature = 0;
  go.loop_guard.enabled = false;
  std::vector<float> plain, tapped;
  runtime::GenerateHooks h1;
  h1.on_prompt_logits = [&](const float* l, int64_t v) { plain.assign(l, l + v); };
  const auto r1 = runtime::generate(m, p, go, h1);
  Taps taps = Taps::select({"*"}, tap_names(m.config(), true));
  runtime::GenerateHooks h2;
  h2.on_prompt_logits = [&](const float* l, int64_t v) { tapped.assign(l, l + v); };
  h2.taps = &taps;
  const auto r2 = runtime::generate(m, p, go, h2);
  EXPECT_EQ(r1.tokens, r2.tokens);
  EXPECT_EQ(plain, tapped);
  // Taps cover the prompt only: decode steps add no rows.
  EXPECT_EQ(taps.tensors().back().second.dim(0), static_cast<int64_t>(p.ids.size()));
}

// An executor without taps (as the CUDA one): generate refuses instead of dumping nothing.
class NoTapExecutor : public CpuExecutor {
 public:
  using CpuExecutor::CpuExecutor;
  const char* name() const override { return "notap"; }
  bool set_taps(Taps* t) override { return Executor::set_taps(t); }
};

TEST(TapsGenerate, ExecutorWithoutTapsIsAClearError) {
  const LightOnOcr& m = tiny("ref");
  const Prompt p = text_prompt(m);
  NoTapExecutor exec(m, runtime::single_sequence_options(static_cast<int64_t>(p.ids.size()), p.ids.size() + 4));
  runtime::DecodeParams go;
  go.max_tokens = 2;
  Taps taps = Taps::select({"text.0.q"}, tap_names(m.config(), false));
  runtime::GenerateHooks hooks;
  hooks.taps = &taps;
  try {
    runtime::generate(m, exec, p, go, hooks);
    FAIL() << "generate ran with taps on an executor that cannot record them";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("notap executor cannot record named taps"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(runtime::generate(m, exec, p, go, {}));  // without taps it runs
}

TEST(TapsGenerate, AFailedCallLeavesNoTapsOnTheExecutor) {
  const LightOnOcr& m = tiny("ref");
  Prompt bad = text_prompt(m);
  bad.ids.push_back(m.config().image_token_id);  // an image token without an image: generate throws
  CpuExecutor exec(m, runtime::single_sequence_options(static_cast<int64_t>(bad.ids.size()), bad.ids.size() + 4));
  runtime::DecodeParams go;
  go.max_tokens = 2;
  Taps taps = Taps::select({"text.0.q"}, tap_names(m.config(), false));
  runtime::GenerateHooks hooks;
  hooks.taps = &taps;
  EXPECT_THROW(runtime::generate(m, exec, bad, go, hooks), Error);
  runtime::generate(m, exec, text_prompt(m), go, {});  // no taps asked: none recorded
  EXPECT_EQ(taps.missing(), std::vector<std::string>{"text.0.q"});
}

}  // namespace
}  // namespace locr::model
