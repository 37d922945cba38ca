// The defaults of the Qwen3.5 family's ops (layer_norm, add_bias, gelu_tanh, sigmoid_mul,
// conv1d_silu, gated_delta_net) and the host recurrences behind them: straightforward scalar loops
// on host memory, f64 where it keeps them closer to exact. The ref backend runs exactly these (they
// are the oracle the fast CPU and the CUDA kernels are tested against); a device backend overrides
// them all.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"

namespace locr::kernels {

namespace {

// A weight vector (rows == 1 or cols == 1) as f32.
std::vector<float> vector_f32(const Matrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  for (int64_t i = 0; i < m.rows * m.cols; ++i) out[i] = m.at(i / m.cols, i % m.cols);
  return out;
}

void check_host(const Ops& ops, const char* op) {
  LOCR_CHECK(ops.host_memory(), "", ops.name(), ": ", op,
             " has no kernel for this backend's memory (the default runs on host memory only)");
}

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }  // torch's, beta 1, threshold 20

}  // namespace

void Ops::run_layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y) {
  check_host(*this, "layer_norm");
  const std::vector<float> wf = vector_f32(w), bf = vector_f32(b);
  const int64_t n = x.cols;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* xr = x.f32() + r * x.stride;
    float* yr = y.f32() + r * y.stride;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(n);
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<float>((xr[i] - mean) * inv * wf[i] + bf[i]);
  }
}

void Ops::run_add_bias(const View& y, const Matrix& b) {
  check_host(*this, "add_bias");
  const std::vector<float> bf = vector_f32(b);
  for (int64_t r = 0; r < y.rows; ++r) {
    float* yr = y.f32() + r * y.stride;
    for (int64_t i = 0; i < y.cols; ++i) yr[i] += bf[i];
  }
}

void Ops::run_gelu_tanh(const View& xv) {
  check_host(*this, "gelu_tanh");
  // 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)): the same function, without the cancellation of
  // 1 + tanh(u) for negative x (where the tanh form rounds to 0 long before the value does).
  const double k = std::sqrt(2.0 / M_PI);
  float* x = xv.f32();
  for (int64_t i = 0; i < xv.numel(); ++i) {
    const double v = x[i];
    x[i] = static_cast<float>(v / (1.0 + std::exp(-2.0 * k * (v + 0.044715 * v * v * v))));
  }
}

void Ops::run_sigmoid_mul(const View& gate, const View& x, const View& out) {
  check_host(*this, "sigmoid_mul");
  for (int64_t r = 0; r < gate.rows; ++r) {
    const float* g = gate.f32() + r * gate.stride;
    const float* xr = x.f32() + r * x.stride;
    float* o = out.f32() + r * out.stride;
    for (int64_t i = 0; i < gate.cols; ++i) o[i] = static_cast<float>(xr[i] / (1.0 + std::exp(-static_cast<double>(g[i]))));
  }
}

void Ops::run_conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b, const View& out) {
  check_host(*this, "conv1d_silu");
  const int64_t C = w.rows, K = w.cols;
  std::vector<float> wf(static_cast<size_t>(C * K));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = 0; j < K; ++j) wf[c * K + j] = w.at(c, j);
  for (int64_t i = 0; i < b.n_seqs; ++i) {
    const int64_t r0 = b.host_cu_q[i], n = b.host_cu_q[i + 1] - r0;
    if (n <= 0) continue;
    float* st = state.f32() + static_cast<int64_t>(b.host_slots[i]) * state.stride;
    if (b.host_fresh[i]) std::memset(st, 0, sizeof(float) * (K - 1) * C);
    conv1d_silu_host(x.f32() + r0 * x.stride, x.stride, wf.data(), C, K, st, n, out.f32() + r0 * out.stride,
                     out.stride);
  }
}

void Ops::run_gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                              const Matrix& a_log, const Matrix& dt_bias, const View& state, const StateBatch& b,
                              const DeltaNetParams& p, const View& out) {
  check_host(*this, "gated_delta_net");
  const std::vector<float> alf = vector_f32(a_log), dtf = vector_f32(dt_bias);
  for (int64_t i = 0; i < b.n_seqs; ++i) {
    const int64_t r0 = b.host_cu_q[i], n = b.host_cu_q[i + 1] - r0;
    if (n <= 0) continue;
    float* st = state.f32() + static_cast<int64_t>(b.host_slots[i]) * state.stride;
    if (b.host_fresh[i]) std::memset(st, 0, sizeof(float) * p.state_floats());
    gated_delta_net_host(q.f32() + r0 * q.stride, q.stride, k.f32() + r0 * k.stride, k.stride,
                         v.f32() + r0 * v.stride, v.stride, a.f32() + r0 * a.stride, a.stride,
                         beta_in.f32() + r0 * beta_in.stride, beta_in.stride, alf.data(), dtf.data(), st, p, n,
                         out.f32() + r0 * out.stride, out.stride);
  }
}

void conv1d_silu_host(const float* x, int64_t x_stride, const float* w, int64_t channels, int64_t kernel,
                      float* state, int64_t n, float* out, int64_t out_stride) {
  const int64_t C = channels, K = kernel, S = K - 1;
  // Input u of the sequence's window: the state's K-1 inputs, then the rows of x.
  auto xs = [&](int64_t u, int64_t c) -> double { return u < S ? state[u * C + c] : x[(u - S) * x_stride + c]; };
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < K; ++j) acc += static_cast<double>(w[c * K + j]) * xs(t + j, c);
      out[t * out_stride + c] = static_cast<float>(acc / (1.0 + std::exp(-acc)));
    }
  // The new state: inputs n .. n + K-2 of the window (ascending: a state entry is read before it is
  // overwritten, as u + n >= u).
  for (int64_t u = 0; u < S; ++u)
    for (int64_t c = 0; c < C; ++c) state[u * C + c] = static_cast<float>(xs(u + n, c));
}

void gated_delta_net_host(const float* q, int64_t q_stride, const float* k, int64_t k_stride, const float* v,
                          int64_t v_stride, const float* a, int64_t a_stride, const float* beta_in,
                          int64_t beta_stride, const float* a_log, const float* dt_bias, float* state,
                          const DeltaNetParams& p, int64_t n, float* out, int64_t out_stride) {
  const int64_t KD = p.k_dim, VD = p.v_dim;
  std::vector<double> qn(KD), kn(KD), d(VD);
  const double q_scale = 1.0 / std::sqrt(static_cast<double>(KD));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < p.n_v_heads; ++h) {
      const int64_t kh = p.key_head(h);
      const float* qh = q + t * q_stride + kh * KD;
      const float* kh_ = k + t * k_stride + kh * KD;
      double sq = 0, sk = 0;
      for (int64_t i = 0; i < KD; ++i) {
        sq += static_cast<double>(qh[i]) * qh[i];
        sk += static_cast<double>(kh_[i]) * kh_[i];
      }
      const double iq = 1.0 / std::sqrt(sq + p.l2_eps) * q_scale, ik = 1.0 / std::sqrt(sk + p.l2_eps);
      for (int64_t i = 0; i < KD; ++i) {
        qn[i] = qh[i] * iq;
        kn[i] = kh_[i] * ik;
      }
      const double beta = 1.0 / (1.0 + std::exp(-static_cast<double>(beta_in[t * beta_stride + h])));
      const double g = -std::exp(static_cast<double>(a_log[h])) *
                       softplus(static_cast<double>(a[t * a_stride + h]) + static_cast<double>(dt_bias[h]));
      const double decay = std::exp(g);
      float* S = state + h * KD * VD;  // [KD, VD]
      const float* vh = v + t * v_stride + h * VD;
      // S = S * decay; d = (v - S^T k') * beta
      for (int64_t j = 0; j < VD; ++j) d[j] = 0;
      for (int64_t i = 0; i < KD; ++i)
        for (int64_t j = 0; j < VD; ++j) {
          S[i * VD + j] = static_cast<float>(S[i * VD + j] * decay);
          d[j] += static_cast<double>(S[i * VD + j]) * kn[i];
        }
      for (int64_t j = 0; j < VD; ++j) d[j] = (vh[j] - d[j]) * beta;
      // S = S + k' d^T; out = S^T q'
      std::vector<double> o(VD, 0.0);
      for (int64_t i = 0; i < KD; ++i)
        for (int64_t j = 0; j < VD; ++j) {
          S[i * VD + j] = static_cast<float>(S[i * VD + j] + kn[i] * d[j]);
          o[j] += static_cast<double>(S[i * VD + j]) * qn[i];
        }
      float* oh = out + t * out_stride + h * VD;
      for (int64_t j = 0; j < VD; ++j) oh[j] = static_cast<float>(o[j]);
    }
}

}  // namespace locr::kernels
