#include "runtime/metrics.h"

#include <cstdio>

namespace locr::runtime {

namespace {
std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
const std::vector<double> kLatency = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                                      2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokens = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000};
}  // namespace

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += "# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{" + labels + ",le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum{" + labels + "} " + num(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

EngineMetrics::EngineMetrics()
    : ttft(kLatency), itl(kLatency), e2e(kLatency), queue(kLatency), vision_seconds(kLatency),
      image_tokens(kTokens), prompt_len(kTokens), gen_len(kTokens) {}

void EngineMetrics::count_finished(const std::string& reason) {
  std::lock_guard<std::mutex> lock(finished_mu);
  ++finished[reason];
}

std::string EngineMetrics::render(const std::string& model_name) const {
  const std::string l = "model_name=\"" + model_name + "\"";
  std::string o;
  auto gauge = [&](const std::string& n, double v) { o += "# TYPE " + n + " gauge\n" + n + "{" + l + "} " + num(v) + "\n"; };
  auto counter = [&](const std::string& n, double v) {
    o += "# TYPE " + n + " counter\n" + n + "{" + l + "} " + num(v) + "\n";
  };
  gauge("vllm:num_requests_running", static_cast<double>(num_running.load()));
  gauge("vllm:num_requests_waiting", static_cast<double>(num_waiting.load()));
  gauge("vllm:kv_cache_usage_perc", kv_usage.load());
  counter("vllm:prompt_tokens_total", static_cast<double>(prompt_tokens.load()));
  counter("vllm:generation_tokens_total", static_cast<double>(generation_tokens.load()));
  counter("vllm:num_preemptions_total", static_cast<double>(preemptions.load()));
  counter("vllm:prefix_cache_queries_total", static_cast<double>(prefix_queries.load()));
  counter("vllm:prefix_cache_hits_total", static_cast<double>(prefix_hits.load()));
  {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(finished_mu));
    o += "# TYPE vllm:request_success_total counter\n";
    for (const char* r : {"stop", "length", "abort"}) {
      auto it = finished.find(r);
      o += "vllm:request_success_total{" + l + ",finished_reason=\"" + r + "\"} " +
           std::to_string(it == finished.end() ? 0 : it->second) + "\n";
    }
  }
  ttft.render(o, "vllm:time_to_first_token_seconds", l);
  itl.render(o, "vllm:inter_token_latency_seconds", l);
  e2e.render(o, "vllm:e2e_request_latency_seconds", l);
  queue.render(o, "vllm:request_queue_time_seconds", l);
  prompt_len.render(o, "vllm:request_prompt_tokens", l);
  gen_len.render(o, "vllm:request_generation_tokens", l);
  counter("locr:images_total", static_cast<double>(images.load()));
  counter("locr:repetition_stops_total", static_cast<double>(repetition_stops.load()));
  vision_seconds.render(o, "locr:vision_encode_seconds", l);
  image_tokens.render(o, "locr:image_tokens_per_request", l);
  return o;
}

}  // namespace locr::runtime
