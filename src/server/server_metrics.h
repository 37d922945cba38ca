// Server-side metrics, rendered after the engine's in /metrics: HTTP requests by handler, method
// and status class (the names prometheus-fastapi-instrumentator gives vLLM's server), requests in
// flight, client disconnects, and finishes decided by the server (stop strings), which the
// engine sees as aborts.
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
  ServerMetrics();
  void count_request(const std::string& handler, const std::string& method, int status, double seconds);
  std::string render(const std::string& model_name) const;

  std::atomic<int64_t> in_flight{0};
  std::atomic<uint64_t> disconnects{0};
  std::atomic<uint64_t> stop_string_finishes{0};
  std::atomic<uint64_t> rejected_while_draining{0};

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests_;
  runtime::Histogram duration_;
};

}  // namespace locr::server
