// The CUDA executor against the CPU FP32 executor on a tiny random model with head_dim 64 (the
// head size the CUDA attention kernels take; the tests/fixtures models tiny_a..tiny_d use 16-32):
//   - prefill and teacher-forced decode logits, every hidden state and the image embeddings
//     within BF16 tolerance (several sequences in one step, an image prompt);
//   - greedy tokens of generate() and of the engine (several sequences, an image, chunked
//     prefill) are near-argmax tokens of the FP32 reference at every step;
//   - decode steps replayed from CUDA graphs equal eager ones; device greedy sampling equals the
//     host argmax; seeded device sampling is reproducible.
// Every test skips (GTEST_SKIP) where kernels::cuda::available() is false.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <numeric>
#include <thread>

#include "io/image.h"
#include "kernels/cuda/cuda_api.h"
#include "model/executor.h"
#include "model/lightonocr/gguf_export.h"
#include "model/lightonocr/lighton_ocr.h"
#include "model/lightonocr/tap_names.h"
#include "model/taps.h"
#include "runtime/engine.h"
#include "runtime/executor_factory.h"
#include "runtime/generate.h"
#include "toolkit/compare.h"
#include "toolkit/synth_image.h"
#include "toolkit/synth_model.h"

namespace locr {
namespace {

using namespace std::chrono_literals;

#define SKIP_WITHOUT_GPU()                                          \
  do {                                                              \
    std::string why;                                                \
    if (!kernels::cuda::available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why; \
  } while (0)

const std::string& model_dir() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("locr_cuda_model_test_" + std::to_string(::getpid()));
    toolkit::MakeModelOptions o;
    o.preset = "tiny-hd64";
    o.seed = 7;
    o.dtype = DType::kF32;  // the CUDA executor converts to BF16 at upload
    o.out_dir = d.string();
    toolkit::make_model(o);
    return d.string();
  }();
  return dir;
}

const model::LightOnOcr& load(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<model::LightOnOcr>> models;
  auto& m = models[backend];
  if (!m) {
    model::LoadOptions lo;
    lo.backend = backend;
    m = model::LightOnOcr::load(model_dir(), lo);
  }
  return *m;
}

struct Cleanup : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    const auto d = std::filesystem::temp_directory_path() / ("locr_cuda_model_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(d, ec);
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

std::vector<int32_t> text_ids(const model::LightOnOcr& m, const std::string& text) {
  return m.build_prompt(model::LightOnOcr::make_messages(nullptr, &text, 0), {}).ids;
}

model::Prompt image_prompt(const model::LightOnOcr& m, int w, int h, int seed) {
  return m.build_prompt(model::LightOnOcr::make_messages(nullptr, nullptr, 1), {toolkit::synth_page(w, h, seed)});
}

void expect_close(const float* cand, const float* ref, int64_t n, const std::string& what, double max_abs = 0.5,
                  double min_cos = 0.999) {
  const auto s = toolkit::compare_tensors(cand, ref, n);
  EXPECT_LT(s.max_abs_error, max_abs) << what;
  EXPECT_GT(s.cosine_similarity, min_cos) << what;
}

// A token is acceptable when the FP32 reference ranks it within `tol` of its best logit (BF16
// rounding may swap near-ties, nothing else).
bool near_argmax(const float* ref_logits, int64_t V, int32_t tok, float tol = 0.1f) {
  const float best = *std::max_element(ref_logits, ref_logits + V);
  return tok >= 0 && tok < V && ref_logits[tok] >= best - tol;
}

struct Seq {
  std::vector<int32_t> ids;
  std::vector<int32_t> table;
  std::shared_ptr<model::ImageEmbeds> images;
  std::vector<int64_t> image_rows;
};

// The sequence of an image prompt: its image-token rows take the embeddings' rows in order.
Seq image_seq(const model::Prompt& p, std::shared_ptr<model::ImageEmbeds> emb, int32_t image_token_id) {
  Seq s;
  s.ids = p.ids;
  s.images = std::move(emb);
  s.image_rows.assign(p.ids.size(), -1);
  int64_t r = 0;
  for (size_t t = 0; t < p.ids.size(); ++t)
    if (p.ids[t] == image_token_id) s.image_rows[t] = r++;
  return s;
}

// Runs a prefill of every sequence in one step, then `steps` teacher-forced decode steps of all
// of them together (the next ids given), returning per step the logits [n_seqs, V].
std::vector<std::vector<float>> run_steps(model::Executor& ex, std::vector<Seq>& seqs,
                                          const std::vector<std::vector<int32_t>>& forced, int steps,
                                          const model::HiddenHook& prefill_hidden = nullptr) {
  std::vector<std::vector<float>> out;
  const int bs = ex.block_size();
  int32_t next_block = 0;
  for (auto& s : seqs) {
    const int64_t need = (static_cast<int64_t>(s.ids.size()) + steps + bs) / bs + 1;
    s.table.resize(need);
    std::iota(s.table.begin(), s.table.end(), next_block);
    next_block += static_cast<int32_t>(need);
  }
  EXPECT_LE(next_block, ex.kv_blocks());
  for (int st = 0; st <= steps; ++st) {
    std::vector<model::StepSeq> ss;
    for (size_t k = 0; k < seqs.size(); ++k) {
      Seq& s = seqs[k];
      model::StepSeq q;
      if (st == 0) {
        q.ids = s.ids.data();
        q.n = static_cast<int64_t>(s.ids.size());
        q.pos0 = 0;
        if (s.images) {
          q.images = s.images.get();
          q.image_rows = s.image_rows.data();
        }
      } else {
        s.ids.push_back(forced[k][st - 1]);
        q.ids = &s.ids.back();
        q.n = 1;
        q.pos0 = static_cast<int64_t>(s.ids.size()) - 1;
      }
      q.block_table = s.table.data();
      q.table_len = static_cast<int64_t>(s.table.size());
      q.want_logits = true;
      ss.push_back(q);
    }
    model::StepOutput o;
    ex.step(ss, &o, st == 0 ? prefill_hidden : model::HiddenHook());
    EXPECT_EQ(o.logits.dim(0), static_cast<int64_t>(seqs.size()));
    out.emplace_back(o.logits.data<float>(), o.logits.data<float>() + o.logits.numel());
  }
  return out;
}

model::ExecutorOptions small_pool(bool graphs = true) {
  model::ExecutorOptions o;
  o.block_size = 16;
  o.kv_cache_bytes = 64LL << 20;
  o.max_kv_blocks = 512;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 2048;
  o.max_model_len = 2048;
  o.cuda_graphs = graphs;
  return o;
}

TEST(CudaModel, LogitsHiddenStatesAndImageEmbeddingsMatchCpuF32) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  const int64_t V = cpu.config().text.vocab_size;
  auto ce = runtime::make_executor(cpu, small_pool());
  auto ge = runtime::make_executor(gpu, small_pool());
  ASSERT_STREQ(ge->name(), "cuda");

  // Image embeddings (and the encoder output) of one page.
  const model::Prompt p = image_prompt(cpu, 224, 308, 3);
  Tensor vh_c, vh_g;
  auto jc = ce->vision_begin(p.images);
  ce->vision_run(*jc, ce->vision_layers());
  auto emb_c = ce->vision_finish(*jc, &vh_c);
  auto jg = ge->vision_begin(p.images);
  ge->vision_run(*jg, 1);  // incremental, as the engine runs it
  EXPECT_FALSE(jg->done());
  ge->vision_run(*jg, ge->vision_layers());
  ASSERT_TRUE(jg->done());
  auto emb_g = ge->vision_finish(*jg, &vh_g);
  ASSERT_EQ(emb_g->rows(), emb_c->rows());
  expect_close(vh_g.data<float>(), vh_c.data<float>(), vh_c.numel(), "vision_hidden", 1.0);
  const Tensor ec = emb_c->to_host(), eg = emb_g->to_host();
  expect_close(eg.data<float>(), ec.data<float>(), ec.numel(), "image_embeds", 1.0);

  // Three sequences in one prefill step (one with the image), then teacher-forced decodes.
  auto make = [&](std::shared_ptr<model::ImageEmbeds> emb) {
    std::vector<Seq> s(3);
    s[0].ids = text_ids(cpu, "Hello, how are you?");
    s[1] = image_seq(p, emb, cpu.config().image_token_id);
    s[2].ids = text_ids(cpu, "The future of AI is");
    return s;
  };
  const int steps = 6;
  std::vector<std::vector<int32_t>> forced(3);
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < steps; ++i) forced[k].push_back(100 + 37 * k + 11 * i);
  std::vector<std::vector<float>> hid_c, hid_g;
  auto sc = make(emb_c);
  auto sg = make(emb_g);
  const auto lc = run_steps(*ce, sc, forced, steps, [&](int, const float* h, int64_t rows) {
    hid_c.emplace_back(h, h + rows * cpu.config().text.hidden_size);
  });
  const auto lg = run_steps(*ge, sg, forced, steps, [&](int, const float* h, int64_t rows) {
    hid_g.emplace_back(h, h + rows * gpu.config().text.hidden_size);
  });
  ASSERT_EQ(hid_c.size(), hid_g.size());
  for (size_t i = 0; i < hid_c.size(); ++i)
    expect_close(hid_g[i].data(), hid_c[i].data(), static_cast<int64_t>(hid_c[i].size()), "hidden." + std::to_string(i),
                 1.0);
  for (int st = 0; st <= steps; ++st)
    for (int k = 0; k < 3; ++k) {
      const float* a = lg[st].data() + k * V;
      const float* b = lc[st].data() + k * V;
      expect_close(a, b, V, "logits step " + std::to_string(st) + " seq " + std::to_string(k));
      const int32_t am = static_cast<int32_t>(std::max_element(a, a + V) - a);
      EXPECT_TRUE(near_argmax(b, V, am)) << "step " << st << " seq " << k;
    }
}

TEST(CudaModel, GreedyGenerationPicksReferenceArgmaxTokens) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  const int64_t V = cpu.config().text.vocab_size;
  for (const bool image : {false, true}) {
    model::Prompt p;
    if (image) p = image_prompt(gpu, 280, 196, 5);
    else p.ids = text_ids(gpu, "Convert this page to markdown.");
    runtime::DecodeParams go;
    go.max_tokens = 16;
    go.sampling.temperature = 0;
    const auto got = runtime::generate(gpu, p, go).tokens;
    ASSERT_EQ(got.size(), 16u);
    // Replay the GPU's tokens through the FP32 reference: each must be (near) its argmax.
    model::Prompt full = p;
    std::vector<std::vector<float>> ref;
    runtime::GenerateHooks hooks;
    hooks.on_prompt_logits = [&](const float* l, int64_t v) { ref.emplace_back(l, l + v); };
    go.max_tokens = 1;
    for (size_t i = 0; i < got.size(); ++i) {
      runtime::generate(cpu, full, go, hooks);
      full.ids.push_back(got[i]);
    }
    ASSERT_EQ(ref.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(near_argmax(ref[i].data(), V, got[i])) << (image ? "image" : "text") << " token " << i;
  }
}

TEST(CudaModel, GraphReplayEqualsEagerDecode) {
  SKIP_WITHOUT_GPU();
  const auto& gpu = load("cuda");
  const int64_t V = gpu.config().text.vocab_size;
  for (const int n_seqs : {1, 3, 5}) {  // buckets 1, 4 (one padded row), 8 (three)
    auto eager = runtime::make_executor(gpu, small_pool(false));
    auto graph = runtime::make_executor(gpu, small_pool(true));
    const char* prompts[] = {"a", "Hello there", "| x | y |", "def f(): pass", "12345"};
    std::vector<Seq> se(n_seqs), sg(n_seqs);
    std::vector<std::vector<int32_t>> forced(n_seqs);
    for (int k = 0; k < n_seqs; ++k) {
      se[k].ids = sg[k].ids = text_ids(gpu, prompts[k]);
      for (int i = 0; i < 8; ++i) forced[k].push_back(200 + 13 * k + 7 * i);
    }
    const auto le = run_steps(*eager, se, forced, 8);
    const auto lg = run_steps(*graph, sg, forced, 8);  // step 1 captures, steps 2.. replay
    for (size_t st = 0; st < le.size(); ++st)
      for (int k = 0; k < n_seqs; ++k) {
        const float* a = lg[st].data() + k * V;
        const float* b = le[st].data() + k * V;
        expect_close(a, b, V, "batch " + std::to_string(n_seqs) + " step " + std::to_string(st), 0.05, 0.99999);
        EXPECT_EQ(std::max_element(a, a + V) - a, std::max_element(b, b + V) - b);
      }
  }
}

TEST(CudaModel, DeviceSamplingGreedyEqualsHostArgmaxAndSeededIsReproducible) {
  SKIP_WITHOUT_GPU();
  const auto& gpu = load("cuda");
  const int64_t V = gpu.config().text.vocab_size;
  auto ex = runtime::make_executor(gpu, small_pool());
  ASSERT_TRUE(ex->supports_device_sampling());
  std::vector<int32_t> ids = text_ids(gpu, "Hello, how are you?");
  std::vector<int32_t> table(8);
  std::iota(table.begin(), table.end(), 0);
  model::StepSeq s;
  s.ids = ids.data();
  s.n = static_cast<int64_t>(ids.size());
  s.block_table = table.data();
  s.table_len = 8;
  s.want_logits = true;
  model::StepOutput o;
  ex->step({s}, &o);
  const float* l = o.logits.data<float>();
  const int32_t host_argmax = static_cast<int32_t>(std::max_element(l, l + V) - l);
  // The same decode position again (rewriting the same KV rows) with device sampling.
  model::DeviceSample greedy;
  greedy.want_logprob = true;
  s.sample = &greedy;
  ex->step({s}, &o);
  EXPECT_EQ(o.tokens[0], host_argmax);
  EXPECT_LE(o.logprobs[0], 0.0f);
  EXPECT_TRUE(o.logits.empty_tensor());
  model::DeviceSample hot;
  hot.temperature = 0.9f, hot.top_p = 0.95f, hot.seed = 1234, hot.step = 3;
  s.sample = &hot;
  ex->step({s}, &o);
  const int32_t t1 = o.tokens[0];
  ex->step({s}, &o);
  EXPECT_EQ(o.tokens[0], t1);
  EXPECT_GE(t1, 0);
  EXPECT_LT(t1, V);
}

TEST(CudaModel, EngineServesSeveralSequencesWithReferenceTokens) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  const int64_t V = cpu.config().text.vocab_size;
  runtime::EngineOptions eo;
  eo.max_num_seqs = 8;
  eo.max_num_batched_tokens = 96;  // chunked prefill of the image prompt
  eo.max_model_len = 1024;
  eo.kv_cache_bytes = 32LL << 20;
  runtime::Engine engine(gpu, eo);
  EXPECT_STREQ(engine.executor_name(), "cuda");
  std::vector<runtime::RequestInput> ins;
  const char* prompts[] = {"Hello, how are you?", "Bonjour", "| a | b |", "def f(x):", "1234567890", "Short"};
  for (const char* t : prompts) {
    runtime::RequestInput in;
    in.prompt_ids = text_ids(gpu, t);
    in.decode.max_tokens = 12;
    in.decode.ignore_eos = true;
    in.decode.loop_guard.enabled = false;
    in.decode.sampling.temperature = 0;
    ins.push_back(in);
  }
  {
    const model::Prompt p = image_prompt(gpu, 252, 336, 9);
    runtime::RequestInput in;
    in.prompt_ids = p.ids;
    in.images = p.images;
    in.decode.max_tokens = 12;
    in.decode.ignore_eos = true;
    in.decode.loop_guard.enabled = false;
    in.decode.sampling.temperature = 0;
    in.decode.logprobs = 0;  // still sampled on the device
    ins.push_back(in);
  }
  {
    runtime::RequestInput in;  // host-side logits processing: the host Sampler path
    in.prompt_ids = text_ids(gpu, "Penalised");
    in.decode.max_tokens = 12;
    in.decode.ignore_eos = true;
    in.decode.loop_guard.enabled = false;
    in.decode.sampling.temperature = 0;
    in.decode.penalties.repetition = 1.3f;
    ins.push_back(in);
  }
  std::vector<std::shared_ptr<runtime::RequestStream>> streams;
  for (const auto& in : ins) streams.push_back(engine.submit(in));
  for (size_t i = 0; i < ins.size(); ++i) {
    std::vector<int32_t> toks;
    std::string reason;
    for (;;) {
      auto e = streams[i]->next(60s);
      ASSERT_TRUE(e.has_value()) << "request " << i << " timed out";
      if (e->token >= 0) {
        toks.push_back(e->token);
        if (ins[i].decode.logprobs == 0) {
          EXPECT_LE(e->logprob, 0.0f);
        }
      }
      if (e->finished) {
        reason = runtime::finish_reason_name(e->finish_reason);
        break;
      }
    }
    EXPECT_EQ(reason, "length") << "request " << i;
    ASSERT_EQ(toks.size(), 12u) << "request " << i;
    if (ins[i].decode.penalties.repetition != 1.0f) continue;  // the reference below has no penalties
    model::Prompt full;
    full.ids = ins[i].prompt_ids;
    full.images = ins[i].images;
    runtime::DecodeParams go;
    go.max_tokens = 1;
    go.sampling.temperature = 0;
    for (size_t t = 0; t < toks.size(); ++t) {
      std::vector<float> ref;
      runtime::GenerateHooks hooks;
      hooks.on_prompt_logits = [&](const float* l, int64_t v) { ref.assign(l, l + v); };
      runtime::generate(cpu, full, go, hooks);
      EXPECT_TRUE(near_argmax(ref.data(), V, toks[t])) << "request " << i << " token " << t;
      full.ids.push_back(toks[t]);
    }
  }
  for (int i = 0; i < 100 && engine.kv_blocks_free() != engine.kv_blocks_total(); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine.kv_blocks_free(), engine.kv_blocks_total());
}

// A forced decode (--debug-forced-output) on a request the device would otherwise sample (greedy,
// logprobs 0): the engine takes the host path, emits the forced ids in order then EOS, and reports
// the model's logprob of each forced token (checked against the CPU FP32 model).
TEST(CudaModel, ForcedDecodeTakesTheHostPathWithTheModelsLogprobs) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  runtime::EngineOptions eo;
  eo.max_num_seqs = 4;
  eo.max_model_len = 512;
  eo.kv_cache_bytes = 16LL << 20;
  runtime::Engine engine(gpu, eo);
  runtime::RequestInput in;
  in.prompt_ids = text_ids(gpu, "Force this");
  in.decode.max_tokens = 20;
  in.decode.sampling.temperature = 0;
  in.decode.logprobs = 0;
  in.decode.eos_ids = {42};  // any id: what ends the forced output
  in.decode.forced_ids = {17, 300, 5, 641, 17};
  auto s = engine.submit(in);
  std::vector<int32_t> toks;
  std::vector<float> lps;
  std::string reason;
  for (;;) {
    auto e = s->next(60s);
    ASSERT_TRUE(e.has_value()) << "timed out";
    if (e->token >= 0) {
      toks.push_back(e->token);
      lps.push_back(e->logprob);
    }
    if (e->finished) {
      reason = runtime::finish_reason_name(e->finish_reason);
      break;
    }
  }
  std::vector<int32_t> want = in.decode.forced_ids;
  want.push_back(in.decode.eos_ids.front());
  EXPECT_EQ(toks, want);
  EXPECT_EQ(reason, "stop");
  ASSERT_EQ(lps.size(), want.size());
  model::Prompt full;
  full.ids = in.prompt_ids;
  runtime::DecodeParams go;
  go.max_tokens = 1;
  go.sampling.temperature = 0;
  for (size_t t = 0; t < want.size(); ++t) {
    double ref = 0;
    runtime::GenerateHooks hooks;
    hooks.on_prompt_logits = [&](const float* l, int64_t v) {
      const double mx = *std::max_element(l, l + v);
      double sum = 0;
      for (int64_t i = 0; i < v; ++i) sum += std::exp(l[i] - mx);
      ref = l[want[t]] - mx - std::log(sum);
    };
    runtime::generate(cpu, full, go, hooks);
    EXPECT_NEAR(lps[t], ref, 0.05) << "token " << t;  // BF16 on the GPU vs FP32 on the CPU
    full.ids.push_back(want[t]);
  }
}

TEST(CudaModel, KvPoolFromGpuMemoryUtilization) {
  SKIP_WITHOUT_GPU();
  const auto& gpu = load("cuda");
  model::ExecutorOptions o = small_pool();
  o.kv_cache_bytes = -1;
  o.gpu_memory_utilization = 0.5;
  o.max_kv_blocks = 100;
  auto ex = runtime::make_executor(gpu, o);
  EXPECT_EQ(ex->kv_blocks(), 100);  // capped: the device has far more than 100 blocks' worth
}

// The one forward pass records named taps on the GPU as on the CPU: the same names, shapes, and
// values within BF16 tolerance, below the layer (q/k after RoPE, attention output, MLP output).
TEST(CudaModel, NamedTapsMatchCpuF32BelowTheLayer) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  const std::vector<std::string> names{"text.0.attn_norm", "text.0.q", "text.0.k", "text.0.attn_out",
                                       "text.1.mlp_out", "text.norm"};
  const auto known = model::tap_names(cpu.config(), false);
  model::Taps tc = model::Taps::select(names, known), tg = model::Taps::select(names, known);
  auto ce = runtime::make_executor(cpu, small_pool(false));
  auto ge = runtime::make_executor(gpu, small_pool(false));
  ASSERT_TRUE(ce->set_taps(&tc));
  ASSERT_TRUE(ge->set_taps(&tg));
  std::vector<Seq> sc(1), sg(1);
  sc[0].ids = sg[0].ids = text_ids(cpu, "Taps below the layer.");
  run_steps(*ce, sc, {{}}, 0);
  run_steps(*ge, sg, {{}}, 0);
  const auto c = tc.tensors(), g = tg.tensors();
  ASSERT_EQ(c.size(), names.size());
  ASSERT_EQ(g.size(), names.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(g[i].first, c[i].first);
    ASSERT_EQ(g[i].second.shape(), c[i].second.shape()) << c[i].first;
    expect_close(g[i].second.data<float>(), c[i].second.data<float>(), c[i].second.numel(), c[i].first, 1.0);
  }
}

// The image embeddings of one page, then a text and an image sequence prefilled in one step and
// four teacher-forced decode steps (decode rows take the quantized GEMV, prefill rows and the
// vision encoder the dequantizing GEMM): the GPU model against `ref` holding the same weights
// (quantized ones dequantized exactly) and the same KV element type, within the BF16 tolerance of
// the tests above.
void expect_model_matches_ref(const model::LightOnOcr& ref, const model::LightOnOcr& gpu) {
  const int64_t V = ref.config().text.vocab_size;
  auto re = runtime::make_executor(ref, small_pool(false));
  auto ge = runtime::make_executor(gpu, small_pool());
  ASSERT_STREQ(ge->name(), "cuda");
  const model::Prompt p = image_prompt(ref, 196, 252, 4);
  auto embeds = [&](model::Executor& ex) {
    auto job = ex.vision_begin(p.images);
    ex.vision_run(*job, ex.vision_layers());
    return ex.vision_finish(*job, nullptr);
  };
  const auto er = embeds(*re), eg = embeds(*ge);
  const Tensor hr = er->to_host(), hg = eg->to_host();
  ASSERT_EQ(hg.numel(), hr.numel());
  expect_close(hg.data<float>(), hr.data<float>(), hr.numel(), "image_embeds", 1.0);
  auto make = [&](std::shared_ptr<model::ImageEmbeds> emb) {
    std::vector<Seq> s(2);
    s[0].ids = text_ids(ref, "Quantized weights, FP8 keys.");
    s[1] = image_seq(p, emb, ref.config().image_token_id);
    return s;
  };
  const std::vector<std::vector<int32_t>> forced{{101, 202, 303, 404}, {55, 66, 77, 88}};
  auto sr = make(er);
  auto sg = make(eg);
  const auto lr = run_steps(*re, sr, forced, 4);
  const auto lg = run_steps(*ge, sg, forced, 4);
  for (size_t st = 0; st < lr.size(); ++st)
    for (int k = 0; k < 2; ++k) {
      const float* a = lg[st].data() + k * V;
      const float* b = lr[st].data() + k * V;
      expect_close(a, b, V, "logits step " + std::to_string(st) + " seq " + std::to_string(k));
      EXPECT_TRUE(near_argmax(b, V, static_cast<int32_t>(std::max_element(a, a + V) - a)))
          << "step " << st << " seq " << k;
    }
}

// --quantization (q8_0; q4_k_m, which gives this model Q4_K, Q6_K and Q8_0 matrices) and
// --kv-cache-dtype fp8 on the GPU, alone and together.
TEST(CudaModel, QuantizedWeightsAndFp8KvCacheMatchRef) {
  SKIP_WITHOUT_GPU();
  const std::pair<const char*, const char*> variants[] = {{"q8_0", ""}, {"q4_k_m", ""}, {"", "fp8"}, {"q4_k_m", "fp8"}};
  for (const auto& [quant, kv] : variants) {
    SCOPED_TRACE(std::string("quantization '") + quant + "', kv cache '" + kv + "'");
    auto load_as = [&](const char* backend) {
      model::LoadOptions lo;
      lo.backend = backend;
      lo.quantization = quant;
      lo.kv_cache_dtype = kv;
      return model::LightOnOcr::load(model_dir(), lo);
    };
    const auto ref = load_as("ref"), gpu = load_as("cuda");
    EXPECT_EQ(gpu->decoder().kv_dtype(), *kv ? DType::kF8E4M3 : DType::kBF16);
    if (*quant) {
      std::set<DType> types;
      for (const auto& L : gpu->weights().text.layers)
        for (const kernels::Matrix* m : {&L.q_proj, &L.down_proj, &L.v_proj}) types.insert(m->dtype);
      EXPECT_TRUE(types.count(DType::kQ8_0)) << "no Q8_0 matrix";
      if (std::string(quant) == "q4_k_m") {
        EXPECT_TRUE(types.count(DType::kQ4_K) && types.count(DType::kQ6_K));
      }
    }
    expect_model_matches_ref(*ref, *gpu);
  }
}

// A Q8_0 GGUF pair (locr quantize --type q8_0 of the test model) runs on the GPU with its blocks
// uploaded as stored, the vision q/k rows unpermuted into buffers that are uploaded and dropped as
// they are bound (a later buffer may reuse a freed one's address), and matches ref on the same files.
TEST(CudaModel, Q8_0GgufRunsAsOnRef) {
  SKIP_WITHOUT_GPU();
  const auto dir = std::filesystem::temp_directory_path() / ("locr_cuda_gguf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = (dir / "tiny-q8_0.gguf").string(), mmproj = (dir / "mmproj-tiny-q8_0.gguf").string();
  model::export_gguf(model_dir(), text, mmproj, model::GgufOutType::kQ8_0);
  auto load_as = [&](const char* backend) {
    model::LoadOptions lo;
    lo.backend = backend;
    lo.mmproj = mmproj;
    return model::LightOnOcr::load(text, lo);
  };
  const auto ref = load_as("ref"), gpu = load_as("cuda");
  EXPECT_EQ(gpu->weights().text.layers[0].q_proj.dtype, DType::kQ8_0);
  EXPECT_EQ(gpu->weights().vision.layers[0].q_proj.dtype, DType::kQ8_0);
  expect_model_matches_ref(*ref, *gpu);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace locr
