#include "toolkit/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace locr::toolkit {

void RequestRecord::on_chunk(double t) {
  if (last_chunk_s < 0) ttft_s = t;
  else itl_s.push_back(t - last_chunk_s);
  last_chunk_s = t;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double idx = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(idx)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

Dist Dist::of(const std::vector<double>& v) {
  Dist d;
  if (v.empty()) return d;
  double s = 0;
  for (double x : v) s += x;
  d.mean = s / static_cast<double>(v.size());
  double q = 0;
  for (double x : v) q += (x - d.mean) * (x - d.mean);
  d.std = std::sqrt(q / static_cast<double>(v.size()));  // population std, as numpy.std
  d.median = percentile(v, 50);
  d.p90 = percentile(v, 90);
  d.p99 = percentile(v, 99);
  return d;
}

double tpot_s(const RequestRecord& r) {
  return r.output_tokens > 1 ? (r.latency_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1) : 0.0;
}

BenchSummary summarize(const std::vector<RequestRecord>& recs, double duration_s, bool pages) {
  BenchSummary s;
  s.num_requests = static_cast<int64_t>(recs.size());
  s.duration_s = duration_s;
  s.pages = pages;
  std::vector<double> ttft, tpot, itl, e2el;
  for (const auto& r : recs) {
    if (!r.success) {
      ++s.failed;
      if (!r.error.empty() && s.errors.size() < 10) s.errors.push_back(r.error);
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s * 1e3);
    if (r.output_tokens > 1) tpot.push_back(tpot_s(r) * 1e3);
    for (double g : r.itl_s) itl.push_back(g * 1e3);
    e2el.push_back(r.latency_s * 1e3);
  }
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / duration_s;
    s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / duration_s;
    if (pages) s.pages_per_s = s.request_throughput;
  }
  s.ttft_ms = Dist::of(ttft);
  s.tpot_ms = Dist::of(tpot);
  s.itl_ms = Dist::of(itl);
  s.e2el_ms = Dist::of(e2el);
  return s;
}

nlohmann::ordered_json to_json(const BenchSummary& s) {
  nlohmann::ordered_json j;
  j["num_prompts"] = s.num_requests;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration"] = s.duration_s;
  j["total_input_tokens"] = s.total_input_tokens;
  j["total_output_tokens"] = s.total_output_tokens;
  j["request_throughput"] = s.request_throughput;
  j["output_throughput"] = s.output_throughput;
  j["total_token_throughput"] = s.total_token_throughput;
  if (s.pages) j["pages_per_second"] = s.pages_per_s;
  const std::pair<const char*, const Dist*> ds[] = {{"ttft", &s.ttft_ms}, {"tpot", &s.tpot_ms}, {"itl", &s.itl_ms}, {"e2el", &s.e2el_ms}};
  for (const auto& [name, d] : ds) {
    j[std::string("mean_") + name + "_ms"] = d->mean;
    j[std::string("median_") + name + "_ms"] = d->median;
    j[std::string("std_") + name + "_ms"] = d->std;
    j[std::string("p90_") + name + "_ms"] = d->p90;
    j[std::string("p99_") + name + "_ms"] = d->p99;
  }
  j["errors"] = s.errors;
  return j;
}

std::string format_summary(const BenchSummary& s, const std::string& title) {
  std::string out;
  char line[160];
  auto row = [&](const char* k, const std::string& v) {
    std::snprintf(line, sizeof line, "%-40s%10s\n", k, v.c_str());
    out += line;
  };
  auto num = [](double v, int prec) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    return std::string(b);
  };
  auto sec = [&](const char* t) {
    const std::string s(t);
    const int len = static_cast<int>(s.size()), pad = std::max(1, (50 - len) / 2), rest = std::max(1, 50 - pad - len);
    out += std::string(static_cast<size_t>(pad), '-') + s + std::string(static_cast<size_t>(rest), '-') + "\n";
  };
  out += std::string(50, '=') + "\n";
  const size_t pad = title.size() < 50 ? (50 - title.size()) / 2 : 0;
  out += std::string(pad, ' ') + title + "\n";
  out += std::string(50, '=') + "\n";
  row("Successful requests:", std::to_string(s.completed));
  row("Failed requests:", std::to_string(s.failed));
  row("Benchmark duration (s):", num(s.duration_s, 2));
  row("Total input tokens:", std::to_string(s.total_input_tokens));
  row("Total generated tokens:", std::to_string(s.total_output_tokens));
  row("Request throughput (req/s):", num(s.request_throughput, 2));
  if (s.pages) row("Pages per second:", num(s.pages_per_s, 2));
  row("Output token throughput (tok/s):", num(s.output_throughput, 2));
  row("Total Token throughput (tok/s):", num(s.total_token_throughput, 2));
  const std::tuple<const char*, const char*, const Dist*> ds[] = {{"Time to First Token", "TTFT", &s.ttft_ms},
                                                                  {"Time per Output Token (excl. 1st token)", "TPOT", &s.tpot_ms},
                                                                  {"Inter-token Latency", "ITL", &s.itl_ms},
                                                                  {"End-to-end Latency", "E2EL", &s.e2el_ms}};
  for (const auto& [t, k, d] : ds) {
    sec(t);
    row((std::string("Mean ") + k + " (ms):").c_str(), num(d->mean, 2));
    row((std::string("Median ") + k + " (ms):").c_str(), num(d->median, 2));
    row((std::string("P90 ") + k + " (ms):").c_str(), num(d->p90, 2));
    row((std::string("P99 ") + k + " (ms):").c_str(), num(d->p99, 2));
  }
  out += std::string(50, '=') + "\n";
  return out;
}

}  // namespace locr::toolkit
