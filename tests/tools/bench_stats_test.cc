#include <gtest/gtest.h>

#include "toolkit/bench_stats.h"
#include "toolkit/compare.h"

namespace locr::toolkit {
namespace {

TEST(BenchStats, PercentileMatchesNumpyLinear) {
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 100), 4);
  // numpy.percentile(range(1, 101), 99) == 99.01
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_NEAR(percentile(v, 99), 99.01, 1e-9);
  const Dist d = Dist::of({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  EXPECT_NEAR(d.std, 1.118033988749895, 1e-12);  // population std
}

RequestRecord rec(double t0, std::vector<double> chunk_times, double end, int64_t in, int64_t out) {
  RequestRecord r;
  r.success = true;
  r.start_s = t0;
  for (double t : chunk_times) r.on_chunk(t);
  r.latency_s = end;
  r.prompt_tokens = in;
  r.output_tokens = out;
  return r;
}

TEST(BenchStats, TtftTpotItl) {
  const auto r = rec(0, {0.5, 0.6, 0.8, 0.9}, 1.0, 10, 4);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.5);
  ASSERT_EQ(r.itl_s.size(), 3u);
  EXPECT_NEAR(r.itl_s[0], 0.1, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.2, 1e-12);
  EXPECT_NEAR(tpot_s(r), (1.0 - 0.5) / 3, 1e-12);  // excludes the first token
  EXPECT_DOUBLE_EQ(tpot_s(rec(0, {0.2}, 0.3, 5, 1)), 0.0);
}

TEST(BenchStats, SummaryAndJsonFieldNames) {
  std::vector<RequestRecord> rs = {rec(0, {0.1, 0.2}, 0.3, 100, 2), rec(0, {0.3, 0.4, 0.5}, 0.6, 50, 3)};
  RequestRecord bad;
  bad.error = "HTTP 500: boom";
  rs.push_back(bad);
  const BenchSummary s = summarize(rs, 2.0, /*pages=*/true);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.total_input_tokens, 150);
  EXPECT_EQ(s.total_output_tokens, 5);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 2.5);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 77.5);
  EXPECT_DOUBLE_EQ(s.pages_per_s, 1.0);
  EXPECT_NEAR(s.ttft_ms.mean, 200, 1e-9);
  EXPECT_NEAR(s.e2el_ms.median, 450, 1e-9);
  EXPECT_NEAR(s.e2el_ms.p90, 300 + 0.9 * 300, 1e-9);  // linear between the two latencies, as numpy
  EXPECT_NEAR(s.e2el_ms.p99, 300 + 0.99 * 300, 1e-9);
  EXPECT_NEAR(s.tpot_ms.mean, (200.0 + 150.0) / 2, 1e-9);  // (0.3-0.1)/1 and (0.6-0.3)/2
  EXPECT_NEAR(s.itl_ms.mean, 100, 1e-9);
  const auto j = to_json(s);
  for (const char* k : {"completed", "failed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
                        "output_throughput", "total_token_throughput", "pages_per_second", "mean_ttft_ms", "median_ttft_ms",
                        "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms",
                        "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "median_e2el_ms", "p90_e2el_ms", "p99_e2el_ms", "p90_ttft_ms"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["errors"][0], "HTTP 500: boom");
  const std::string text = format_summary(s, "Throughput");
  for (const char* k : {"Successful requests:", "Failed requests:", "Benchmark duration (s):", "Total input tokens:",
                        "Total generated tokens:", "Request throughput (req/s):", "Output token throughput (tok/s):",
                        "Total Token throughput (tok/s):", "Mean TTFT (ms):", "Median TPOT (ms):", "P99 ITL (ms):",
                        "Mean E2EL (ms):", "P90 E2EL (ms):", "Pages per second:"})
    EXPECT_NE(text.find(k), std::string::npos) << k;
}

TEST(Compare, Metrics) {
  const float ref[] = {1, -2, 0, 4};
  const float same[] = {1, -2, 0, 4};
  auto s = compare_tensors(same, ref, 4);
  EXPECT_EQ(s.max_abs_error, 0);
  EXPECT_NEAR(s.cosine_similarity, 1, 1e-12);
  EXPECT_TRUE(passes(s, {}));
  const float off[] = {1.5, -2, 0.5, 4};
  s = compare_tensors(off, ref, 4);
  EXPECT_DOUBLE_EQ(s.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(s.mean_abs_error, 0.25);
  EXPECT_GT(s.relative_error, 1e4);  // the near-zero reference element dominates, as in the seeds
  EXPECT_LT(s.cosine_similarity, 0.999);
  EXPECT_FALSE(passes(s, {}));
  const float big[] = {3, -2, 0, 4};
  EXPECT_FALSE(passes(compare_tensors(big, ref, 4), {}));  // max abs 2 >= 1
  const float nan[] = {NAN, -2, 0, 4};
  EXPECT_FALSE(passes(compare_tensors(nan, ref, 4), {}));
  StatsSummary sum;
  sum.add(compare_tensors(same, ref, 4), true);
  sum.add(compare_tensors(off, ref, 4), false);
  EXPECT_EQ(sum.to_json()["failed_tensors"], 1);
  EXPECT_EQ(sum.to_json()["pass"], false);
  EXPECT_DOUBLE_EQ(sum.max_abs_error, 0.5);
}

}  // namespace
}  // namespace locr::toolkit
