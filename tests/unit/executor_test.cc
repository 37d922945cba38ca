// The executor boundary on CPU: the CPU executor gives bit-identical results to the direct
// TextDecoder / VisionEncoder / Projector calls it wraps (single and several sequences, chunked
// prefill then decode, image rows), and backend "cuda" is refused with a clear message where
// it cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "core/error.h"
#ifdef LOCR_HAVE_CUDA
#include "kernels/cuda/cuda_api.h"
#endif
#include "io/image.h"
#include "model/executor.h"
#include "model/lightonocr/executor.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/executor_factory.h"
#include "runtime/generate.h"

namespace locr::model {
namespace {

const LightOnOcr& tiny(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<LightOnOcr>> models;
  auto& m = models[backend];
  if (!m) {
    LoadOptions lo;
    lo.backend = backend;
    m = LightOnOcr::load(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a", lo);
  }
  return *m;
}

std::vector<int32_t> text_ids(const LightOnOcr& m, const std::string& text) {
  return m.build_prompt(LightOnOcr::make_messages(nullptr, &text, 0), {}).ids;
}

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Blocks of 4 tokens, a pool of n_blocks.
ExecutorOptions small_pool(const LightOnOcr& m, int64_t n_blocks) {
  ExecutorOptions eo;
  eo.block_size = 4;
  eo.kv_cache_bytes = n_blocks * KvPool::bytes_per_block(m.config().text, 4, m.decoder().kv_dtype());
  return eo;
}

// n tokens of ids from pos0, keys in the blocks of tab.
StepSeq step_seq(const std::vector<int32_t>& ids, const std::vector<int32_t>& tab, int64_t pos0, int64_t n,
                 bool logits, int64_t n_logits, bool prompt = false) {
  StepSeq s;
  s.ids = ids.data() + pos0;
  s.n = n;
  s.pos0 = pos0;
  s.block_table = tab.data();
  s.table_len = static_cast<int64_t>(tab.size());
  s.want_logits = logits;
  s.n_logits = n_logits;
  s.prompt = prompt;
  return s;
}

class CpuExecutorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuExecutorTest, SeveralSequencesMatchDirectDecoderBitForBit) {
  const LightOnOcr& m = tiny(GetParam());
  const auto& tc = m.config().text;
  const int64_t H = tc.hidden_size, V = tc.vocab_size;
  const int bs = 4;
  ExecutorOptions eo;
  eo.block_size = bs;
  eo.kv_cache_bytes = 64 * KvPool::bytes_per_block(tc, bs, m.decoder().kv_dtype());
  CpuExecutor exec(m, eo);
  ASSERT_EQ(exec.kv_blocks(), 64);
  KvPool pool(tc, 64, bs, m.decoder().kv_dtype());

  const std::vector<int32_t> a = text_ids(m, "Hello, how are you?"), b = text_ids(m, "Bonjour tout le monde");
  std::vector<int32_t> ta(16), tb(16);  // interleaved, non-identity block tables
  for (int i = 0; i < 16; ++i) ta[i] = 2 * i + 1, tb[i] = 2 * i;
  // Step 1: a's first 5 tokens (no logits) and all of b; step 2: the rest of a and one decode of b.
  struct Plan {
    const std::vector<int32_t>* ids;
    const std::vector<int32_t>* table;
    int64_t pos0, n;
    bool logits;
  };
  const int32_t next_b = 7;
  std::vector<int32_t> b2 = b;
  b2.push_back(next_b);
  const std::vector<std::vector<Plan>> plan = {
      {{&a, &ta, 0, 5, false}, {&b, &tb, 0, static_cast<int64_t>(b.size()), true}},
      {{&a, &ta, 5, static_cast<int64_t>(a.size()) - 5, true}, {&b2, &tb, static_cast<int64_t>(b.size()), 1, true}}};
  for (const auto& st : plan) {
    std::vector<StepSeq> seqs;
    std::vector<SeqStep> direct;
    int64_t R = 0;
    for (const auto& p : st) {
      StepSeq s;
      s.ids = p.ids->data() + p.pos0;
      s.n = p.n;
      s.pos0 = p.pos0;
      s.block_table = p.table->data();
      s.table_len = static_cast<int64_t>(p.table->size());
      s.want_logits = p.logits;
      seqs.push_back(s);
      direct.push_back({p.pos0, p.n, p.table->data()});
      R += p.n;
    }
    StepOutput out;
    std::vector<std::vector<float>> hid_exec;
    exec.step(seqs, &out, [&](int, const float* h, int64_t rows) { hid_exec.emplace_back(h, h + rows * H); });

    Tensor x = Tensor::empty(DType::kF32, {R, H});
    int64_t row = 0;
    for (const auto& p : st) {
      m.decoder().embed(p.ids->data() + p.pos0, p.n, x.data<float>() + row * H);
      row += p.n;
    }
    std::vector<std::vector<float>> hid_direct;
    m.decoder().forward(x.data<float>(), direct, pool,
                        [&](int, const float* h) { hid_direct.emplace_back(h, h + R * H); });
    ASSERT_EQ(hid_exec.size(), hid_direct.size());
    for (size_t i = 0; i < hid_exec.size(); ++i)
      EXPECT_TRUE(same_bits(hid_exec[i].data(), hid_direct[i].data(), R * H)) << "hidden " << i;
    row = 0;
    int k = 0;
    for (size_t i = 0; i < st.size(); ++i) {
      row += st[i].n;
      if (!st[i].logits) continue;
      std::vector<float> ref(V);
      m.decoder().logits(x.data<float>() + (row - 1) * H, 1, ref.data());
      ASSERT_LT(k, out.logits.dim(0));
      EXPECT_EQ(out.logits_seq[k], static_cast<int>(i));
      EXPECT_TRUE(same_bits(out.logits.data<float>() + k * V, ref.data(), V)) << "logits of sequence " << i;
      ++k;
    }
    EXPECT_EQ(k, out.logits.empty_tensor() ? 0 : out.logits.dim(0));
  }
}

TEST_P(CpuExecutorTest, ImagePromptMatchesDirectPathBitForBit) {
  const LightOnOcr& m = tiny(GetParam());
  const auto& tc = m.config().text;
  const int64_t V = tc.vocab_size, H = tc.hidden_size;
  const Prompt p = m.build_prompt(LightOnOcr::make_messages(nullptr, nullptr, 1),
                                  {io::load_image(std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png")});
  const int64_t T = static_cast<int64_t>(p.ids.size());

  // Direct: encode_images + embed_prompt + forward + logits (what generate did before executors).
  const ImageEncoding enc = m.encode_images(p.images);
  Tensor x = m.embed_prompt(p.ids, &enc.embeds);
  KvCache cache(tc, T + 1, 16, m.decoder().kv_dtype());
  m.decoder().forward(x.data<float>(), T, cache);
  std::vector<float> ref(V);
  m.decoder().logits(x.data<float>() + (T - 1) * H, 1, ref.data());

  // Executor: vision in two increments, then one prefill step.
  ExecutorOptions eo;
  eo.block_size = 16;
  eo.kv_cache_bytes = 8 * KvPool::bytes_per_block(tc, 16, m.decoder().kv_dtype());
  CpuExecutor exec(m, eo);
  auto job = exec.vision_begin(p.images);
  EXPECT_EQ(job->n_patches(), enc.vision_hidden.dim(0));
  exec.vision_run(*job, 1);
  EXPECT_FALSE(job->done());
  exec.vision_run(*job, exec.vision_layers());
  ASSERT_TRUE(job->done());
  Tensor vh;
  auto emb = exec.vision_finish(*job, &vh);
  ASSERT_EQ(emb->rows(), enc.embeds.dim(0));
  EXPECT_TRUE(same_bits(vh.data<float>(), enc.vision_hidden.data<float>(), vh.numel()));
  const Tensor host = emb->to_host();
  EXPECT_TRUE(same_bits(host.data<float>(), enc.embeds.data<float>(), host.numel()));
  std::vector<int64_t> rows(T, -1);
  int64_t next = 0;
  for (int64_t t = 0; t < T; ++t)
    if (p.ids[t] == m.config().image_token_id) rows[t] = next++;
  std::vector<int32_t> table(8);
  std::iota(table.begin(), table.end(), 0);
  StepSeq s;
  s.ids = p.ids.data();
  s.n = T;
  s.block_table = table.data();
  s.table_len = 8;
  s.images = emb.get();
  s.image_rows = rows.data();
  s.want_logits = true;
  StepOutput out;
  exec.step({s}, &out);
  ASSERT_EQ(out.logits.dim(0), 1);
  EXPECT_TRUE(same_bits(out.logits.data<float>(), ref.data(), V));
}


// Speculative verification: one step over [t0, d1 .. dK] with the logits of all K+1 rows gives,
// bit for bit, the logits of K+1 one-row decode steps (each row attends to the cache as a decode
// row does), alone and beside another sequence's rows in the same step.
TEST_P(CpuExecutorTest, VerificationRowsEqualOneRowDecodeStepsBitForBit) {
  const LightOnOcr& m = tiny(GetParam());
  const auto& tc = m.config().text;
  const int64_t V = tc.vocab_size;
  const ExecutorOptions eo = small_pool(m, 256);
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "Row " + std::to_string(i) + " of a long page, ";
  for (const std::string& text : {std::string("Verify these draft tokens, please."), long_text}) {
  const std::vector<int32_t> prompt = text_ids(m, text);
  const std::vector<int32_t> other = text_ids(m, "Another sequence in the batch");
  const std::vector<int32_t> cont = {11, 42, 7, 300, 5, 19, 128, 64, 3};  // t0 then 8 drafts
  std::vector<int32_t> table(200), table_b(16);
  std::iota(table.begin(), table.end(), 16);
  std::iota(table_b.begin(), table_b.end(), 0);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), cont.begin(), cont.end());
  auto seq = [&](const std::vector<int32_t>& ids, const std::vector<int32_t>& tab, int64_t pos0, int64_t n,
                 int64_t n_logits) { return step_seq(ids, tab, pos0, n, true, n_logits); };
  const int64_t P = static_cast<int64_t>(prompt.size()), K1 = static_cast<int64_t>(cont.size());
  // One-row decode steps.
  CpuExecutor one(m, eo);
  StepOutput out;
  one.step({seq(all, table, 0, P, 1)}, &out);
  std::vector<float> ref;
  for (int64_t j = 0; j < K1; ++j) {
    one.step({seq(all, table, P + j, 1, 1)}, &out);
    ASSERT_EQ(out.logits.dim(0), 1);
    ref.insert(ref.end(), out.logits.data<float>(), out.logits.data<float>() + V);
  }
  for (const bool beside_other : {false, true}) {
    CpuExecutor verify(m, eo);
    verify.step({seq(all, table, 0, P, 1)}, &out);
    std::vector<StepSeq> steps;
    if (beside_other) steps.push_back(seq(other, table_b, 0, static_cast<int64_t>(other.size()), 1));
    steps.push_back(seq(all, table, P, K1, K1));
    verify.step(steps, &out);
    const int64_t first = beside_other ? 1 : 0;
    ASSERT_EQ(out.logits.dim(0), K1 + first);
    for (int64_t j = 0; j < K1; ++j) {
      EXPECT_EQ(out.logits_seq[first + j], beside_other ? 1 : 0);
      EXPECT_TRUE(same_bits(out.logits.data<float>() + (first + j) * V, ref.data() + j * V, V))
          << "row " << j << (beside_other ? " (beside another sequence)" : "") << ", prompt of " << P;
    }
  }
  }
}

// A prompt's logits do not depend on how it reached the decoder: in one step, after a prefix
// already in the cache (what a prefix-cache hit leaves to compute: down to one row), or in chunks
// beside another sequence's decode row. Its rows are marked as prompt rows (StepSeq::prompt), as the
// engine marks them, and the attention computes them as it computes a whole prompt.
TEST_P(CpuExecutorTest, PromptAfterACachedPrefixOrInChunksMatchesTheWholePromptBitForBit) {
  const LightOnOcr& m = tiny(GetParam());
  const auto& tc = m.config().text;
  const int64_t V = tc.vocab_size;
  const ExecutorOptions eo = small_pool(m, 256);
  std::string text;
  for (int i = 0; i < 12; ++i) text += "Line " + std::to_string(i) + " of a cached page, ";
  const std::vector<int32_t> prompt = text_ids(m, text), other = text_ids(m, "Another sequence");
  const int64_t P = static_cast<int64_t>(prompt.size());
  ASSERT_GT(P, 80);
  std::vector<int32_t> table(200), table_b(16);
  std::iota(table.begin(), table.end(), 16);
  std::iota(table_b.begin(), table_b.end(), 0);
  auto seq = [&](const std::vector<int32_t>& ids, const std::vector<int32_t>& tab, int64_t pos0, int64_t n,
                 bool logits, bool prompt_rows) { return step_seq(ids, tab, pos0, n, logits, 1, prompt_rows); };
  StepOutput out;
  CpuExecutor whole(m, eo);
  whole.step({seq(prompt, table, 0, P, true, true)}, &out);
  ASSERT_EQ(out.logits.dim(0), 1);
  const std::vector<float> ref(out.logits.data<float>(), out.logits.data<float>() + V);
  // The prefix (as an earlier request computed it), then the rest.
  for (const int64_t tail : {int64_t{1}, int64_t{3}, int64_t{16}, int64_t{17}, int64_t{40}}) {
    CpuExecutor cached(m, eo);
    cached.step({seq(prompt, table, 0, P - tail, false, true)}, &out);
    cached.step({seq(prompt, table, P - tail, tail, true, true)}, &out);
    ASSERT_EQ(out.logits.dim(0), 1);
    EXPECT_TRUE(same_bits(out.logits.data<float>(), ref.data(), V)) << "the last " << tail << " of " << P << " rows after the rest";
  }
  // Chunks of 7 rows, each step beside another sequence's prompt and then its decode rows.
  CpuExecutor chunked(m, eo);
  std::vector<int32_t> other_ids = other;
  other_ids.resize(other.size() + 64, 5);
  int64_t other_pos = 0;
  for (int64_t r0 = 0; r0 < P; r0 += 7) {
    const int64_t n = std::min<int64_t>(7, P - r0);
    const bool first = other_pos == 0;
    const int64_t on = first ? static_cast<int64_t>(other.size()) : 1;
    chunked.step({seq(other_ids, table_b, other_pos, on, true, first), seq(prompt, table, r0, n, r0 + n == P, true)},
                 &out);
    other_pos += on;
  }
  ASSERT_EQ(out.logits.dim(0), 2);
  EXPECT_TRUE(same_bits(out.logits.data<float>() + V, ref.data(), V)) << "the prompt in chunks of 7 rows";
}

// A greedy device sample (no log-probability) gets its token from the head's argmax (the 8-bit
// screen of Ops::matmul_argmax) and no logits row; it is the argmax of the logits row the same step
// gives without the sample. Other samples (a temperature, a log-probability) get logits rows.
TEST_P(CpuExecutorTest, GreedyRowsGetTheArgmaxOfTheirLogits) {
  const LightOnOcr& m = tiny(GetParam());
  const int64_t V = m.config().text.vocab_size;
  CpuExecutor exec(m, small_pool(m, 32));
  ASSERT_TRUE(exec.supports_device_sampling());
  const std::vector<int32_t> a = text_ids(m, "Hello, how are you?"), b = text_ids(m, "Bonjour tout le monde"),
                             c = text_ids(m, "The future of AI is");
  std::vector<int32_t> ta(8), tb(8), tc(8);
  for (int i = 0; i < 8; ++i) ta[i] = i, tb[i] = 8 + i, tc[i] = 16 + i;
  auto seqs = [&] {
    return std::vector<StepSeq>{step_seq(a, ta, 0, static_cast<int64_t>(a.size()), true, 1, true),
                                step_seq(b, tb, 0, static_cast<int64_t>(b.size()), true, 1, true),
                                step_seq(c, tc, 0, static_cast<int64_t>(c.size()), true, 1, true)};
  };
  StepOutput plain;
  exec.step(seqs(), &plain);
  ASSERT_EQ(plain.logits.dim(0), 3);
  DeviceSample greedy, warm, logprob;
  warm.temperature = 0.7f;
  logprob.want_logprob = true;
  std::vector<StepSeq> sampled = seqs();
  sampled[0].sample = &greedy;
  sampled[1].sample = &warm;
  sampled[2].sample = &logprob;
  StepOutput out;
  exec.step(sampled, &out);
  const float* la = plain.logits.data<float>();
  EXPECT_EQ(out.tokens[0], static_cast<int32_t>(std::max_element(la, la + V) - la));
  EXPECT_EQ(out.tokens[1], -1);
  EXPECT_EQ(out.tokens[2], -1);
  ASSERT_EQ(out.logits.dim(0), 2);
  EXPECT_EQ(out.logits_seq, (std::vector<int>{1, 2}));
  EXPECT_TRUE(same_bits(out.logits.data<float>(), la + V, 2 * V));
}

INSTANTIATE_TEST_SUITE_P(Backends, CpuExecutorTest, ::testing::Values("cpu-f32", "cpu-bf16"));

TEST(Executor, FactoryPicksCpuAndGenerateRunsOnIt) {
  const LightOnOcr& m = tiny("cpu-f32");
  auto exec = runtime::make_executor(m, runtime::single_sequence_options(10, 40));
  EXPECT_STREQ(exec->name(), "cpu");
  EXPECT_GE(exec->kv_blocks() * exec->block_size(), 40);
  EXPECT_TRUE(exec->supports_device_sampling());  // greedy rows: CpuExecutorTest.GreedyRowsGetTheArgmaxOfTheirLogits
  Prompt p;
  p.ids = text_ids(m, "The future of AI is");
  runtime::DecodeParams go;
  go.max_tokens = 8;
  go.sampling.temperature = 0;
  auto e2 = runtime::make_executor(
      m, runtime::single_sequence_options(static_cast<int64_t>(p.ids.size()), static_cast<int64_t>(p.ids.size()) + 8));
  EXPECT_EQ(runtime::generate(m, *e2, p, go).tokens, runtime::generate(m, p, go).tokens);
}

TEST(Executor, CudaBackendIsRefusedClearlyWhereItCannotRun) {
  LoadOptions lo;
  lo.backend = "cuda";
  const std::string dir = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a";
  auto message_of = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
#ifndef LOCR_HAVE_CUDA
  EXPECT_NE(message_of([&] { LightOnOcr::load(dir, lo); }).find("built without CUDA; rebuild with -DLOCR_CUDA=ON"),
            std::string::npos);
#else
  std::string why;
  if (!kernels::cuda::available(&why)) {
    const std::string msg = message_of([&] { LightOnOcr::load(dir, lo); });
    EXPECT_NE(msg.find("--backend cuda: " + why), std::string::npos) << msg;
  } else {
    // A GPU is there, but the fixture's head_dim (32) is not one the CUDA kernels take.
    auto m = LightOnOcr::load(dir, lo);
    const std::string msg = message_of([&] { runtime::make_executor(*m, runtime::single_sequence_options(4, 8)); });
    EXPECT_NE(msg.find("head_dim 64 or 128"), std::string::npos) << msg;
  }
#endif
}

}  // namespace
}  // namespace locr::model
