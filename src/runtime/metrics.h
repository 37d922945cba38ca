// Engine metrics: counters, gauges and histograms, safe to update from the engine thread and read
// from HTTP threads, rendered in Prometheus text format with vLLM's metric names (labelled
// model_name) so existing dashboards work, plus locr's OCR-specific series.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace locr::runtime {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends Prometheus lines for `name` with the given label set (e.g. model_name="x").
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct EngineMetrics {
  EngineMetrics();
  std::atomic<int64_t> num_running{0}, num_waiting{0};
  std::atomic<double> kv_usage{0};
  std::atomic<uint64_t> prompt_tokens{0}, generation_tokens{0}, preemptions{0};
  std::atomic<uint64_t> prefix_queries{0}, prefix_hits{0};
  std::atomic<uint64_t> images{0}, repetition_stops{0};
  std::mutex finished_mu;
  std::map<std::string, uint64_t> finished;  // finished_reason -> count
  Histogram ttft, itl, e2e, queue, vision_seconds, image_tokens, prompt_len, gen_len;

  void count_finished(const std::string& reason);
  std::string render(const std::string& model_name) const;
};

}  // namespace locr::runtime
