// `locr bench`: benchmark an OpenAI-compatible server (the seeds' scripts/bench_perf.py, grown up).
// Latency phase: --latency-iters sequential requests. Throughput phase: --throughput-requests
// requests at --throughput-concurrency, or arriving as a Poisson process at --request-rate.
// Workloads: random text prompts against /v1/completions, or OCR pages (--image FILE... or
// synthetic --image-size WxH pages as PNG data: URLs) against /v1/chat/completions. Every request
// streams, so TTFT, TPOT and ITL are measured; see src/toolkit/bench_stats.h for the fields.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "apps/args.h"
#include "apps/commands.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "toolkit/bench_stats.h"
#include "toolkit/hub.h"
#include "toolkit/openai_client.h"
#include "toolkit/progress.h"
#include "toolkit/synth_image.h"

namespace locr::app {

namespace {

using json = nlohmann::json;
using clock_t_ = std::chrono::steady_clock;

const char* kWords[] = {"the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by",
                        "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had",
                        "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if",
                        "more", "when", "will", "would", "who", "so", "no", "time", "page", "table", "model", "data"};

struct Workload {
  bool chat = false;
  std::string path;  // request path on the server
  std::vector<json> bodies;  // one per request (cycled)
};

// Random text of about `len` tokens: random vocabulary tokens decoded (exact before re-tokenisation)
// with a tokenizer, else common English words (about one token each).
std::string random_prompt(std::mt19937_64& rng, int len, const tokenizer::Tokenizer* tok) {
  std::string s;
  if (tok) {
    std::vector<int32_t> ids;
    std::uniform_int_distribution<int32_t> d(0, tok->vocab_size() - 1);
    while (static_cast<int>(ids.size()) < len) {
      const int32_t id = d(rng);
      if (tok->has_id(id) && !tok->is_special(id)) ids.push_back(id);
    }
    return tok->decode(ids, true);
  }
  std::uniform_int_distribution<size_t> d(0, sizeof(kWords) / sizeof(kWords[0]) - 1);
  for (int i = 0; i < len; ++i) s += (i ? " " : "") + std::string(kWords[d(rng)]);
  return s;
}

struct PhaseResult {
  toolkit::BenchSummary summary;
  std::vector<toolkit::RequestRecord> records;
};

PhaseResult run_phase(const std::string& label, const toolkit::HttpUrl& u, const Workload& w, const toolkit::Headers& headers,
                      int n, int concurrency, double rate, uint64_t seed, bool progress, double timeout) {
  std::vector<double> arrival(static_cast<size_t>(n), 0.0);
  if (rate > 0 && std::isfinite(rate)) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate);
    double t = 0;
    for (auto& a : arrival) a = (t += gap(rng));
    arrival[0] = 0;
  }
  const int workers = std::max(1, std::min(n, concurrency > 0 ? concurrency : n));
  std::vector<toolkit::RequestRecord> recs(static_cast<size_t>(n));
  std::atomic<int> next{0}, done{0};
  std::mutex mu;
  toolkit::ProgressBar bar(label, progress, /*bytes=*/false);
  const auto t0 = clock_t_::now();
  auto worker = [&] {
    toolkit::HttpClient cli(u.origin(), timeout);
    for (int i; (i = next++) < n;) {
      std::this_thread::sleep_until(t0 + std::chrono::duration_cast<clock_t_::duration>(std::chrono::duration<double>(arrival[i])));
      auto& r = recs[static_cast<size_t>(i)];
      const auto ts = clock_t_::now();
      r.start_s = std::chrono::duration<double>(ts - t0).count();
      const auto res = toolkit::stream_completion(cli, u.path, w.bodies[static_cast<size_t>(i) % w.bodies.size()], headers, w.chat,
                                                [&](const std::string& s) {
                                                  r.on_chunk(std::chrono::duration<double>(clock_t_::now() - ts).count());
                                                  r.text += s;
                                                });
      r.latency_s = std::chrono::duration<double>(clock_t_::now() - ts).count();
      r.success = res.ok() && r.last_chunk_s >= 0;
      if (!res.ok()) r.error = res.error;
      else if (r.last_chunk_s < 0) r.error = "no text in the response";
      r.prompt_tokens = std::max<int64_t>(0, res.prompt_tokens);
      r.output_tokens = res.completion_tokens >= 0 ? res.completion_tokens : res.text_chunks;
      const int d = ++done;
      std::lock_guard<std::mutex> lock(mu);
      bar.update(static_cast<uint64_t>(d), static_cast<uint64_t>(n));
    }
  };
  std::vector<std::thread> ts;
  for (int i = 0; i < workers; ++i) ts.emplace_back(worker);
  for (auto& t : ts) t.join();
  bar.finish();
  const double dur = std::chrono::duration<double>(clock_t_::now() - t0).count();
  PhaseResult p;
  p.summary = toolkit::summarize(recs, dur, w.chat);
  p.records = std::move(recs);
  return p;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a("bench",
         "Benchmark an OpenAI-compatible server: a sequential latency phase, then a throughput phase at a fixed\n"
         "concurrency or a Poisson request rate. Text workload: random prompts against /v1/completions; OCR\n"
         "workload (--image/--image-size): pages against /v1/chat/completions. Streams every request to\n"
         "measure TTFT, TPOT and ITL; prints vLLM bench serve fields, --json saves them.");
  a.option("url", "endpoint (default http://localhost:8000/v1/completions; OCR: .../v1/chat/completions)", "URL");
  a.option("model", "model name sent in requests (default: the first of GET /v1/models)", "NAME");
  a.option("max-tokens", "output tokens per request (default 128)", "N");
  a.option("input-len", "random text prompt length in tokens (default 128)", "N");
  a.option("tokenizer", "model directory (or ORG/NAME) whose tokenizer makes exact-length random prompts", "DIR");
  a.option("latency-iters", "sequential requests of the latency phase (default 5; 0 skips it)", "N");
  a.option("throughput-requests", "requests of the throughput phase (default 10; 0 skips it)", "N");
  a.option("throughput-concurrency", "requests in flight (default 2; with --request-rate: unlimited)", "N");
  a.option("request-rate", "Poisson arrivals per second for the throughput phase (default: all at once)", "R");
  a.repeated("image", "OCR workload: page image file(s), cycled over the requests", "FILE");
  a.option("image-size", "OCR workload: synthetic pages of WxH pixels (e.g. 1092x1540)", "WxH");
  a.option("prompt", "OCR workload: text sent after the image (default: none, the recommended OCR request)", "TEXT");
  a.flag("ignore-eos", "generate exactly --max-tokens tokens (ignore_eos)");
  a.option("temperature", "sampling temperature (default 0)", "T");
  a.option("seed", "seed for prompts, arrivals and sampling (default 0)", "S");
  a.option("warmup", "untimed requests before the phases (default 1)", "N");
  a.option("api-key", "bearer token", "KEY");
  a.option("timeout", "per-request read timeout in seconds (default 600)", "S");
  a.option("json", "write the results to FILE", "FILE");
  a.flag("no-progress", "no progress bar");
  if (!a.parse(argc, argv)) return 0;

  const bool ocr = a.has("image") || a.has("image-size");
  std::string url = a.get("url", ocr ? "http://localhost:8000/v1/chat/completions" : "http://localhost:8000/v1/completions");
  const toolkit::HttpUrl u = toolkit::parse_url(url);
  const bool chat = u.path.find("chat/completions") != std::string::npos;
  if (ocr && !chat) fail(ErrorKind::kInvalidArgument, "the OCR workload needs a /v1/chat/completions --url");
  const uint64_t seed = std::stoull(a.get("seed", "0"));
  const int max_tokens = a.get_int("max-tokens", 128), input_len = a.get_int("input-len", 128);
  const int lat_iters = a.get_int("latency-iters", 5), n_tp = a.get_int("throughput-requests", 10);
  const double rate = a.get_double("request-rate", 0);
  const int conc = a.get_int("throughput-concurrency", rate > 0 ? 0 : 2);
  const double timeout = a.get_double("timeout", 600);
  toolkit::Headers headers;
  if (a.has("api-key")) headers.emplace_back("Authorization", "Bearer " + a.get("api-key"));

  std::string model_name = a.get("model");
  if (model_name.empty()) {
    toolkit::HttpClient cli(u.origin(), 30);
    const auto r = cli.get("/v1/models", headers);
    const json j = json::parse(r.body, nullptr, false);
    if (!r.ok() || j.is_discarded() || !j.contains("data") || j["data"].empty())
      fail(ErrorKind::kIo, "cannot list models at ", u.origin(), "/v1/models (", r.status ? std::to_string(r.status) : r.error,
           "); pass --model NAME");
    model_name = j["data"][0].value("id", "");
  }

  // Request bodies.
  Workload w;
  w.chat = chat;
  w.path = u.path;
  json common;
  common["model"] = model_name;
  common["max_tokens"] = max_tokens;
  common["temperature"] = a.get_double("temperature", 0);
  if (a.get_flag("ignore-eos")) common["ignore_eos"] = true;
  const int n_bodies = std::max({1, lat_iters + n_tp});
  std::mt19937_64 rng(seed);
  std::unique_ptr<tokenizer::Tokenizer> tok;
  if (a.has("tokenizer")) tok = tokenizer::Tokenizer::from_file(toolkit::resolve_model(a.get("tokenizer")) + "/tokenizer.json");
  std::vector<std::string> pages;
  if (ocr) {
    for (const auto& f : a.get_all("image")) pages.push_back(toolkit::image_file_data_url(f));
    if (a.has("image-size")) {
      int pw = 0, ph = 0;
      if (std::sscanf(a.get("image-size").c_str(), "%dx%d", &pw, &ph) != 2 || pw <= 0 || ph <= 0)
        fail(ErrorKind::kInvalidArgument, "--image-size must be WxH, got '", a.get("image-size"), "'");
      for (int i = 0; i < std::min(n_bodies, 8); ++i)
        pages.push_back(toolkit::png_data_url(toolkit::encode_png(toolkit::synth_page(pw, ph, seed + static_cast<uint64_t>(i)))));
    }
  }
  for (int i = 0; i < n_bodies; ++i) {
    json b = common;
    b["seed"] = static_cast<int64_t>(seed) + i;
    if (ocr) {
      b["messages"] = json::array({{{"role", "user"}, {"content", toolkit::user_content({pages[static_cast<size_t>(i) % pages.size()]}, a.get("prompt"))}}});
    } else if (chat) {
      b["messages"] = json::array({{{"role", "user"}, {"content", random_prompt(rng, input_len, tok.get())}}});
    } else {
      b["prompt"] = random_prompt(rng, input_len, tok.get());
    }
    w.bodies.push_back(std::move(b));
  }

  const bool progress = !a.get_flag("no-progress");
  std::fprintf(stderr, "bench: %s %s, model %s, %s workload, max_tokens %d%s\n", "POST", url.c_str(), model_name.c_str(),
               ocr ? "OCR page" : "random text", max_tokens, a.get_flag("ignore-eos") ? " (ignore_eos)" : "");
  if (int warm = a.get_int("warmup", 1); warm > 0) {
    Workload ww = w;
    for (auto& b : ww.bodies) b["max_tokens"] = std::min(max_tokens, 8);
    const auto p = run_phase("warmup", u, ww, headers, warm, 1, 0, seed, false, timeout);
    if (p.summary.completed == 0)
      fail(ErrorKind::kIo, "warm-up request failed: ", p.summary.errors.empty() ? "?" : p.summary.errors[0]);
  }
  json out;
  out["url"] = url;
  out["model_id"] = model_name;
  out["workload"] = ocr ? "ocr" : "random";
  out["max_tokens"] = max_tokens;
  if (!ocr) out["input_len"] = input_len;
  out["ignore_eos"] = a.get_flag("ignore-eos");
  int failed = 0;
  if (lat_iters > 0) {
    auto p = run_phase("latency", u, w, headers, lat_iters, 1, 0, seed, progress, timeout);
    std::printf("%s", toolkit::format_summary(p.summary, "Latency (sequential, " + std::to_string(lat_iters) + " requests)").c_str());
    out["latency"] = toolkit::to_json(p.summary);
    failed += static_cast<int>(p.summary.failed);
  }
  if (n_tp > 0) {
    Workload tw = w;
    std::rotate(tw.bodies.begin(), tw.bodies.begin() + std::min<size_t>(tw.bodies.size(), static_cast<size_t>(lat_iters)), tw.bodies.end());
    auto p = run_phase("throughput", u, tw, headers, n_tp, conc, rate, seed + 1, progress, timeout);
    std::string title = "Throughput (" + std::to_string(n_tp) + " requests, ";
    title += rate > 0 ? "rate " + std::to_string(rate).substr(0, 6) + "/s)" : "concurrency " + std::to_string(conc) + ")";
    std::printf("%s", toolkit::format_summary(p.summary, title).c_str());
    json t = toolkit::to_json(p.summary);
    t["max_concurrency"] = conc > 0 ? json(conc) : json(nullptr);
    t["request_rate"] = rate > 0 ? json(rate) : json("inf");
    out["throughput"] = t;
    failed += static_cast<int>(p.summary.failed);
  }
  for (const char* phase : {"latency", "throughput"})
    if (out.contains(phase))
      for (const auto& e : out[phase]["errors"]) std::fprintf(stderr, "bench: %s error: %s\n", phase, e.get<std::string>().c_str());
  if (a.has("json")) {
    std::ofstream f(a.get("json"));
    f << out.dump(2) << "\n";
    if (!f) fail(ErrorKind::kIo, "cannot write ", a.get("json"));
    std::fprintf(stderr, "bench: wrote %s\n", a.get("json").c_str());
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace locr::app
