// Statistics of `locr bench` (vLLM `bench serve` field names): per-request records from streamed
// responses, and the summary — throughputs and mean/median/std/p90/p99 of TTFT, TPOT (excluding the
// first token), ITL and end-to-end latency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace locr::toolkit {

struct RequestRecord {
  bool success = false;
  std::string error;
  double start_s = 0;    // relative to the phase start
  double ttft_s = 0;     // first non-empty text chunk
  double latency_s = 0;  // end to end
  std::vector<double> itl_s;  // gaps between consecutive text chunks
  int64_t prompt_tokens = 0, output_tokens = 0;
  std::string text;

  // Records one streamed text chunk at time t (seconds since the request was sent).
  void on_chunk(double t);
  double last_chunk_s = -1;
};

// numpy.percentile with linear interpolation; 0 for an empty vector.
double percentile(std::vector<double> v, double p);

struct Dist {
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0;
  static Dist of(const std::vector<double>& v);
};

struct BenchSummary {
  int64_t num_requests = 0, completed = 0, failed = 0;
  double duration_s = 0;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  double pages_per_s = 0;  // OCR workloads (one page per request)
  bool pages = false;
  Dist ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<std::string> errors;
};

// TPOT of one request: (latency - ttft) / (output_tokens - 1), for requests with > 1 token.
double tpot_s(const RequestRecord& r);

BenchSummary summarize(const std::vector<RequestRecord>& records, double duration_s, bool pages);

// vLLM result-file names: completed, failed, duration, total_input_tokens, total_output_tokens,
// request_throughput, output_throughput, total_token_throughput, {mean,median,std,p90,p99}_{ttft,tpot,itl,e2el}_ms.
nlohmann::ordered_json to_json(const BenchSummary& s);
// The vLLM-style text block.
std::string format_summary(const BenchSummary& s, const std::string& title);

}  // namespace locr::toolkit
