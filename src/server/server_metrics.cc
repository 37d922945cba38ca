#include "server/server_metrics.h"

namespace locr::server {

namespace {
const std::vector<double> kDuration = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

ServerMetrics::ServerMetrics() : duration_(kDuration) {}

void ServerMetrics::count_request(const std::string& handler, const std::string& method, int status,
                                  double seconds) {
  const std::string cls = std::to_string(status / 100) + "xx";
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_[{handler, method, cls}];
  }
  duration_.observe(seconds);
}

std::string ServerMetrics::render(const std::string& model_name) const {
  const std::string l = "model_name=\"" + model_name + "\"";
  std::string o;
  o += "# TYPE http_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : requests_)
      o += "http_requests_total{handler=\"" + std::get<0>(k) + "\",method=\"" + std::get<1>(k) + "\",status=\"" +
           std::get<2>(k) + "\"} " + std::to_string(v) + "\n";
  }
  duration_.render(o, "http_request_duration_seconds", l);
  o += "# TYPE locr:http_requests_in_flight gauge\nlocr:http_requests_in_flight{" + l + "} " +
       std::to_string(in_flight.load()) + "\n";
  o += "# TYPE locr:client_disconnects_total counter\nlocr:client_disconnects_total{" + l + "} " +
       std::to_string(disconnects.load()) + "\n";
  o += "# TYPE locr:stop_string_finishes_total counter\nlocr:stop_string_finishes_total{" + l + "} " +
       std::to_string(stop_string_finishes.load()) + "\n";
  o += "# TYPE locr:requests_rejected_draining_total counter\nlocr:requests_rejected_draining_total{" + l + "} " +
       std::to_string(rejected_while_draining.load()) + "\n";
  return o;
}

}  // namespace locr::server
