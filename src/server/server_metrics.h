// Server-side metrics, rendered after the engine's in /metrics: HTTP requests by handler, method
// and status class (the names prometheus-fastapi-instrumentator gives vLLM's server), requests in
// flight, client disconnects, finishes decided by the server (stop strings), which the
// engine sees as aborts, and the per-request families vLLM records once all n choices of a
// prompt are done (vllm:request_params_n, vllm:request_max_num_generation_tokens).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "runtime/metrics.h"

namespace locr::server {

class ServerMetrics {
 public:
  explicit ServerMetrics(int64_t max_model_len = 8192);
  // Once per prompt of a request, when all its `n` choices have finished; `max_generated` is the
  // most tokens one of them generated.
  void observe_prompt_done(int n, int64_t max_generated);
  void count_request(const std::string& handler, const std::string& method, int status, double seconds);
  std::string render(const std::string& model_name) const;

  std::atomic<int64_t> in_flight{0};
  std::atomic<uint64_t> disconnects{0};
  std::atomic<uint64_t> stop_string_finishes{0};
  std::atomic<uint64_t> ocr_pages_loaded_ahead{0};  // document pages rendered while earlier ones ran
  std::atomic<uint64_t> rejected_while_draining{0};
  std::atomic<uint64_t> rejected_queue_full{0};  // 503 past --max-queue-wait-s

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests_;
  runtime::Histogram duration_, params_n_, max_generation_tokens_;
};

}  // namespace locr::server
