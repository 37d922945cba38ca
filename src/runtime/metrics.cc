#include "runtime/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace locr::runtime {

namespace {
// vLLM's bounds (vllm/v1/metrics/loggers.py) for the families it defines; locr's own for the rest.
const std::vector<double> kTtft = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                                   2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kInterToken = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                         0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestLatency = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kIterationTokens = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> kTokens = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000};
}  // namespace

std::string prom_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, as Python's repr() picks them.
  char b[64];
  int p = 1;
  for (; p < 17; ++p) {
    std::snprintf(b, sizeof b, "%.*e", p - 1, v);
    if (std::strtod(b, nullptr) == v) break;
  }
  std::snprintf(b, sizeof b, "%.*e", p - 1, v);
  std::string s = b;
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const size_t epos = s.find('e');
  const int exp10 = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {  // repr's fixed notation, always with a fractional part
    if (exp10 < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
    } else {
      const size_t int_len = static_cast<size_t>(exp10) + 1;
      if (digits.size() <= int_len) out = digits + std::string(int_len - digits.size(), '0') + ".0";
      else out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
    // prometheus_client (floatToGoString) switches to Go's exponent form past 6 integer digits.
    const size_t dot = out.find('.');
    if (!neg && dot > 6) {
      std::string m = out.substr(0, 1) + "." + out.substr(1, dot - 1) + out.substr(dot + 1);
      while (!m.empty() && (m.back() == '0' || m.back() == '.')) m.pop_back();
      out = m + "e+0" + std::to_string(dot - 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += e;
  }
  return neg ? "-" + out : out;
}

std::string prom_escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

void prom_family(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

std::vector<double> buckets_1_2_5(int64_t max_value) {
  std::vector<double> b;
  for (int64_t scale = 1;; scale *= 10)
    for (int64_t m : {1, 2, 5}) {
      if (m * scale > max_value) return b;
      b.push_back(static_cast<double>(m * scale));
    }
}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help,
                       const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  prom_family(out, name, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{" + labels + ",le=\"" + prom_number(bounds_[i]) + "\"} " + prom_number(double(cum)) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{" + labels + ",le=\"+Inf\"} " + prom_number(double(cum)) + "\n";
  out += name + "_sum{" + labels + "} " + prom_number(sum_) + "\n";
  out += name + "_count{" + labels + "} " + prom_number(double(count_)) + "\n";
}

EngineMetrics::EngineMetrics(int64_t max_model_len)
    : ttft(kTtft), itl(kInterToken), e2e(kRequestLatency), queue(kRequestLatency), vision_seconds(kTtft),
      image_tokens(kTokens), prompt_len(buckets_1_2_5(max_model_len)), gen_len(buckets_1_2_5(max_model_len)),
      prefill_time(kRequestLatency), decode_time(kRequestLatency), inference_time(kRequestLatency),
      max_tokens_param(buckets_1_2_5(max_model_len)), iteration_tokens(kIterationTokens) {}

void EngineMetrics::count_finished(const std::string& reason) {
  std::lock_guard<std::mutex> lock(finished_mu);
  ++finished[reason];
}

std::string EngineMetrics::render(const std::string& model_name) const {
  const std::string l = "model_name=\"" + prom_escape(model_name) + "\"";
  std::string o;
  auto scalar = [&](const char* type, const std::string& n, const std::string& help, double v) {
    prom_family(o, n, type, help);
    o += n + "{" + l + "} " + prom_number(v) + "\n";
  };
  auto gauge = [&](const std::string& n, const std::string& help, double v) { scalar("gauge", n, help, v); };
  auto counter = [&](const std::string& n, const std::string& help, uint64_t v) {
    scalar("counter", n, help, static_cast<double>(v));
  };
  gauge("vllm:num_requests_running", "Requests in the running batch (admitted, being prefilled or decoded).",
        static_cast<double>(num_running.load()));
  gauge("vllm:num_requests_waiting", "Requests waiting to be admitted (queued or preempted).",
        static_cast<double>(num_waiting.load()));
  gauge("vllm:kv_cache_usage_perc", "Fraction of KV-cache blocks in use, 0 to 1 (1 means full).", kv_usage.load());
  if (!cache_config.empty()) {
    prom_family(o, "vllm:cache_config_info", "gauge", "KV-cache configuration as labels; the value is always 1.");
    std::string labels;
    for (const auto& [k, v] : cache_config) labels += (labels.empty() ? "" : ",") + k + "=\"" + prom_escape(v) + "\"";
    o += "vllm:cache_config_info{" + labels + "} 1.0\n";
  }
  counter("vllm:prompt_tokens_total", "Prompt tokens computed (prefill), prefix-cache hits excluded.",
          prompt_tokens.load());
  counter("vllm:generation_tokens_total", "Tokens generated.", generation_tokens.load());
  counter("vllm:num_preemptions_total", "Sequences preempted (KV dropped, recomputed later).", preemptions.load());
  counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", prefix_queries.load());
  counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", prefix_hits.load());
  {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(finished_mu));
    prom_family(o, "vllm:request_success_total", "counter", "Finished requests by finish reason.");
    // vLLM's stop, length and abort, and error: requests a fault in the engine ended.
    for (const char* r : {"stop", "length", "abort", "error"}) {
      auto it = finished.find(r);
      o += "vllm:request_success_total{" + l + ",finished_reason=\"" + r + "\"} " +
           prom_number(static_cast<double>(it == finished.end() ? 0 : it->second)) + "\n";
    }
  }
  ttft.render(o, "vllm:time_to_first_token_seconds", "Time from arrival to the first generated token, in seconds.", l);
  itl.render(o, "vllm:inter_token_latency_seconds", "Time between two consecutive tokens of a request, in seconds.",
             l);
  e2e.render(o, "vllm:e2e_request_latency_seconds", "Time from arrival to finish of a request, in seconds.", l);
  queue.render(o, "vllm:request_queue_time_seconds", "Time a request waited before first being scheduled, in seconds.",
               l);
  prefill_time.render(o, "vllm:request_prefill_time_seconds",
                      "Time from first scheduled to first token (vision encoding and prefill), in seconds.", l);
  decode_time.render(o, "vllm:request_decode_time_seconds", "Time from first to last token of a request, in seconds.",
                     l);
  inference_time.render(o, "vllm:request_inference_time_seconds",
                        "Time from first scheduled to last token of a request, in seconds.", l);
  prompt_len.render(o, "vllm:request_prompt_tokens", "Prompt length of a request, in tokens.", l);
  gen_len.render(o, "vllm:request_generation_tokens", "Tokens generated by a finished request.", l);
  max_tokens_param.render(o, "vllm:request_params_max_tokens", "The max_tokens a finished request ran with.", l);
  iteration_tokens.render(o, "vllm:iteration_tokens_total",
                          "Tokens of one engine step: prompt tokens computed plus tokens generated.", l);
  prom_family(o, "locr:engine_busy_seconds_total", "counter",
              "Engine-thread time by phase: vision (encoder + projector), prefill (steps with prompt rows), decode "
              "(steps of decode rows only), in seconds.");
  for (const auto& [phase, v] : {std::pair<const char*, double>{"vision", busy_vision_s.load()},
                                 {"prefill", busy_prefill_s.load()}, {"decode", busy_decode_s.load()}})
    o += "locr:engine_busy_seconds_total{" + l + ",phase=\"" + phase + "\"} " + prom_number(v) + "\n";
  counter("vllm:spec_decode_num_drafts_total", "Speculative verification steps that had drafts.", spec_drafts.load());
  counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified.", spec_draft_tokens.load());
  counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted.", spec_accepted_tokens.load());
  prom_family(o, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
              "Draft tokens accepted, by position in the draft (0: the first).");
  for (size_t i = 0; i < spec_accepted_per_pos.size(); ++i)
    o += "vllm:spec_decode_num_accepted_tokens_per_pos_total{" + l + ",position=\"" + std::to_string(i) + "\"} " +
         prom_number(static_cast<double>(spec_accepted_per_pos[i].load())) + "\n";
  counter("locr:images_total", "Images admitted (pages and pictures).", images.load());
  counter("locr:repetition_stops_total", "Requests stopped by the repetition-loop guard.", repetition_stops.load());
  vision_seconds.render(o, "locr:vision_encode_seconds", "Vision-encoder time of a request's images, in seconds.", l);
  image_tokens.render(o, "locr:image_tokens_per_request", "Image tokens in a request's prompt.", l);
  return o;
}

}  // namespace locr::runtime
