// Engine metrics: counters, gauges and histograms, safe to update from the engine thread and read
// from HTTP threads, rendered in Prometheus text format with vLLM's metric names, help, types
// and bucket bounds (labelled model_name) so existing dashboards, autoscalers and gateway
// endpoint pickers work, plus locr's OCR-specific series. Numbers are printed as the Python
// Prometheus client prints them (shortest round-trip form, "1.0", "+Inf").
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace locr::runtime {

// A float as prometheus_client writes it: the shortest text that reads back to the same double,
// integral values with ".0", and "+Inf", "-Inf", "NaN".
std::string prom_number(double v);
// A label value with \, " and newlines escaped as the text format requires.
std::string prom_escape(const std::string& v);
// Appends the "# HELP" and "# TYPE" lines of a family.
void prom_family(std::string& out, const std::string& name, const char* type, const std::string& help);
// vLLM's token-count buckets: 1, 2, 5, 10, 20, 50, ... up to max_value.
std::vector<double> buckets_1_2_5(int64_t max_value);

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends the family (HELP, TYPE, buckets, sum, count) for `name` with the given label set
  // (e.g. model_name="x").
  void render(std::string& out, const std::string& name, const std::string& help, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct EngineMetrics {
  explicit EngineMetrics(int64_t max_model_len = 8192);
  std::atomic<int64_t> num_running{0}, num_waiting{0};
  std::atomic<double> kv_usage{0};
  std::atomic<uint64_t> prompt_tokens{0}, generation_tokens{0}, preemptions{0};
  std::atomic<uint64_t> prefix_queries{0}, prefix_hits{0};
  std::atomic<uint64_t> images{0}, repetition_stops{0};
  // Speculative decoding (runtime/speculative.h): verification steps with drafts, drafted and
  // accepted tokens, and accepted tokens by draft position (vLLM's spec_decode counters).
  std::atomic<uint64_t> spec_drafts{0}, spec_draft_tokens{0}, spec_accepted_tokens{0};
  std::array<std::atomic<uint64_t>, 16> spec_accepted_per_pos{};
  // Seconds from admission to finish of recently finished requests (stop or length), as a moving
  // average (each new one weighs 1/5); 0 until one has finished. Not rendered: the server's
  // queue-wait estimate (server/queue_wait.h) reads it.
  std::atomic<double> recent_service_s{0};
  // Requests submitted and not yet finished (waiting, running, or not yet seen by a step): exact at
  // every moment, where the two gauges above are set once per step. Not rendered.
  std::atomic<int64_t> num_unfinished{0};
  std::mutex finished_mu;
  std::map<std::string, uint64_t> finished;  // finished_reason -> count
  Histogram ttft, itl, e2e, queue, vision_seconds, image_tokens, prompt_len, gen_len;
  // Per finished request that was scheduled and produced tokens, as vLLM defines them: prefill
  // from first scheduled to first token, decode from first to last token, inference from first
  // scheduled to last token.
  Histogram prefill_time, decode_time, inference_time;
  Histogram max_tokens_param;   // the max_tokens each finished request ran with
  Histogram iteration_tokens;   // per engine step: prompt tokens computed + tokens generated
  // Wall time of the engine thread in each kind of work: vision encoding, decoder steps that compute
  // prompt rows (decode rows riding along included) and decoder steps of decode rows only. On a GPU
  // a step ends when its tokens are back on the host, so this is also the device's time split.
  std::atomic<double> busy_vision_s{0}, busy_prefill_s{0}, busy_decode_s{0};
  // vllm:cache_config_info labels (name, value), set once before the engine thread starts.
  std::vector<std::pair<std::string, std::string>> cache_config;

  void count_finished(const std::string& reason);
  std::string render(const std::string& model_name) const;
};

}  // namespace locr::runtime
