// Device sampling against scalar loops: greedy == argmax (lowest id on ties, also top_k == 1),
// the empirical distribution over many seeds matches the tempered softmax (chi-square), top_k /
// top_p / min_p never pick a token outside the allowed set (computed here as runtime/sampler.cc
// does), the same (seed, step) draws the same token in any batch row, and out_logprobs is the raw
// log-softmax at the chosen token.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "cuda_test_util.h"

namespace locr::kernels::cuda::test {
namespace {

int32_t host_argmax(const float* l, int64_t V) {
  int64_t best = 0;
  for (int64_t i = 1; i < V; ++i)
    if (l[i] > l[best]) best = i;
  return static_cast<int32_t>(best);
}

struct Draws {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};

// One row of logits per entry of params (rows[i % rows.size()]).
Draws run(const std::vector<std::vector<float>>& rows, const std::vector<SampleParams>& params) {
  const int64_t V = static_cast<int64_t>(rows[0].size()), n = static_cast<int64_t>(params.size());
  std::vector<float> logits(n * V);
  for (int64_t i = 0; i < n; ++i) std::copy(rows[i % rows.size()].begin(), rows[i % rows.size()].end(), logits.begin() + i * V);
  Dev<float> dl(logits);
  DeviceBuffer dp(params.size() * sizeof(SampleParams));
  copy_to_device(dp.get(), params.data(), dp.bytes(), nullptr);
  Dev<int32_t> tok(n);
  Dev<float> lp(n);
  sample(dl.get(), n, V, dp.as<SampleParams>(), tok.get(), lp.get(), nullptr);
  return {tok.host(), lp.host()};
}

std::vector<double> softmax(const std::vector<float>& l, double t) {
  const double mx = *std::max_element(l.begin(), l.end());
  std::vector<double> p(l.size());
  double s = 0;
  for (size_t i = 0; i < l.size(); ++i) s += p[i] = std::exp((l[i] - mx) / t);
  for (auto& x : p) x /= s;
  return p;
}

// Pearson chi-square of observed counts against probabilities (cells with p == 0 must be empty).
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double c2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double e = p[i] * n;
    c2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return c2;
}

TEST(CudaSampling, GreedyIsArgmaxWithTies) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  for (int64_t V : {1, 31, 33, 129, 1000, 151936}) {
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < 5; ++r) {
      std::vector<float> l = random_f32(V, -20, 20, 400 + r);
      if (V > 3 && r >= 1) {  // ties of the maximum: the lowest id must win
        l[V - 1] = 25;
        l[V / 2] = 25;
        if (r == 2) l[1] = 25;
      }
      if (r == 3) std::fill(l.begin(), l.end(), -1.0f);  // all equal: token 0
      rows.push_back(l);
    }
    std::vector<SampleParams> ps(rows.size());
    std::vector<SampleParams> k1(rows.size());
    for (size_t i = 0; i < k1.size(); ++i) {
      k1[i].temperature = 1.3f;
      k1[i].top_k = 1;
      k1[i].seed = 77 + i;
    }
    const Draws g = run(rows, ps), t = run(rows, k1);
    std::vector<float> flat;
    for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    Dev<float> dl(flat);
    Dev<int32_t> am(static_cast<int64_t>(rows.size()));
    argmax(dl.get(), static_cast<int64_t>(rows.size()), V, am.get(), nullptr);
    const std::vector<int32_t> a = am.host();
    for (size_t r = 0; r < rows.size(); ++r) {
      const int32_t want = host_argmax(rows[r].data(), V);
      EXPECT_EQ(a[r], want) << "V=" << V << " row " << r;
      EXPECT_EQ(g.tokens[r], want) << "V=" << V << " row " << r;
      EXPECT_EQ(t.tokens[r], want) << "V=" << V << " row " << r;
      // log-softmax at the chosen token
      double mx = rows[r][want], s = 0;
      for (float x : rows[r]) s += std::exp(static_cast<double>(x) - mx);
      EXPECT_NEAR(g.logprobs[r], -std::log(s), 1e-4) << "V=" << V;
    }
  }
}

TEST(CudaSampling, TemperatureMatchesSoftmax) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const std::vector<float> l = {1.0f, 2.0f, 0.5f, -1.0f, 2.2f, 0.0f, 1.5f, -3.0f};
  const int n = 20000;
  for (float t : {0.7f, 1.0f, 1.8f}) {
    std::vector<SampleParams> ps(n);
    for (int i = 0; i < n; ++i) {
      ps[i].temperature = t;
      ps[i].seed = 1000003ull * i + 17;
      ps[i].step = 3;
    }
    const Draws d = run({l}, ps);
    std::vector<int> counts(l.size(), 0);
    for (int32_t tok : d.tokens) {
      ASSERT_GE(tok, 0);
      ASSERT_LT(tok, static_cast<int32_t>(l.size()));
      ++counts[tok];
    }
    // 7 degrees of freedom: P(chi2 > 29.9) ~ 1e-4.
    EXPECT_LT(chi_square(counts, softmax(l, t), n), 29.9) << "temperature " << t;
    const std::vector<double> raw = softmax(l, 1.0);
    for (int i = 0; i < 50; ++i) EXPECT_NEAR(d.logprobs[i], std::log(raw[d.tokens[i]]), 1e-5);
  }
}

// The set runtime/sampler.cc may choose from: top-k by value, then the shortest descending prefix
// holding top_p of the top-k mass, cut where exp((l - max) / T) < min_p. Ties at a cut: all kept.
std::set<int32_t> allowed_set(const std::vector<float>& l, const SampleParams& p) {
  const int64_t V = static_cast<int64_t>(l.size());
  std::vector<int32_t> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  const int64_t k = (p.top_k > 0 && p.top_k < V) ? p.top_k : V;
  const double mx = l[idx[0]];
  double total = 0;
  for (int64_t i = 0; i < k; ++i) total += std::exp((l[idx[i]] - mx) / p.temperature);
  int64_t n = k;
  double cum = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double w = std::exp((l[idx[i]] - mx) / p.temperature);
    if (p.min_p > 0 && w < p.min_p) {
      n = std::max<int64_t>(i, 1);
      break;
    }
    cum += w;
    if (p.top_p < 1.0f && cum >= p.top_p * total) {
      n = i + 1;
      break;
    }
  }
  const float cut = l[idx[n - 1]];
  std::set<int32_t> s;
  for (int64_t i = 0; i < V; ++i)
    if (l[i] >= cut) s.insert(static_cast<int32_t>(i));
  return s;
}

// `slack` widens top_p and min_p for the host set: on a large vocabulary the device's F32 mass
// and the host's F64 mass may put a top_p boundary a few tokens apart.
void check_filter(const std::vector<float>& l, SampleParams base, int n, bool check_distribution,
                  float slack = 0.0f) {
  SampleParams wide = base;
  wide.top_p = std::min(1.0f, base.top_p + slack);
  wide.min_p = base.min_p * (1.0f - slack);
  const std::set<int32_t> ok = allowed_set(l, wide);
  std::vector<SampleParams> ps(n, base);
  for (int i = 0; i < n; ++i) ps[i].seed = 0x9e3779b97f4a7c15ull * (i + 1);
  const Draws d = run({l}, ps);
  std::vector<int> counts(l.size(), 0);
  for (int32_t tok : d.tokens) {
    ASSERT_TRUE(ok.count(tok)) << "token " << tok << " outside the allowed set (top_k " << base.top_k << " top_p "
                               << base.top_p << " min_p " << base.min_p << ")";
    ++counts[tok];
  }
  if (!check_distribution) return;
  // Within the allowed set the draw follows the renormalised tempered softmax.
  std::vector<double> p = softmax(l, base.temperature);
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (!ok.count(static_cast<int32_t>(i))) p[i] = 0;
    s += p[i];
  }
  for (auto& x : p) x /= s;
  const double dof = static_cast<double>(ok.size()) - 1;
  EXPECT_LT(chi_square(counts, p, n), dof + 6 * std::sqrt(2 * dof) + 10);
}

TEST(CudaSampling, FiltersStayInsideTheAllowedSet) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const std::vector<float> small = {0.3f, 2.0f, 1.1f, -0.4f, 1.9f, 0.8f, 1.2f, -2.0f, 0.0f, 1.7f, 0.9f, -1.0f};
  SampleParams p;
  p.temperature = 1.0f;
  p.top_k = 3;
  check_filter(small, p, 8000, true);
  p.top_k = 0;
  p.top_p = 0.6f;
  check_filter(small, p, 8000, true);
  p.top_p = 1.0f;
  p.min_p = 0.3f;
  check_filter(small, p, 8000, true);
  p.temperature = 0.5f;
  p.top_k = 5;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  check_filter(small, p, 8000, true);
  // Ties at the top-k boundary: all tied tokens are allowed.
  const std::vector<float> tied = {1.0f, 3.0f, 2.0f, 2.0f, 2.0f, 0.0f, -1.0f};
  p = SampleParams{};
  p.temperature = 1.0f;
  p.top_k = 2;
  check_filter(tied, p, 3000, true);
  // A large vocabulary: only the allowed-set property (with slack for F32 vs F64 masses).
  const std::vector<float> big = random_f32(151936, -10, 10, 501);
  for (auto [k, tp, mp] : {std::tuple{50, 1.0f, 0.0f}, {0, 0.8f, 0.0f}, {0, 1.0f, 0.2f}, {1000, 0.95f, 0.01f}}) {
    p = SampleParams{};
    p.temperature = 0.8f;
    p.top_k = k;
    p.top_p = tp;
    p.min_p = mp;
    check_filter(big, p, 64, false, 0.01f);
  }
}

TEST(CudaSampling, SameSeedAndStepSameToken) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const std::vector<float> l = random_f32(5000, -3, 3, 601);
  std::vector<SampleParams> ps(64);
  for (int i = 0; i < 64; ++i) {
    ps[i].temperature = 1.0f;
    ps[i].top_p = 0.95f;
    ps[i].seed = 42;
    ps[i].step = static_cast<uint64_t>(i % 8);  // rows i and i + 8 share (seed, step)
  }
  const Draws a = run({l}, ps), b = run({l}, ps);
  EXPECT_EQ(a.tokens, b.tokens);
  for (int i = 8; i < 64; ++i) EXPECT_EQ(a.tokens[i], a.tokens[i - 8]) << i;
  std::set<int32_t> distinct(a.tokens.begin(), a.tokens.begin() + 8);
  EXPECT_GT(distinct.size(), 1u) << "different steps should not all draw the same token";
}

}  // namespace
}  // namespace locr::kernels::cuda::test
