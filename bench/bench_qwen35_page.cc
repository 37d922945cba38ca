// One A4 page through a Qwen3.5 model (LightOnOCR-3-0.8B / -4B) on a CPU backend, stage by stage:
// preprocessing, the vision tower, the prefill of the page prompt (one step), and greedy-free
// decode steps at the page's context (batch 1, each step one token, a fixed token fed back so the
// time does not depend on the random weights' choices). Prints the times, the rates and peak RSS.
// Results and commands go to docs/benchmarks.md.
//
//   bench_qwen35_page --model DIR [--backend cpu] [--longest-edge 2048] [--tokens 64] [--json OUT] [--profile 1]
// --profile 1 times every op (kernels::ProfiledOps) and prints the ops of each stage, longest first.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "kernels/op_profile.h"
#include "model/qwen35/model.h"
#include "model/workspace.h"
#include "toolkit/synth_image.h"

using namespace locr;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, backend = "cpu", json_out, quantization;
  int longest = 2048, tokens = 64;
  bool profile = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") dir = v;
    else if (k == "--backend") backend = v;
    else if (k == "--longest-edge") longest = std::stoi(v);
    else if (k == "--tokens") tokens = std::stoi(v);
    else if (k == "--json") json_out = v;
    else if (k == "--profile") profile = v == "1";
    else if (k == "--quantization") quantization = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: bench_qwen35_page --model DIR [--backend cpu] [--longest-edge N] [--tokens N] [--quantization q8_0|q4_k] [--json OUT]\n");
    return 2;
  }
  model::LoadOptions lo;
  lo.backend = backend;
  lo.profile_ops = profile;
  lo.quantization = quantization;
  auto t0 = Clock::now();
  const auto m = model::qwen35::Model::load(dir, lo);
  const double load_s = since(t0);
  const auto& cfg = m->config();

  // An A4 portrait page (1 : sqrt 2) rendered at `longest` pixels.
  const int h = longest, w = static_cast<int>(longest / 1.41421356 + 0.5);
  const io::Image page = toolkit::synth_page(w, h, 7);
  t0 = Clock::now();
  const nlohmann::json messages = {{{"role", "user"}, {"content", {{{"type", "image"}}}}}};
  const model::RenderedChat chat = m->render_chat(messages, {{"enable_thinking", false}});
  const auto prompt = m->build_prompt(chat, {page});
  const std::vector<float> patches = m->vision_patches(prompt.images);
  const double pre_s = since(t0);
  const int64_t T = static_cast<int64_t>(prompt.ids.size()), H = cfg.text.hidden_size;
  auto* prof = dynamic_cast<kernels::ProfiledOps*>(&m->ops());
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  auto stage_done = [&](const char* name) {
    if (!prof) return;
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const kernels::OpStat& o : prof->stats())
      ops.push_back({{"op", o.op}, {"shape", o.shape}, {"calls", o.calls}, {"s", o.seconds},
                     {"gflop_s", o.flops > 0 ? o.flops / o.seconds / 1e9 : 0.0}});
    stages[name] = ops;
    prof->reset();
  };
  if (prof) prof->reset();
  const int64_t n_patches = model::qwen35::Model::grids(prompt.images)[0].patches();

  t0 = Clock::now();
  Tensor embeds = m->vision().forward(patches.data(), model::qwen35::Model::grids(prompt.images));
  const double vision_s = since(t0);
  stage_done("vision");

  const int block = 16;
  const int64_t cap = T + tokens + 1;
  model::KvPool kv = model::qwen35::make_kv_pool(cfg.text, (cap + block - 1) / block, block, m->decoder().kv_dtype());
  std::vector<int32_t> table(kv.n_blocks());
  std::iota(table.begin(), table.end(), 0);
  model::qwen35::StatePool states(cfg.text, 1, m->ops());
  model::Workspace ws(m->ops());
  Tensor x = m->embed_prompt(prompt.ids, &embeds);
  t0 = Clock::now();
  model::qwen35::Seq s;
  s.n_new = T;
  s.block_table = table.data();
  s.positions = prompt.positions.data();
  s.fresh = true;
  m->decoder().forward(x.data<float>(), {s}, kv, states, ws);
  std::vector<float> logits(cfg.text.vocab_size);
  m->decoder().logits(x.data<float>() + (T - 1) * H, 1, logits.data());
  const double prefill_s = since(t0);
  stage_done("prefill");

  t0 = Clock::now();
  std::vector<float> row(H);
  for (int n = 0; n < tokens; ++n) {
    const int32_t id = 13;  // a fixed ordinary token: the time does not depend on what is sampled
    m->decoder().embed(&id, 1, row.data());
    model::qwen35::Seq d;
    d.n_new = 1;
    d.kv_pos0 = T + n;
    d.block_table = table.data();
    d.rope_pos0 = (T + prompt.rope_delta) + n;
    m->decoder().forward(row.data(), {d}, kv, states, ws);
    m->decoder().logits(row.data(), 1, logits.data());
  }
  const double decode_s = since(t0);
  stage_done("decode");

  nlohmann::ordered_json r;
  r["model"] = dir;
  r["backend"] = m->ops().name();
  r["quantization"] = quantization.empty() ? "none" : quantization;
  r["threads"] = ThreadPool::global().size();
  r["page"] = std::to_string(w) + "x" + std::to_string(h);
  r["resized"] = std::to_string(prompt.images[0].width) + "x" + std::to_string(prompt.images[0].height);
  r["patches"] = n_patches;
  r["prompt_tokens"] = T;
  r["load_s"] = load_s;
  r["preprocess_s"] = pre_s;
  r["vision_s"] = vision_s;
  r["prefill_s"] = prefill_s;
  r["prefill_tok_s"] = T / prefill_s;
  r["decode_tokens"] = tokens;
  r["decode_tok_s"] = tokens / decode_s;
  r["page_s_at_600_tokens"] = pre_s + vision_s + prefill_s + 600 * decode_s / tokens;
  r["peak_rss_gib"] = peak_rss_bytes() / double(1 << 30);
  if (prof) r["op_profile"] = stages;
  std::printf("%s\n", r.dump(2).c_str());
  if (!json_out.empty()) std::ofstream(json_out) << r.dump(2) << "\n";
  return 0;
}
