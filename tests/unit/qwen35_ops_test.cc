// The Qwen3.5 family's ops (kernels/ops.h: layer_norm, add_bias, gelu_tanh, sigmoid_mul,
// conv1d_silu, gated_delta_net):
//  - the oracle (ref backend = the host defaults of kernels/ops_qwen35.cc) against cases worked by
//    hand and against an independent f64 transcription of transformers' loops written here;
//  - the fast CPU kernels of every precision x ISA path against the oracle, at awkward shapes
//    (rows not a multiple of the vector width, strided views, n_v_heads = 2 n_k_heads, k_dim !=
//    v_dim, several sequences in one StateBatch with fresh and carried slots out of order);
//  - a sequence run in one call, split in two (prefill chunks) and token by token (decode) gives
//    the same bits, and so do one and several threads;
//  - the contract checks, and ProfiledOps' forwarding.
// Tolerances: the element-wise ops within a few f32 ulps of the oracle (4e-6 relative; tanh-GELU's
// e^(-2u) of large negative x also 1e-12 absolute: u's own rounding is |u| ulps of it); the conv
// within 1e-6 (1 + |y|) (a K-term f32 sum); the delta rule within 2e-6 (1 + |y|), outputs and
// states, after up to 64 steps of the f32 recurrence (the errors measured are under 2e-7 (1 + |y|)).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/op_profile.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

using testing_util::hv;
using testing_util::make_matrix;
using testing_util::random_vec;

Matrix f32_vector(const std::vector<float>& v) {
  auto buf = std::make_shared<std::vector<float>>(v);
  Matrix m;
  m.dtype = DType::kF32;
  m.rows = 1;
  m.cols = static_cast<int64_t>(v.size());
  m.data = buf->data();
  m.holder = buf;
  return m;
}

Matrix f32_matrix(const std::vector<float>& v, int64_t rows, int64_t cols) {
  Matrix m = f32_vector(v);
  m.rows = rows;
  m.cols = cols;
  return m;
}

// One sequence of a step: its rows, its state slot, whether it starts from zero.
struct Seq {
  int64_t n;
  int32_t slot;
  bool fresh;
};

// A host StateBatch over `seqs` (rows in order), the arrays kept alive by the object.
struct Batch {
  std::vector<int32_t> cu, slots, fresh;
  StateBatch b;
  explicit Batch(const std::vector<Seq>& seqs) {
    cu.push_back(0);
    int64_t max_q = 0;
    for (const Seq& s : seqs) {
      cu.push_back(cu.back() + static_cast<int32_t>(s.n));
      slots.push_back(s.slot);
      fresh.push_back(s.fresh ? 1 : 0);
      max_q = std::max(max_q, s.n);
    }
    b.n_seqs = static_cast<int64_t>(seqs.size());
    b.cu_q = b.host_cu_q = cu.data();
    b.slots = b.host_slots = slots.data();
    b.fresh = b.host_fresh = fresh.data();
    b.max_q = max_q;
  }
  int64_t rows() const { return cu.back(); }
};

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ---- Independent transcriptions of transformers' loops (f64 throughout), one sequence each. ----

// causal_conv1d_update: cat(state, x) over time, depthwise conv, keep the last K-1 inputs.
void conv_expected(const std::vector<float>& x, int64_t n, int64_t C, int64_t K, const std::vector<float>& w,
                   std::vector<double>& state /* [K-1][C] */, std::vector<double>& out /* [n][C] */) {
  std::vector<std::vector<double>> cat;  // [K-1+n][C]
  for (int64_t u = 0; u < K - 1; ++u) cat.emplace_back(state.begin() + u * C, state.begin() + (u + 1) * C);
  for (int64_t t = 0; t < n; ++t) cat.emplace_back(x.begin() + t * C, x.begin() + (t + 1) * C);
  out.assign(n * C, 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t j = 0; j < K; ++j) s += w[c * K + j] * cat[t + j][c];
      out[t * C + c] = s * sigmoid(s);
    }
  for (int64_t u = 0; u < K - 1; ++u)
    for (int64_t c = 0; c < C; ++c) state[u * C + c] = cat[n + u][c];
}

// torch_recurrent_gated_delta_rule with use_qk_l2norm_in_kernel, g and beta as
// Qwen3_5GatedDeltaNet.forward makes them; q, k [n][nk*kd], v [n][nv*vd], a, b [n][nv].
void gdn_expected(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                  const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& a_log,
                  const std::vector<float>& dt_bias, const DeltaNetParams& p, int64_t n,
                  std::vector<double>& S /* [nv][kd][vd] */, std::vector<double>& out /* [n][nv*vd] */) {
  const int64_t nk = p.n_k_heads, nv = p.n_v_heads, kd = p.k_dim, vd = p.v_dim, rep = nv / nk;
  out.assign(n * nv * vd, 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < nv; ++h) {
      // transformers' repeat_interleave, or llama.cpp's tiled order (DeltaNetParams::tiled: its ggml_repeat).
      const int64_t kh = p.tiled ? h % nk : h / rep;
      std::vector<double> qq(kd), kk(kd), kv_mem(vd, 0.0), delta(vd);
      double qs = 0, ks = 0;
      for (int64_t i = 0; i < kd; ++i) {
        qq[i] = q[t * nk * kd + kh * kd + i];
        kk[i] = k[t * nk * kd + kh * kd + i];
        qs += qq[i] * qq[i];
        ks += kk[i] * kk[i];
      }
      for (int64_t i = 0; i < kd; ++i) {
        qq[i] = qq[i] / std::sqrt(qs + p.l2_eps) / std::sqrt(static_cast<double>(kd));
        kk[i] = kk[i] / std::sqrt(ks + p.l2_eps);
      }
      const double g = -std::exp(static_cast<double>(a_log[h])) * softplus(static_cast<double>(a[t * nv + h]) + dt_bias[h]);
      const double beta = sigmoid(b[t * nv + h]);
      double* Sh = S.data() + h * kd * vd;
      for (int64_t i = 0; i < kd * vd; ++i) Sh[i] *= std::exp(g);
      for (int64_t i = 0; i < kd; ++i)
        for (int64_t j = 0; j < vd; ++j) kv_mem[j] += Sh[i * vd + j] * kk[i];
      for (int64_t j = 0; j < vd; ++j) delta[j] = (v[t * nv * vd + h * vd + j] - kv_mem[j]) * beta;
      for (int64_t i = 0; i < kd; ++i)
        for (int64_t j = 0; j < vd; ++j) Sh[i * vd + j] += kk[i] * delta[j];
      for (int64_t i = 0; i < kd; ++i)
        for (int64_t j = 0; j < vd; ++j) out[t * nv * vd + h * vd + j] += Sh[i * vd + j] * qq[i];
    }
}

// ---- The oracle against hand-worked cases. ----

double silu(double x) { return x / (1.0 + std::exp(-x)); }

TEST(Qwen35Oracle, Conv1dSiluByHand) {
  auto ref = make_ops("ref");
  // C = 2 channels, K = 3 taps: w[0] = (1, 2, 3), w[1] = (0.5, -1, 0); rows (1, 2), (3, 4), (5, 6).
  const Matrix w = f32_matrix({1, 2, 3, 0.5f, -1, 0}, 2, 3);
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, out(6, NAN);
  std::vector<float> state(2 * 2 * 2, 99.0f);  // two slots of [K-1 = 2][C = 2]; slot 1 holds garbage
  Batch b({{3, 1, true}});
  ref->conv1d_silu(hv(x, 3, 2), w, hv(state, 2, 4), b.b, hv(out, 3, 2));
  // Window (0,0), (0,0), (1,2), (3,4), (5,6). Channel 0: 3*1 = 3; 2*1 + 3*3 = 11; 1 + 6 + 15 = 22.
  // Channel 1: 0; -1*2 = -2; 0.5*2 - 4 = -3.
  const double want[6] = {silu(3), silu(0), silu(11), silu(-2), silu(22), silu(-3)};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-7) << i;
  EXPECT_EQ(std::vector<float>(state.begin() + 4, state.end()), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(std::vector<float>(state.begin(), state.begin() + 4), std::vector<float>(4, 99.0f));  // slot 0 untouched
  // One more row (7, 8) from the carried state: window (3,4), (5,6), (7,8).
  std::vector<float> x2 = {7, 8}, out2(2);
  Batch b2({{1, 1, false}});
  ref->conv1d_silu(hv(x2, 1, 2), w, hv(state, 2, 4), b2.b, hv(out2, 1, 2));
  EXPECT_NEAR(out2[0], silu(3 + 10 + 21), 1e-5);
  EXPECT_NEAR(out2[1], silu(0.5 * 4 - 6), 1e-6);
  EXPECT_EQ(std::vector<float>(state.begin() + 4, state.end()), (std::vector<float>{5, 6, 7, 8}));
}

TEST(Qwen35Oracle, GatedDeltaNetByHand) {
  auto ref = make_ops("ref");
  DeltaNetParams p;
  p.n_k_heads = p.n_v_heads = 1;
  p.k_dim = p.v_dim = 2;
  p.l2_eps = 0.0f;  // exact unit vectors
  // a_log = 0, dt_bias = 0, a = 0: g = -softplus(0) = -ln 2, decay 1/2. beta_in = 0 -> beta 1/2;
  // beta_in = ln 3 -> beta 3/4.
  const Matrix a_log = f32_vector({0.0f}), dt_bias = f32_vector({0.0f});
  const std::vector<float> q = {3, 4, 0, 1, 1, 0}, k = {1, 0, 0, 2, 3, 4}, v = {2, 4, 1, 1, 1, 0};
  const std::vector<float> a = {0, 0, 0}, beta = {0, 0, std::log(3.0f)};
  std::vector<float> out(6, NAN), state(4, 123.0f);
  Batch b({{3, 0, true}});
  ref->gated_delta_net(hv(q, 3, 2), hv(k, 3, 2), hv(v, 3, 2), hv(a, 3, 1), hv(beta, 3, 1), a_log, dt_bias,
                       hv(state, 1, 4), b.b, p, hv(out, 3, 2));
  const double r2 = std::sqrt(2.0);
  // t0: q' = (.6, .8)/r2, k' = (1, 0). S = 0; d = v/2 = (1, 2); S = k' d^T = [[1, 2], [0, 0]];
  //     out = S^T q' = (.6, 1.2)/r2.
  // t1: q' = (0, 1)/r2, k' = (0, 1). S = [[.5, 1], [0, 0]]; S^T k' = 0; d = (.5, .5);
  //     S = [[.5, 1], [.5, .5]]; out = (.5, .5)/r2.
  // t2: q' = (1, 0)/r2, k' = (.6, .8). S = [[.25, .5], [.25, .25]]; S^T k' = (.35, .5);
  //     d = ((1, 0) - (.35, .5)) * .75 = (.4875, -.375); S = [[.5425, .275], [.64, -.05]];
  //     out = (.5425, .275)/r2.
  const double want[6] = {0.6 / r2, 1.2 / r2, 0.5 / r2, 0.5 / r2, 0.5425 / r2, 0.275 / r2};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << i;
  const double want_s[4] = {0.5425, 0.275, 0.64, -0.05};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(state[i], want_s[i], 1e-6) << i;
}

// The softplus threshold and a value head pair sharing a key head, on the oracle against the
// transcription: a + dt_bias across 20, both sides of it.
TEST(Qwen35Oracle, GatedDeltaNetMatchesTheTranscription) {
  auto ref = make_ops("ref");
  for (float a_scale : {1.0f, 30.0f, -1.0f}) {
    DeltaNetParams p;
    p.tiled = a_scale < 0;  // the tiled value-head order, with a_scale 1
    a_scale = std::fabs(a_scale);
    p.n_k_heads = 2;
    p.n_v_heads = 4;
    p.k_dim = 5;
    p.v_dim = 3;
    const int64_t n = 9, nq = p.n_k_heads * p.k_dim, nvv = p.n_v_heads * p.v_dim;
    const auto q = random_vec(n * nq, 1, -2, 2), k = random_vec(n * nq, 2, -2, 2), v = random_vec(n * nvv, 3, -2, 2);
    const auto a = random_vec(n * p.n_v_heads, 4, -a_scale, a_scale), b = random_vec(n * p.n_v_heads, 5, -4, 4);
    const auto a_log = random_vec(p.n_v_heads, 6, -2, 1), dt = random_vec(p.n_v_heads, 7, -1, 1);
    const auto s0 = random_vec(p.state_floats(), 8);
    std::vector<float> out(n * nvv), state = s0;
    Batch bt({{n, 0, false}});
    ref->gated_delta_net(hv(q, n, nq), hv(k, n, nq), hv(v, n, nvv), hv(a, n, p.n_v_heads), hv(b, n, p.n_v_heads),
                         f32_vector(a_log), f32_vector(dt), hv(state, 1, p.state_floats()), bt.b, p,
                         hv(out, n, nvv));
    std::vector<double> S(s0.begin(), s0.end()), want;
    gdn_expected(q, k, v, a, b, a_log, dt, p, n, S, want);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 2e-6 * (1 + std::fabs(want[i]))) << i;
    for (size_t i = 0; i < S.size(); ++i) EXPECT_NEAR(state[i], S[i], 2e-6 * (1 + std::fabs(S[i]))) << i;
  }
}

TEST(Qwen35Oracle, ElementwiseByDefinition) {
  auto ref = make_ops("ref");
  // layer_norm of (1, 2, 3, 6): mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5.
  std::vector<float> x = {1, 2, 3, 6}, y(4);
  const Matrix w = make_matrix(DType::kBF16, 1, 4, 1), b = make_matrix(DType::kF16, 1, 4, 2);
  ref->layer_norm(hv(x, 1, 4), w, b, 0.5f, hv(y, 1, 4));
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(y[i], (x[i] - 3.0) / std::sqrt(3.5 + 0.5) * w.at(0, i) + b.at(0, i), 1e-6) << i;
  // gelu_pytorch_tanh and the sigmoid gate.
  std::vector<float> g = {-3, -0.5f, 0, 0.5f, 3}, z = g;
  ref->gelu_tanh(hv(z, 1, 5));
  for (int i = 0; i < 5; ++i) {
    const double u = std::sqrt(2 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i]);
    EXPECT_NEAR(z[i], 0.5 * g[i] * (1 + std::tanh(u)), 1e-7) << i;
  }
  std::vector<float> xs = {2, 2, 2, 2, 2}, o(5);
  ref->sigmoid_mul(hv(g, 1, 5), hv(xs, 1, 5), hv(o, 1, 5));
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(o[i], 2 * sigmoid(g[i]), 1e-7) << i;
  std::vector<float> yb = {1, 2, 3, 4, 5, 6};
  ref->add_bias(hv(yb, 2, 3), f32_vector({10, 20, 30}));
  EXPECT_EQ(yb, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

// ---- Every backend: ref and the CPU paths, against the oracle. ----

struct Backend {
  std::string name;  // "ref", or a precision
  CpuPrecision precision = CpuPrecision::kF32;
  CpuIsa isa = CpuIsa::kAuto;
};

std::vector<Backend> all_backends() {
  std::vector<Backend> out = {{"ref"}};
  for (CpuIsa isa : kAllCpuIsas) {
    out.push_back({"f32", CpuPrecision::kF32, isa});
    out.push_back({"bf16", CpuPrecision::kBF16, isa});
  }
  return out;
}

std::string backend_name(const testing::TestParamInfo<Backend>& info) {
  std::string s = info.param.name == "ref" ? "ref" : info.param.name + "_" + cpu_isa_name(info.param.isa);
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

class Qwen35OpsTest : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam().name == "ref") {
      ops_ = make_ops("ref");
    } else {
      if (!cpu_isa_supported(GetParam().isa)) GTEST_SKIP() << "this CPU lacks " << cpu_isa_name(GetParam().isa);
      ops_ = make_cpu_ops(GetParam().precision, GetParam().isa);
    }
    ref_ = make_ops("ref");
  }
  std::unique_ptr<Ops> ops_, ref_;
};

TEST_P(Qwen35OpsTest, LayerNorm) {
  for (int64_t dim : {1, 15, 17, 33, 768, 1030}) {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      SCOPED_TRACE(testing::Message() << "dim " << dim << " " << dtype_name(dt));
      const Matrix w = make_matrix(dt, 1, dim, 31), b = make_matrix(dt, dim, 1, 32);  // a column vector too
      const int64_t rows = 37, stride = dim + 5;
      auto x = random_vec(rows * stride, 33, -3.0f, 5.0f);  // mean away from 0
      std::vector<float> y(rows * dim), yr(rows * dim);
      ops_->layer_norm(hv(x, rows, dim, stride), w, b, 1e-6f, hv(y, rows, dim));
      ref_->layer_norm(hv(x, rows, dim, stride), w, b, 1e-6f, hv(yr, rows, dim));
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], yr[i], 4e-6 * (1 + std::fabs(yr[i]))) << i;
      ops_->layer_norm(hv(x, rows, dim, stride), w, b, 1e-6f, hv(x, rows, dim, stride));  // in place
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(0, std::memcmp(&x[r * stride], &y[r * dim], dim * sizeof(float))) << r;
    }
  }
}

TEST_P(Qwen35OpsTest, AddBias) {
  for (int64_t n : {1, 17, 3072}) {
    const Matrix b = make_matrix(DType::kBF16, 1, n, 41);
    const int64_t rows = 9, stride = n + 3;
    auto y = random_vec(rows * stride, 42), yr = y;
    ops_->add_bias(hv(y, rows, n, stride), b);
    ref_->add_bias(hv(yr, rows, n, stride), b);
    EXPECT_EQ(y, yr);  // padding included: untouched
  }
}

TEST_P(Qwen35OpsTest, GeluTanhAndSigmoidMul) {
  for (int64_t n : {1, 15, 17, 1000, 40000}) {
    auto x = random_vec(n, 53, -10.0f, 10.0f), xr = x;
    ops_->gelu_tanh(hv(x, 1, n));
    ref_->gelu_tanh(hv(xr, 1, n));
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(x[i], xr[i], 4e-6 * std::fabs(xr[i]) + 1e-12) << i;

    const int64_t rows = 3, cols = n, stride = n + 7;
    const auto g = random_vec(rows * stride, 51, -12.0f, 12.0f), u = random_vec(rows * stride, 52, -3.0f, 3.0f);
    std::vector<float> o(rows * cols), orf(rows * cols);
    ops_->sigmoid_mul(hv(g, rows, cols, stride), hv(u, rows, cols, stride), hv(o, rows, cols));
    ref_->sigmoid_mul(hv(g, rows, cols, stride), hv(u, rows, cols, stride), hv(orf, rows, cols));
    for (size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(o[i], orf[i], 4e-6 * std::fabs(orf[i]) + 1e-30) << i;
    auto in_place = u;  // out = x
    ops_->sigmoid_mul(hv(g, rows, cols, stride), hv(in_place, rows, cols, stride), hv(in_place, rows, cols, stride));
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_EQ(0, std::memcmp(&in_place[r * stride], &o[r * cols], cols * sizeof(float))) << r;
  }
  std::vector<float> x = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 5.0f, -5.0f, 9.0f, -9.0f, 30.0f, -30.0f,
                          1e30f, -1e30f};
  auto xr = x;
  const int64_t n = static_cast<int64_t>(x.size());
  ops_->gelu_tanh(hv(x, 1, n));
  ref_->gelu_tanh(hv(xr, 1, n));
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], xr[i], 4e-6 * std::fabs(xr[i]) + 1e-12) << i;
}

// A backend may keep its own layout of a conv kernel between calls (the CPU one does, keyed by the
// weight's storage). Weights of one shape made and freed one after another (the allocator hands
// the same address back), and one with no holder, each give the oracle's result.
TEST_P(Qwen35OpsTest, Conv1dSiluAfterItsWeightIsFreedAndAnotherMade) {
  const int64_t C = 48, K = 4, sw = (K - 1) * C;
  const Batch b({{1, 0, false}});
  const auto x = random_vec(C, 21, -2.0f, 2.0f);
  const auto s0 = random_vec(sw, 22, -2.0f, 2.0f);
  for (uint32_t seed = 30; seed < 34; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    Matrix w = make_matrix(DType::kBF16, C, K, seed, 0.7f);
    std::shared_ptr<void> storage;
    if (seed == 33) std::swap(storage, w.holder);  // data without a holder, kept alive here
    std::vector<float> state = s0, state_r = s0, out(C, NAN), out_r(C, NAN);
    ops_->conv1d_silu(hv(x, 1, C), w, hv(state, 1, sw), b.b, hv(out, 1, C));
    ref_->conv1d_silu(hv(x, 1, C), w, hv(state_r, 1, sw), b.b, hv(out_r, 1, C));
    for (int64_t i = 0; i < C; ++i) ASSERT_NEAR(out[i], out_r[i], 1e-6 * (1 + std::fabs(out_r[i]))) << i;
  }
}

// The conv of a batch: sequences of several lengths in slots out of order, fresh and carried, x a
// column range of a wider buffer (the qkv projection), against the oracle and the transcription.
TEST_P(Qwen35OpsTest, Conv1dSiluBatch) {
  for (int64_t C : {1, 7, 40, 300}) {
    for (int64_t K : {2, 4}) {
      SCOPED_TRACE(testing::Message() << "C " << C << " K " << K);
      const std::vector<Seq> seqs = {{5, 3, false}, {1, 0, true}, {2, 2, false}, {0, 3, true}, {17, 1, true}, {1, 4, false}};
      Batch b(seqs);
      const int64_t rows = b.rows(), slots = 5, sw = (K - 1) * C, xs = C + 3;
      const Matrix w = make_matrix(DType::kBF16, C, K, 11, 0.7f);
      const auto x = random_vec(rows * xs, 12, -2.0f, 2.0f);
      const auto s0 = random_vec(slots * sw, 13, -2.0f, 2.0f);
      std::vector<float> state = s0, state_r = s0, out(rows * C, NAN), out_r(rows * C, NAN);
      ops_->conv1d_silu(hv(x, rows, C, xs), w, hv(state, slots, sw), b.b, hv(out, rows, C));
      ref_->conv1d_silu(hv(x, rows, C, xs), w, hv(state_r, slots, sw), b.b, hv(out_r, rows, C));
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], out_r[i], 1e-6 * (1 + std::fabs(out_r[i]))) << i;
      EXPECT_EQ(state, state_r);
      // Each sequence against the transcription.
      std::vector<float> wf(C * K);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < K; ++j) wf[c * K + j] = w.at(c, j);
      for (size_t i = 0; i < seqs.size(); ++i) {
        const int64_t r0 = b.cu[i], n = seqs[i].n;
        if (n == 0) continue;
        std::vector<double> st(sw, 0.0), want;
        if (!seqs[i].fresh) st.assign(s0.begin() + seqs[i].slot * sw, s0.begin() + (seqs[i].slot + 1) * sw);
        std::vector<float> xi(n * C);
        for (int64_t t = 0; t < n; ++t) std::memcpy(&xi[t * C], &x[(r0 + t) * xs], C * sizeof(float));
        conv_expected(xi, n, C, K, wf, st, want);
        for (int64_t e = 0; e < n * C; ++e)
          ASSERT_NEAR(out[r0 * C + e], want[e], 1e-6 * (1 + std::fabs(want[e]))) << "seq " << i << " " << e;
        for (int64_t e = 0; e < sw; ++e) ASSERT_EQ(state[seqs[i].slot * sw + e], static_cast<float>(st[e]));
      }
    }
  }
}

struct GdnCase {
  DeltaNetParams p;
  std::vector<Seq> seqs;
  int64_t slots;
  int64_t pad;  // extra columns of every activation buffer (strided views)
};

struct GdnData {
  int64_t rows, nq, nvv, qs, vs, as;
  std::vector<float> q, k, v, a, b, a_log, dt;
  std::vector<float> s0;
  GdnData(const GdnCase& c, int64_t rows_, uint32_t seed) : rows(rows_) {
    const DeltaNetParams& p = c.p;
    nq = p.n_k_heads * p.k_dim;
    nvv = p.n_v_heads * p.v_dim;
    qs = nq + c.pad;
    vs = nvv + 2 * c.pad;
    as = p.n_v_heads + c.pad;
    q = random_vec(rows * qs, seed + 1, -1, 1);
    k = random_vec(rows * qs, seed + 2, -1, 1);
    v = random_vec(rows * vs, seed + 3, -1, 1);
    a = random_vec(rows * as, seed + 4, -3, 3);
    b = random_vec(rows * as, seed + 5, -3, 3);
    a_log = random_vec(p.n_v_heads, seed + 6, -3, 1);
    dt = random_vec(p.n_v_heads, seed + 7, -1, 1);
    s0 = random_vec(c.slots * p.state_floats(), seed + 8, -0.5f, 0.5f);
  }
  // Rows [r0, r0 + n) of the activations.
  void run(Ops& ops, const DeltaNetParams& p, int64_t r0, int64_t n, const StateBatch& bt, std::vector<float>& state,
           int64_t slots, std::vector<float>& out, int64_t os, DType wdt = DType::kF32) const {
    Matrix al = f32_vector(a_log), db = f32_vector(dt);
    if (wdt != DType::kF32) {  // the same values in a 16-bit dtype (rounded)
      al = make_matrix(wdt, 1, p.n_v_heads, 1);
      db = make_matrix(wdt, 1, p.n_v_heads, 2);
    }
    ops.gated_delta_net(hv(q.data() + r0 * qs, n, nq, qs), hv(k.data() + r0 * qs, n, nq, qs),
                        hv(v.data() + r0 * vs, n, nvv, vs), hv(a.data() + r0 * as, n, p.n_v_heads, as),
                        hv(b.data() + r0 * as, n, p.n_v_heads, as), al, db, hv(state, slots, p.state_floats()), bt,
                        p, hv(out.data() + r0 * os, n, nvv, os));
  }
};

std::vector<GdnCase> gdn_cases() {
  std::vector<GdnCase> cs;
  auto params = [](int64_t nk, int64_t nv, int64_t kd, int64_t vd, bool tiled = false) {
    DeltaNetParams p;
    p.n_k_heads = nk;
    p.n_v_heads = nv;
    p.k_dim = kd;
    p.v_dim = vd;
    p.tiled = tiled;
    return p;
  };
  // Several sequences in one step, fresh and carried slots out of order, an empty one.
  cs.push_back({params(2, 4, 24, 40), {{7, 2, false}, {1, 0, true}, {0, 4, false}, {30, 3, true}, {1, 1, false}}, 5, 3});
  cs.push_back({params(1, 2, 16, 16), {{1, 1, false}, {1, 0, false}, {1, 2, true}}, 3, 0});  // decode
  cs.push_back({params(2, 2, 128, 128), {{3, 1, false}, {12, 0, true}}, 2, 1});              // real head size
  cs.push_back({params(1, 1, 3, 5), {{9, 0, false}}, 1, 2});                                  // tiny, odd
  cs.push_back({params(2, 4, 32, 64), {{64, 0, true}}, 1, 0});                                // a prefill
  // Value heads in a GGUF file's tiled order (head h reads key head h % n_k): a step, a decode.
  cs.push_back({params(2, 4, 24, 40, true), {{7, 2, false}, {1, 0, true}, {30, 3, true}}, 4, 1});
  cs.push_back({params(3, 6, 16, 16, true), {{1, 1, false}, {1, 0, false}}, 2, 0});
  return cs;
}

TEST_P(Qwen35OpsTest, GatedDeltaNetBatch) {
  int case_no = 0;
  for (const GdnCase& c : gdn_cases()) {
    SCOPED_TRACE(testing::Message() << "case " << case_no++);
    Batch bt(c.seqs);
    const GdnData d(c, bt.rows(), 100 + case_no);
    const int64_t os = d.nvv + c.pad;
    std::vector<float> out(bt.rows() * os, 5.0f), out_r = out, state = d.s0, state_r = d.s0;
    for (DType wdt : {DType::kF32, DType::kBF16}) {
      state = state_r = d.s0;
      d.run(*ops_, c.p, 0, bt.rows(), bt.b, state, c.slots, out, os, wdt);
      d.run(*ref_, c.p, 0, bt.rows(), bt.b, state_r, c.slots, out_r, os, wdt);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], out_r[i], 2e-6 * (1 + std::fabs(out_r[i]))) << i;
      for (size_t i = 0; i < state.size(); ++i)
        ASSERT_NEAR(state[i], state_r[i], 2e-6 * (1 + std::fabs(state_r[i]))) << i;
    }
    // The f32 weights' run against the transcription, sequence by sequence.
    state = d.s0;
    d.run(*ops_, c.p, 0, bt.rows(), bt.b, state, c.slots, out, os);
    const int64_t sf = c.p.state_floats();
    for (size_t i = 0; i < c.seqs.size(); ++i) {
      const Seq& s = c.seqs[i];
      if (s.n == 0) {
        for (int64_t e = 0; e < sf; ++e) ASSERT_EQ(state[s.slot * sf + e], d.s0[s.slot * sf + e]);  // untouched
        continue;
      }
      auto rows_of = [&](const std::vector<float>& src, int64_t stride, int64_t cols) {
        std::vector<float> r(s.n * cols);
        for (int64_t t = 0; t < s.n; ++t) std::memcpy(&r[t * cols], &src[(bt.cu[i] + t) * stride], cols * 4);
        return r;
      };
      std::vector<double> S(sf, 0.0), want;
      if (!s.fresh) S.assign(d.s0.begin() + s.slot * sf, d.s0.begin() + (s.slot + 1) * sf);
      gdn_expected(rows_of(d.q, d.qs, d.nq), rows_of(d.k, d.qs, d.nq), rows_of(d.v, d.vs, d.nvv),
                   rows_of(d.a, d.as, c.p.n_v_heads), rows_of(d.b, d.as, c.p.n_v_heads), d.a_log, d.dt, c.p, s.n, S,
                   want);
      for (int64_t t = 0; t < s.n; ++t)
        for (int64_t e = 0; e < d.nvv; ++e) {
          const double w = want[t * d.nvv + e];
          ASSERT_NEAR(out[(bt.cu[i] + t) * os + e], w, 2e-6 * (1 + std::fabs(w))) << "seq " << i << " t " << t;
        }
      for (int64_t e = 0; e < sf; ++e) ASSERT_NEAR(state[s.slot * sf + e], S[e], 2e-6 * (1 + std::fabs(S[e])));
      for (int64_t t = 0; t < s.n; ++t)  // the padding columns of out are not written
        for (int64_t e = d.nvv; e < os; ++e) ASSERT_EQ(out[(bt.cu[i] + t) * os + e], 5.0f);
    }
  }
}

// One sequence in one call, in two calls (a prefill split), and one token per call (decode): the
// same bits on every backend, and with one thread or three.
TEST_P(Qwen35OpsTest, SplitsAndThreadsChangeNoBit) {
  DeltaNetParams p;
  p.n_k_heads = 2;
  p.n_v_heads = 4;
  p.k_dim = 40;
  p.v_dim = 48;
  const int64_t n = 23, C = 2 * p.n_k_heads * p.k_dim + p.n_v_heads * p.v_dim, K = 4, sw = (K - 1) * C;
  GdnCase c{p, {{n, 1, true}}, 2, 1};
  const GdnData d(c, n, 7);
  const Matrix w = make_matrix(DType::kF32, C, K, 3, 0.5f);
  const auto xconv = random_vec(n * C, 4, -2, 2);
  const int64_t os = d.nvv;
  struct Result {
    std::vector<float> out, state, conv_out, conv_state;
  };
  // Runs rows [0, n) in calls of the given lengths, slot 1 fresh in the first.
  auto run = [&](const std::vector<int64_t>& parts) {
    Result r;
    r.out.assign(n * os, 0.0f);
    r.state.assign(2 * p.state_floats(), 9.0f);
    r.conv_out.assign(n * C, 0.0f);
    r.conv_state.assign(2 * sw, 9.0f);
    int64_t r0 = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      Batch bt({{parts[i], 1, i == 0}});
      d.run(*ops_, p, r0, parts[i], bt.b, r.state, 2, r.out, os);
      ops_->conv1d_silu(hv(xconv.data() + r0 * C, parts[i], C), w, hv(r.conv_state, 2, sw), bt.b,
                        hv(r.conv_out.data() + r0 * C, parts[i], C));
      r0 += parts[i];
    }
    return r;
  };
  const Result whole = run({n});
  std::vector<int64_t> tokens(n, 1), split = {9, n - 9}, split2 = {1, 2, n - 3};
  for (const auto& parts : {split, split2, tokens}) {
    const Result r = run(parts);
    EXPECT_EQ(r.out, whole.out);
    EXPECT_EQ(r.state, whole.state);
    EXPECT_EQ(r.conv_out, whole.conv_out);
    EXPECT_EQ(r.conv_state, whole.conv_state);
  }
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    ThreadPool::ScopedUse use(&pool);
    const Result r = run({n});
    EXPECT_EQ(r.out, whole.out) << threads;
    EXPECT_EQ(r.state, whole.state) << threads;
    EXPECT_EQ(r.conv_out, whole.conv_out) << threads;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Qwen35OpsTest, testing::ValuesIn(all_backends()), backend_name);

// ---- The contract. ----

TEST(Qwen35OpsDeathTest, BrokenContractsAbort) {
  auto ops = make_ops("cpu-f32");
  DeltaNetParams p;
  p.n_k_heads = 1;
  p.n_v_heads = 2;
  p.k_dim = p.v_dim = 4;
  const Matrix vec2 = f32_vector({0, 0}), w = f32_matrix(std::vector<float>(8 * 4), 8, 4);
  std::vector<float> x(3 * 16), out(3 * 16), state(4 * 32), st_conv(4 * 24);
  // Two sequences in one slot.
  Batch dup({{1, 2, false}, {2, 2, true}});
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 4, 24), dup.b, hv(out, 3, 8)),
               "two sequences share a state slot");
  // A slot outside the pool, rows that do not add up, and a missing host array.
  Batch far({{3, 4, false}});
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 4, 24), far.b, hv(out, 3, 8)), "in state slot 4 of a pool of 4");
  Batch short_b({{2, 0, false}});
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 4, 24), short_b.b, hv(out, 3, 8)),
               "conv1d_silu of 3 rows with cu_q running from 0 to 2");
  Batch ok({{3, 0, false}});
  StateBatch no_host = ok.b;
  no_host.host_slots = nullptr;
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 4, 24), no_host, hv(out, 3, 8)), "without host step arrays");
  StateBatch low_max = ok.b;
  low_max.max_q = 1;
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 4, 24), low_max, hv(out, 3, 8)), "more than max_q = 1");
  // Output over the input; a state of the wrong width.
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 4, 24), ok.b, hv(x, 3, 8)), "x, out and state overlap");
  EXPECT_DEATH(ops->conv1d_silu(hv(x, 3, 8), w, hv(st_conv, 3, 32), ok.b, hv(out, 3, 8)), "expected \\[n_slots, 24\\]");
  // The delta rule: out over q; value heads not a multiple of key heads; a_log of the wrong length.
  auto gdn = [&](const DeltaNetParams& pp, const View& o, const Matrix& al) {
    ops->gated_delta_net(hv(x, 3, 4, 16), hv(x.data() + 4, 3, 4, 16), hv(x.data() + 8, 3, 8, 16),
                         hv(x.data() + 1, 3, 2, 16), hv(x.data() + 2, 3, 2, 16), al, vec2, hv(state, 4, 32), ok.b,
                         pp, o);
  };
  EXPECT_DEATH(gdn(p, hv(x.data() + 8, 3, 8, 16), vec2), "out or state overlaps an input");
  DeltaNetParams bad = p;
  bad.n_k_heads = 3;
  EXPECT_DEATH(gdn(bad, hv(out, 3, 8), vec2), "value heads a multiple of key heads");
  EXPECT_DEATH(gdn(p, hv(out, 3, 8), f32_vector({0, 0, 0})), "a_log\\): a weight of shape \\[1, 3\\], expected 2");
  // The element-wise ops.
  EXPECT_DEATH(ops->layer_norm(hv(x, 3, 8), f32_vector(std::vector<float>(8)), vec2, 1e-6f, hv(out, 3, 8)),
               "layer_norm\\(b\\)");
  EXPECT_DEATH(ops->sigmoid_mul(hv(x, 3, 8), hv(out, 3, 8), hv(x, 3, 8)), "sigmoid_mul out overlaps gate");
  EXPECT_DEATH(ops->gelu_tanh(hv(x, 3, 8, 16)), "gelu_tanh\\(x\\) needs a contiguous view");
  EXPECT_DEATH(ops->add_bias(hv(x, 3, 8), vec2), "add_bias\\(b\\)");
}

// Zero rows: nothing to do and nothing read (not even the step arrays' slots).
TEST(Qwen35Ops, ZeroRowsReturn) {
  auto ops = make_ops("cpu-f32");
  DeltaNetParams p;
  p.n_k_heads = p.n_v_heads = 1;
  p.k_dim = p.v_dim = 2;
  std::vector<float> state(4, 3.0f), buf(8);
  Batch none({});
  ops->gated_delta_net(hv(nullptr, 0, 2), hv(nullptr, 0, 2), hv(nullptr, 0, 2), hv(nullptr, 0, 1),
                       hv(nullptr, 0, 1), f32_vector({0}), f32_vector({0}), hv(state, 1, 4), none.b, p,
                       hv(nullptr, 0, 2));
  ops->conv1d_silu(hv(nullptr, 0, 2), f32_matrix({1, 2, 3, 4}, 2, 2), hv(state, 2, 2), none.b, hv(nullptr, 0, 2));
  EXPECT_EQ(state, std::vector<float>(4, 3.0f));
}

// ProfiledOps forwards the six ops unchanged and counts them.
TEST(Qwen35Ops, ProfiledOpsForwardsAndCounts) {
  auto bare = make_ops("cpu-f32");
  ProfiledOps prof(make_ops("cpu-f32"));
  DeltaNetParams p;
  p.n_k_heads = 1;
  p.n_v_heads = 2;
  p.k_dim = 8;
  p.v_dim = 4;
  GdnCase c{p, {{5, 0, true}}, 1, 0};
  Batch bt(c.seqs);
  const GdnData d(c, 5, 1);
  std::vector<float> o1(5 * 8), o2(5 * 8), s1(p.state_floats()), s2(p.state_floats());
  d.run(*bare, p, 0, 5, bt.b, s1, 1, o1, 8);
  d.run(prof, p, 0, 5, bt.b, s2, 1, o2, 8);
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(s1, s2);
  const Matrix w = make_matrix(DType::kF32, 8, 4, 1), lw = make_matrix(DType::kF32, 1, 8, 2);
  std::vector<float> x = random_vec(5 * 8, 3), y(5 * 8), st(3 * 8);
  prof.conv1d_silu(hv(x, 5, 8), w, hv(st, 1, 24), bt.b, hv(y, 5, 8));
  prof.layer_norm(hv(x, 5, 8), lw, lw, 1e-6f, hv(y, 5, 8));
  prof.add_bias(hv(y, 5, 8), lw);
  prof.gelu_tanh(hv(y, 5, 8));
  prof.sigmoid_mul(hv(x, 5, 8), hv(y, 5, 8), hv(y, 5, 8));
  const auto stats = prof.stats();
  for (const char* op : {"gated_delta_net", "conv1d_silu", "layer_norm", "add_bias", "gelu_tanh", "sigmoid_mul"}) {
    bool found = false;
    for (const OpStat& s : stats)
      if (s.op == op) {
        found = true;
        EXPECT_EQ(s.calls, 1) << op;
        EXPECT_GT(s.flops + s.bytes, 0) << op;
      }
    EXPECT_TRUE(found) << op;
  }
}

}  // namespace
}  // namespace locr::kernels
