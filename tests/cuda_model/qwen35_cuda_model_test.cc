// The Qwen3.5 family's CUDA executor (src/model/qwen35/cuda) against its host executor on cpu-f32,
// on `locr make-model --preset tiny-qwen35` (4 layers [DeltaNet x 3, gated attention], the real
// head widths: attention 256, DeltaNet 128, vision 64):
//   - image embeddings and the tower's output, every hidden state of a prefill of three sequences
//     in one step (one with a page image and its three-row M-RoPE positions), and the logits of
//     that prefill and of teacher-forced decode steps, within BF16 tolerance;
//   - greedy generation on the GPU picks, at every step, a near-argmax token of the FP32 reference;
//   - the KV pool sized from --gpu-memory-utilization, one state slot per sequence.
// Every test skips (GTEST_SKIP) where kernels::cuda::available() is false.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "kernels/cuda/cuda_api.h"
#include "model/executor.h"
#include "model/qwen35/model.h"
#include "runtime/executor_factory.h"
#include "runtime/generate.h"
#include "toolkit/compare.h"
#include "toolkit/synth_image.h"
#include "toolkit/synth_model.h"

namespace locr {
namespace {

#define SKIP_WITHOUT_GPU()                                                                \
  do {                                                                                    \
    std::string why;                                                                      \
    if (!kernels::cuda::available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why; \
  } while (0)

std::filesystem::path dir_path() {
  return std::filesystem::temp_directory_path() / ("locr_qwen35_cuda_test_" + std::to_string(::getpid()));
}

const std::string& model_dir() {
  static const std::string dir = [] {
    toolkit::MakeModelOptions o;
    o.preset = "tiny-qwen35";
    o.seed = 7;
    o.dtype = DType::kF32;  // the CUDA backend converts to BF16 at upload
    o.out_dir = dir_path().string();
    toolkit::make_model(o);
    return o.out_dir;
  }();
  return dir;
}

struct Cleanup : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_path(), ec);
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

const model::qwen35::Model& load(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<model::qwen35::Model>> models;
  auto& m = models[backend];
  if (!m) {
    model::LoadOptions lo;
    lo.backend = backend;
    m = model::qwen35::Model::load(model_dir(), lo);
  }
  return *m;
}

// Within BF16 tolerance of the FP32 reference: the largest error a few percent of the reference's
// largest magnitude, and the direction nearly the same.
void expect_close(const float* cand, const float* ref, int64_t n, const std::string& what, double rel = 0.05,
                  double min_cos = 0.999) {
  double peak = 0;
  for (int64_t i = 0; i < n; ++i) peak = std::max(peak, std::fabs(static_cast<double>(ref[i])));
  const auto s = toolkit::compare_tensors(cand, ref, n);
  EXPECT_LE(s.max_abs_error, rel * peak + 1e-3) << what << " (largest reference magnitude " << peak << ")";
  EXPECT_GT(s.cosine_similarity, min_cos) << what;
}

// A token is acceptable when the FP32 reference ranks it within `tol` of its best logit (BF16
// rounding may swap near-ties, nothing else).
bool near_argmax(const float* ref_logits, int64_t V, int32_t tok, float tol = 0.1f) {
  const float best = *std::max_element(ref_logits, ref_logits + V);
  return tok >= 0 && tok < V && ref_logits[tok] >= best - tol;
}

model::Prompt text_prompt(const model::qwen35::Model& m, const std::string& text) {
  return m.build_prompt(m.render_chat(model::Model::make_messages(nullptr, &text, 0), {{"enable_thinking", false}}), {});
}

model::Prompt page_prompt(const model::qwen35::Model& m, int w, int h, int seed) {
  return m.build_prompt(m.render_chat(model::Model::make_messages(nullptr, nullptr, 1), {{"enable_thinking", false}}),
                        {toolkit::synth_page(w, h, seed)});
}

// The prompt with one more token: its three position rows gain the column a token after the
// prompt takes (its index + rope_delta in all three), as the executors compute it.
void append_token(model::Prompt& p, int32_t id) {
  const int64_t T = static_cast<int64_t>(p.ids.size());
  p.ids.push_back(id);
  if (p.positions.empty()) return;
  std::vector<int64_t> pos(3 * (T + 1));
  for (int a = 0; a < 3; ++a) {
    std::copy(p.positions.begin() + a * T, p.positions.begin() + (a + 1) * T, pos.begin() + a * (T + 1));
    pos[a * (T + 1) + T] = T + p.rope_delta;
  }
  p.positions = std::move(pos);
}

model::ExecutorOptions small_pool() {
  model::ExecutorOptions o;
  o.block_size = 16;
  o.kv_cache_bytes = 64LL << 20;
  o.max_kv_blocks = 256;
  o.max_num_seqs = 4;
  o.max_num_batched_tokens = 2048;
  o.max_model_len = 2048;
  return o;
}

struct Seq {
  model::Prompt p;
  std::vector<int32_t> ids;
  std::vector<int32_t> table;
  std::shared_ptr<model::ImageEmbeds> images;
  std::vector<int64_t> image_rows;
};

// A prefill of every sequence in one step (sequence k in state slot k), then `steps` teacher-forced
// decode steps of all of them together; per step the logits [n_seqs, V].
std::vector<std::vector<float>> run_steps(model::Executor& ex, std::vector<Seq>& seqs,
                                          const std::vector<std::vector<int32_t>>& forced, int steps,
                                          const model::HiddenHook& prefill_hidden) {
  std::vector<std::vector<float>> out;
  const int bs = ex.block_size();
  int32_t next_block = 0;
  for (auto& s : seqs) {
    s.ids = s.p.ids;
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
        q.prompt = true;
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
      if (!s.p.positions.empty()) {
        q.mrope = s.p.positions.data();
        q.mrope_len = static_cast<int64_t>(s.p.ids.size());
      }
      q.rope_delta = s.p.rope_delta;
      q.state_slot = static_cast<int32_t>(k);
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

TEST(Qwen35CudaModel, LogitsHiddenStatesAndImageEmbeddingsMatchCpuF32) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  const int64_t V = cpu.config().text.vocab_size, H = cpu.config().text.hidden_size;
  auto ce = runtime::make_executor(cpu, small_pool());
  auto ge = runtime::make_executor(gpu, small_pool());
  ASSERT_STREQ(ge->name(), "cuda");
  EXPECT_EQ(ge->state_slots(), 4);

  // One page: the tower's output and the merger's embeddings.
  const model::Prompt page = page_prompt(cpu, 300, 420, 3);
  Tensor vh_c, vh_g;
  auto jc = ce->vision_begin(page.images);
  ce->vision_run(*jc, ce->vision_layers());
  auto emb_c = ce->vision_finish(*jc, &vh_c);
  auto jg = ge->vision_begin(page.images);
  ge->vision_run(*jg, 1);  // incremental, as the engine runs it
  EXPECT_FALSE(jg->done());
  ge->vision_run(*jg, ge->vision_layers());
  ASSERT_TRUE(jg->done());
  auto emb_g = ge->vision_finish(*jg, &vh_g);
  ASSERT_EQ(emb_g->rows(), emb_c->rows());
  expect_close(vh_g.data<float>(), vh_c.data<float>(), vh_c.numel(), "vision_hidden");
  const Tensor ec = emb_c->to_host(), eg = emb_g->to_host();
  expect_close(eg.data<float>(), ec.data<float>(), ec.numel(), "image_embeds");

  // Three sequences in one prefill (the page between two text prompts), then decode steps.
  auto make = [&](std::shared_ptr<model::ImageEmbeds> emb) {
    std::vector<Seq> s(3);
    s[0].p = text_prompt(cpu, "Hello, how are you?");
    s[1].p = page;
    s[1].images = std::move(emb);
    s[1].image_rows.assign(page.ids.size(), -1);
    int64_t r = 0;
    for (size_t t = 0; t < page.ids.size(); ++t)
      if (page.ids[t] == cpu.image_token_id()) s[1].image_rows[t] = r++;
    s[2].p = text_prompt(cpu, "The future of AI is");
    return s;
  };
  const int steps = 6;
  std::vector<std::vector<int32_t>> forced(3);
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < steps; ++i) forced[k].push_back(100 + 37 * k + 11 * i);
  std::vector<std::vector<float>> hid_c, hid_g;
  auto sc = make(emb_c);
  auto sg = make(emb_g);
  const auto lc = run_steps(*ce, sc, forced, steps,
                            [&](int, const float* h, int64_t rows) { hid_c.emplace_back(h, h + rows * H); });
  const auto lg = run_steps(*ge, sg, forced, steps,
                            [&](int, const float* h, int64_t rows) { hid_g.emplace_back(h, h + rows * H); });
  ASSERT_EQ(hid_c.size(), static_cast<size_t>(cpu.config().text.num_hidden_layers + 1));
  ASSERT_EQ(hid_c.size(), hid_g.size());
  for (size_t i = 0; i < hid_c.size(); ++i)
    expect_close(hid_g[i].data(), hid_c[i].data(), static_cast<int64_t>(hid_c[i].size()), "hidden." + std::to_string(i));
  for (int st = 0; st <= steps; ++st)
    for (int k = 0; k < 3; ++k) {
      const float* a = lg[st].data() + k * V;
      const float* b = lc[st].data() + k * V;
      expect_close(a, b, V, "logits step " + std::to_string(st) + " seq " + std::to_string(k));
      const int32_t am = static_cast<int32_t>(std::max_element(a, a + V) - a);
      EXPECT_TRUE(near_argmax(b, V, am)) << "step " << st << " seq " << k;
    }
}

TEST(Qwen35CudaModel, GreedyGenerationPicksReferenceArgmaxTokens) {
  SKIP_WITHOUT_GPU();
  const auto& cpu = load("cpu-f32");
  const auto& gpu = load("cuda");
  const int64_t V = cpu.config().text.vocab_size;
  for (const bool image : {false, true}) {
    const model::Prompt p = image ? page_prompt(gpu, 280, 196, 5) : text_prompt(gpu, "Convert this page to markdown.");
    runtime::DecodeParams go;
    go.max_tokens = 16;
    go.sampling.temperature = 0;
    go.loop_guard.enabled = false;
    go.ignore_eos = true;
    const auto got = runtime::generate(gpu, p, go).tokens;
    ASSERT_EQ(got.size(), 16u);
    // Replay the GPU's tokens through the FP32 reference: each must be (near) its argmax. The
    // continued prompt keeps the page's M-RoPE rows; the tokens after them follow rope_delta.
    model::Prompt full = p;
    std::vector<std::vector<float>> ref;
    runtime::GenerateHooks hooks;
    hooks.on_prompt_logits = [&](const float* l, int64_t v) { ref.emplace_back(l, l + v); };
    go.max_tokens = 1;
    for (size_t i = 0; i < got.size(); ++i) {
      runtime::generate(cpu, full, go, hooks);
      append_token(full, got[i]);
    }
    ASSERT_EQ(ref.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(near_argmax(ref[i].data(), V, got[i])) << (image ? "image" : "text") << " token " << i;
  }
}

TEST(Qwen35CudaModel, KvPoolFromGpuMemoryUtilization) {
  SKIP_WITHOUT_GPU();
  const auto& gpu = load("cuda");
  model::ExecutorOptions o = small_pool();
  o.kv_cache_bytes = -1;
  o.gpu_memory_utilization = 0.5;
  o.max_kv_blocks = 0;
  o.max_num_seqs = 16;
  auto ex = runtime::make_executor(gpu, o);
  EXPECT_GT(ex->kv_blocks(), 0);
  EXPECT_EQ(ex->state_slots(), 16);
}

}  // namespace
}  // namespace locr
