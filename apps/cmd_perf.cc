// `locr perf`: an in-process benchmark in the style of llama-bench. It times each stage of one OCR
// page on the loaded model — image preprocessing, vision encoder, projector, prefill of the page's
// prompt, decode at batch 1 with the page in context, decode at batch 1 with an empty context,
// decode at batch N — and prints time and achieved GFLOP/s or GB/s per stage, medians over
// --repeat runs, plus peak RSS. --json writes the medians. --profile-ops adds each stage's time op by
// op and shape (apps/perf_op_profile.h).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "apps/perf_op_profile.h"
#include "apps/perf_spec_replay.h"
#include "core/thread_pool.h"
#include "runtime/executor_factory.h"
#include "runtime/request_path.h"
#include "runtime/speculative.h"
#include "toolkit/bench_stats.h"
#include "toolkit/synth_image.h"

namespace locr::app {

namespace {

using Clock = std::chrono::steady_clock;

double time_it(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) { return toolkit::percentile(std::move(v), 50); }

int64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

// Bytes of weights one decode step reads: every decoder matrix plus the LM head (BF16).
double decoder_weight_bytes(const model::Model::ComputeShape& c) { return 2.0 * (c.decoder_params + c.lm_head_params); }

// Matmul FLOPs of the decoder for T tokens (attention over the causal context added separately).
double decoder_flops(const model::Model::ComputeShape& c, double T, double ctx_avg) {
  return 2 * T * c.decoder_params + 4 * T * ctx_avg * c.attention_width * c.attention_layers;
}

double vision_flops(const model::Model::ComputeShape& c, double N) {
  return 2 * N * c.vision_params + 4 * N * N * c.vision_width * c.vision_layers;
}

}  // namespace

int cmd_perf(int argc, char** argv) {
  Args a("perf", "In-process benchmark of one OCR page, stage by stage (preprocessing, vision encoder, projector,\n"
                 "prefill, decode at batch 1 and batch N), with GFLOP/s or GB/s and peak RSS.");
  add_model_options(a);
  a.option("image-size", "synthetic page size WxH before preprocessing (default 1089x1540, an A4 page)", "WxH");
  a.option("prompt-tokens", "text-only prompt length instead of a page (0 = the page prompt, default)", "N");
  a.option("gen-tokens", "tokens per decode measurement (default 32); decode GB/s counts BF16 weight bytes", "N");
  a.option("batch", "sequences decoding together for the batch-N measurement (default 8)", "N");
  a.option("repeat", "repetitions; medians are reported (default 3)", "R");
  a.option("json", "write the medians as JSON", "FILE");
  a.option("spec-replay", "also decode the page's --gen-tokens greedily through the serving engine at --batch, then "
           "again with each sequence's first-run tokens as drafts, K per step (1-16): both decode rates and whether "
           "the tokens are identical (the ceiling of speculative decoding)", "K");
  a.flag("profile-ops", "also time every kernel op of each stage (host backends): a table per stage of op, shape, "
         "calls, time, share and GFLOP/s or GB/s, per repetition (in --json: op_profile)");
  if (!a.parse(argc, argv)) return 0;
  auto m = load_any_model(a, a.get_flag("profile-ops"));  // either architecture (config.json)
  PerfOpProfile prof(m->ops());
  const model::Model::ComputeShape shape = m->compute_shape();
  // Models with a recurrent state (Qwen3.5): each sequence continues its own state slot.
  const bool recurrent = m->state_bytes_per_sequence() > 0;
  if (a.has("spec-replay") && recurrent)
    fail(ErrorKind::kUnsupported, "--spec-replay: this model (", m->architecture(), ") decodes without speculation ",
         "(its recurrent state cannot take back rejected drafts)");
  const int gen = std::max(1, a.get_int("gen-tokens", 32));
  const int batch = std::max(1, a.get_int("batch", 8));
  const int repeat = std::max(1, a.get_int("repeat", 3));
  const int text_tokens = a.get_int("prompt-tokens", 0);
  int W = 1089, Hh = 1540;
  if (a.has("image-size") && std::sscanf(a.get("image-size").c_str(), "%dx%d", &W, &Hh) != 2)
    fail(ErrorKind::kInvalidArgument, "--image-size expects WxH, e.g. 1089x1540");

  const io::Image page = toolkit::synth_page(W, Hh, 1);
  std::vector<double> t_pre, t_vis, t_proj, t_prefill, t_dec, t_dec0, t_decn;
  model::Prompt prompt;
  int64_t n_patches = 0;
  // Everything runs on the model's executor (CPU kernels or the GPU), as the engine runs it.
  std::unique_ptr<model::Executor> exec;
  const int bs = 16;
  const int64_t gen_blocks = (gen + 1 + bs - 1) / bs;
  for (int r = 0; r < repeat; ++r) {
    // Prompt: the recommended OCR request (image only), or a text prompt of the given length.
    std::shared_ptr<model::ImageEmbeds> emb;
    if (text_tokens > 0) {
      prompt.ids.assign(text_tokens, 0);
      for (int i = 0; i < text_tokens; ++i) prompt.ids[i] = (i * 7919) % m->vocab_size();
      prompt.positions.clear();
      prompt.rope_delta = 0;
      prompt.images.clear();
    } else {
      model::ProcessedImage img;
      t_pre.push_back(time_it([&] { img = m->preprocess(page); }));
      prompt = m->build_prompt(m->render_chat(runtime::RequestPath::ocr_messages(false),
                                              runtime::RequestPath::ocr_template_kwargs()),
                               {page});
      n_patches = static_cast<int64_t>(prompt.images[0].grid_h) * prompt.images[0].grid_w;
    }
    const int64_t T = static_cast<int64_t>(prompt.ids.size());
    const int64_t prompt_blocks = (T + gen + 1 + bs - 1) / bs;
    if (!exec) {
      model::ExecutorOptions eo = runtime::single_sequence_options(T, T + gen + 1);
      eo.block_size = bs;
      eo.max_kv_blocks = prompt_blocks + gen_blocks * (1 + batch);
      eo.max_num_seqs = batch;
      eo.cuda_graphs = true;
      exec = runtime::make_executor(*m, eo);
    }
    if (!prompt.images.empty()) {
      std::unique_ptr<model::VisionJob> job;
      prof.begin();
      t_vis.push_back(time_it([&] {
        job = exec->vision_begin(prompt.images);
        exec->vision_run(*job, exec->vision_layers());
        exec->synchronize();
      }));
      prof.end("vision encoder", t_vis.back());
      t_proj.push_back(time_it([&] { emb = exec->vision_finish(*job); }));
      prof.end("projector", t_proj.back());
    }
    const int64_t V = m->vocab_size();
    std::vector<int32_t> table(prompt_blocks), empty_table(gen_blocks);
    std::iota(table.begin(), table.end(), 0);
    std::iota(empty_table.begin(), empty_table.end(), static_cast<int32_t>(prompt_blocks));
    std::vector<int64_t> image_rows(T, -1);
    int64_t next_row = 0;
    for (int64_t t = 0; t < T; ++t)
      if (emb && prompt.ids[t] == m->image_token_id()) image_rows[t] = next_row++;
    model::DeviceSample greedy;  // argmax on the device where the executor samples there
    // `slot`: the sequence's state slot (recurrent models); `page`: its positions are the page
    // prompt's (multimodal RoPE rows, then rope_delta past them), else the token index.
    auto seq = [&](const int32_t* ids, int64_t n, int64_t pos0, const std::vector<int32_t>& tab, int slot = 0,
                   bool page = false) {
      model::StepSeq q;
      q.ids = ids;
      q.n = n;
      q.pos0 = pos0;
      q.block_table = tab.data();
      q.table_len = static_cast<int64_t>(tab.size());
      q.state_slot = recurrent ? slot : 0;
      if (page && !prompt.positions.empty()) {
        q.mrope = prompt.positions.data();
        q.mrope_len = T;
        q.rope_delta = prompt.rope_delta;
      }
      q.want_logits = true;
      if (exec->supports_device_sampling()) q.sample = &greedy;
      return q;
    };
    auto next_token = [&](const model::StepOutput& o, int k) {
      if (!o.logits.empty_tensor())
        for (size_t j = 0; j < o.logits_seq.size(); ++j)
          if (o.logits_seq[j] == k) {
            const float* l = o.logits.data<float>() + j * V;
            return static_cast<int32_t>(std::max_element(l, l + V) - l);
          }
      return o.tokens[k];
    };
    model::StepOutput out;
    // Prefill of the whole prompt (with the page's image rows).
    prof.begin();
    t_prefill.push_back(time_it([&] {
      model::StepSeq q = seq(prompt.ids.data(), T, 0, table, 0, true);
      if (emb) {
        q.images = emb.get();
        q.image_rows = image_rows.data();
      }
      exec->step({q}, &out);
    }));
    prof.end("prefill", t_prefill.back());
    // Decode at batch 1 with the prompt in context.
    int32_t tok = next_token(out, 0);
    prof.begin();
    t_dec.push_back(time_it([&] {
      for (int i = 0; i < gen; ++i) {
        exec->step({seq(&tok, 1, T + i, table, 0, true)}, &out);
        tok = next_token(out, 0);
      }
    }));
    prof.end("decode, batch 1, page context", t_dec.back());
    // Decode at batch 1 from an empty context (tg in llama-bench terms).
    prof.begin();
    t_dec0.push_back(time_it([&] {
      for (int i = 0; i < gen; ++i) exec->step({seq(&tok, 1, i, empty_table)}, &out);
    }));
    prof.end("decode, batch 1, empty context", t_dec0.back());
    // Decode at batch N: N sequences, one token each per step, one decoder pass per step.
    std::vector<std::vector<int32_t>> tables(batch);
    for (int s = 0; s < batch; ++s)
      for (int64_t b = 0; b < gen_blocks; ++b)
        tables[s].push_back(static_cast<int32_t>(prompt_blocks + gen_blocks * (1 + s) + b));
    std::vector<int32_t> toks(batch, 0);
    prof.begin();
    t_decn.push_back(time_it([&] {
      for (int i = 0; i < gen; ++i) {
        std::vector<model::StepSeq> steps;
        for (int s = 0; s < batch; ++s) steps.push_back(seq(&toks[s], 1, i, tables[s], s));
        exec->step(steps, &out);
      }
    }));
    prof.end("decode, batch " + std::to_string(batch), t_decn.back());
  }

  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  const double wbytes = decoder_weight_bytes(shape);
  nlohmann::ordered_json out;
  out["backend"] = m->backend();
  out["threads"] = ThreadPool::global().size();
  out["repeat"] = repeat;
  std::printf("locr perf: %s, %d threads, median of %d\n\n", out["backend"].get<std::string>().c_str(),
              ThreadPool::global().size(), repeat);
  std::printf("| stage | shape | time | rate |\n|---|---|---|---|\n");
  if (!t_vis.empty()) {
    const double vis = median(t_vis), proj = median(t_proj);
    const double vf = vision_flops(shape, static_cast<double>(n_patches));
    std::printf("| preprocess | %dx%d -> %dx%d | %.3f s | |\n", W, Hh, prompt.images[0].width, prompt.images[0].height,
                median(t_pre));
    std::printf("| vision encoder | %lld patches | %.2f s | %.0f GFLOP/s |\n", static_cast<long long>(n_patches), vis,
                vf / vis / 1e9);
    std::printf("| projector | %d tokens | %.3f s | |\n", m->image_tokens(prompt.images[0]), proj);
    out["image_size"] = {prompt.images[0].width, prompt.images[0].height};
    out["vision_patches"] = n_patches;
    out["vision_layers"] = shape.vision_layers;
    out["preprocess_s"] = median(t_pre);
    out["vision_encode_s"] = vis + proj;
    out["vision_gflops"] = vf / vis / 1e9;
  }
  const double pre = median(t_prefill), dec = median(t_dec), dec0 = median(t_dec0), decn = median(t_decn);
  std::printf("| prefill | %lld tokens | %.2f s | %.0f tok/s, %.0f GFLOP/s |\n", static_cast<long long>(T), pre, T / pre,
              decoder_flops(shape, double(T), double(T) / 2) / pre / 1e9);
  std::printf("| decode, batch 1, %lld context | %d tokens | %.2f s | %.1f tok/s, %.1f GB/s |\n",
              static_cast<long long>(T), gen, dec, gen / dec, wbytes * gen / dec / 1e9);
  std::printf("| decode, batch 1, empty context | %d tokens | %.2f s | %.1f tok/s, %.1f GB/s |\n", gen, dec0,
              gen / dec0, wbytes * gen / dec0 / 1e9);
  std::printf("| decode, batch %d | %d steps | %.2f s | %.1f tok/s |\n", batch, gen, decn, batch * gen / decn);
  std::printf("\npeak RSS: %.2f GiB\n", peak_rss_bytes() / double(1 << 30));
  if (prof.enabled()) {
    prof.print(repeat);
    out["op_profile"] = prof.to_json(repeat);
  }
  out["prompt_tokens"] = T;
  out["prefill_s"] = pre;
  out["prefill_tok_s"] = T / pre;
  out["decode_tok_s"] = gen / dec;
  out["decode_empty_tok_s"] = gen / dec0;
  out["decode_batch"] = batch;
  out["decode_batch_tok_s"] = batch * gen / decn;
  if (a.has("spec-replay")) {
    const int k = a.get_int("spec-replay", 8);
    if (k < 1 || k > runtime::kMaxSpeculativeTokens)
      fail(ErrorKind::kInvalidArgument, "--spec-replay must be in [1, ", runtime::kMaxSpeculativeTokens, "]");
    const auto* lo = dynamic_cast<const model::LightOnOcr*>(m.get());
    LOCR_CHECK(lo, "--spec-replay on a model without speculation");
    exec.reset();  // the engine's executor takes its place
    const SpecReplayResult r = spec_replay(*lo, prompt, gen, batch, k, repeat);
    std::printf("| decode, batch %d, engine | %d tokens each | | %.1f tok/s |\n", batch, gen, r.plain_tok_s);
    std::printf("| decode, batch %d, engine, replayed drafts K=%d | %d tokens each | | %.1f tok/s (%.2fx), %lld of "
                "%lld drafts accepted, tokens %s |\n",
                batch, k, gen, r.replay_tok_s, r.plain_tok_s > 0 ? r.replay_tok_s / r.plain_tok_s : 0.0,
                static_cast<long long>(r.accepted), static_cast<long long>(r.drafted),
                r.identical ? "identical" : "DIFFERENT");
    std::printf("| decode, batch %d, engine, drafts that never match K=%d (back-off) | %d tokens each | | %.1f tok/s "
                "(%.3fx), %lld drafted |\n",
                batch, k, gen, r.miss_tok_s, r.plain_tok_s > 0 ? r.miss_tok_s / r.plain_tok_s : 0.0,
                static_cast<long long>(r.miss_drafted));
    out["spec_replay_k"] = k;
    out["spec_replay_batch"] = batch;
    out["spec_replay_plain_decode_tok_s"] = r.plain_tok_s;
    out["spec_replay_decode_tok_s"] = r.replay_tok_s;
    out["spec_replay_speedup"] = r.plain_tok_s > 0 ? r.replay_tok_s / r.plain_tok_s : 0.0;
    out["spec_replay_identical"] = r.identical;
    out["spec_replay_drafted"] = r.drafted;
    out["spec_replay_accepted"] = r.accepted;
    out["spec_miss_decode_tok_s"] = r.miss_tok_s;
    out["spec_miss_ratio"] = r.plain_tok_s > 0 ? r.miss_tok_s / r.plain_tok_s : 0.0;
    out["spec_miss_drafted"] = r.miss_drafted;
    out["spec_miss_accepted"] = r.miss_accepted;
    if (r.drafted == 0)
      std::printf("note: nothing was drafted: the %s backend cannot verify drafts (speculation needs several "
                  "logits rows per sequence)\n", m->backend().c_str());
  }
  out["peak_rss_bytes"] = peak_rss_bytes();
  if (a.has("json")) {
    std::ofstream f(a.get("json"));
    f << out.dump(2) << "\n";
    if (!f) fail(ErrorKind::kIo, "cannot write ", a.get("json"));
  }
  return 0;
}

}  // namespace locr::app
