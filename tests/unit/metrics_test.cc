// Prometheus text of the engine metrics: numbers as prometheus_client prints them, HELP and TYPE
// for every family, vLLM's bucket bounds.
#include "runtime/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

using locr::runtime::buckets_1_2_5;
using locr::runtime::EngineMetrics;
using locr::runtime::Histogram;
using locr::runtime::prom_escape;
using locr::runtime::prom_number;

TEST(PromNumber, PrintsAsPythonClient) {
  // Expected strings are prometheus_client's floatToGoString(x).
  EXPECT_EQ(prom_number(0.005), "0.005");
  EXPECT_EQ(prom_number(0.001), "0.001");
  EXPECT_EQ(prom_number(0.1), "0.1");
  EXPECT_EQ(prom_number(0.3), "0.3");
  EXPECT_EQ(prom_number(0.075), "0.075");
  EXPECT_EQ(prom_number(1), "1.0");
  EXPECT_EQ(prom_number(0), "0.0");
  EXPECT_EQ(prom_number(7680), "7680.0");
  EXPECT_EQ(prom_number(16384), "16384.0");
  EXPECT_EQ(prom_number(123456), "123456.0");
  EXPECT_EQ(prom_number(1234567), "1.234567e+06");
  EXPECT_EQ(prom_number(10000000), "1e+07");
  EXPECT_EQ(prom_number(0.0001), "0.0001");
  EXPECT_EQ(prom_number(0.00001), "1e-05");
  EXPECT_EQ(prom_number(1.5e-7), "1.5e-07");
  EXPECT_EQ(prom_number(1e20), "1e+20");
  EXPECT_EQ(prom_number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(prom_number(-2.5), "-2.5");
  EXPECT_EQ(prom_number(INFINITY), "+Inf");
  EXPECT_EQ(prom_number(-INFINITY), "-Inf");
  EXPECT_EQ(prom_number(NAN), "NaN");
  EXPECT_EQ(prom_number(0.9), "0.9");
}

TEST(PromNumber, EscapesLabelValues) { EXPECT_EQ(prom_escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

TEST(Buckets, OneTwoFiveUpToMax) {
  EXPECT_EQ(buckets_1_2_5(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(buckets_1_2_5(1024), (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}));
}

TEST(Histogram, RendersCumulativeBucketsHelpAndType) {
  Histogram h({0.005, 0.5, 1});
  h.observe(0.004);
  h.observe(0.5);
  h.observe(3);
  std::string o;
  h.render(o, "x_seconds", "Some help.", "model_name=\"m\"");
  EXPECT_EQ(o,
            "# HELP x_seconds Some help.\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{model_name=\"m\",le=\"0.005\"} 1.0\n"
            "x_seconds_bucket{model_name=\"m\",le=\"0.5\"} 2.0\n"
            "x_seconds_bucket{model_name=\"m\",le=\"1.0\"} 2.0\n"
            "x_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3.0\n"
            "x_seconds_sum{model_name=\"m\"} 3.504\n"
            "x_seconds_count{model_name=\"m\"} 3.0\n");
}

TEST(EngineMetrics, EveryFamilyHasHelpAndTypeAndVllmNames) {
  EngineMetrics m(1024);
  m.cache_config = {{"block_size", "16"}, {"num_gpu_blocks", "64"}};
  const std::string text = m.render("my\"model");
  std::istringstream in(text);
  std::set<std::string> helped, typed, sampled;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) helped.insert(line.substr(7, line.find(' ', 7) - 7));
    else if (line.rfind("# TYPE ", 0) == 0) typed.insert(line.substr(7, line.find(' ', 7) - 7));
    else {
      std::string name = line.substr(0, line.find('{'));
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        if (!typed.count(name) && name.size() > std::strlen(suffix) &&
            name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
          name.resize(name.size() - std::strlen(suffix));
      sampled.insert(name);
    }
  }
  EXPECT_EQ(helped, typed);
  for (const auto& n : sampled) EXPECT_TRUE(typed.count(n)) << n << " has samples but no TYPE";
  for (const char* n : {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                        "vllm:cache_config_info", "vllm:request_prefill_time_seconds",
                        "vllm:request_decode_time_seconds", "vllm:iteration_tokens_total",
                        "vllm:request_params_max_tokens", "vllm:e2e_request_latency_seconds"})
    EXPECT_TRUE(typed.count(n)) << n;
  EXPECT_NE(text.find("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"64\"} 1.0\n"), std::string::npos);
  EXPECT_NE(text.find("model_name=\"my\\\"model\""), std::string::npos);
  // vLLM's bounds: 1-2-5 token buckets up to max_model_len, its request-latency buckets.
  EXPECT_NE(text.find("vllm:request_params_max_tokens_bucket{model_name=\"my\\\"model\",le=\"1000.0\"}"),
            std::string::npos);
  EXPECT_EQ(text.find("vllm:request_params_max_tokens_bucket{model_name=\"my\\\"model\",le=\"2000.0\"}"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:request_prefill_time_seconds_bucket{model_name=\"my\\\"model\",le=\"7680.0\"}"),
            std::string::npos);
  EXPECT_EQ(text.find("0000000001"), std::string::npos) << "a bound printed with %.17g";
}
