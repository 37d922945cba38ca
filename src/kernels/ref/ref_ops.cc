#include "kernels/ref/ref_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/fp8.h"
#include "core/thread_pool.h"

namespace locr::kernels {

namespace {

class RefOps final : public Ops {
 public:
  const char* name() const override { return "ref"; }

  // The backend's kernels (Ops checked each call's contract).
  void run_matmul(const View& xv, const Matrix& w, const View& yv) override {
    const int64_t M = xv.rows, N = w.rows, K = w.cols;
    // Parallel over output elements; each is an independent f64-accumulated dot product.
    ThreadPool::global().parallel_for(M * N, 64, [&](int64_t b, int64_t e, int) {
      std::vector<float> wrow;
      int64_t cached = -1;
      for (int64_t idx = b; idx < e; ++idx) {
        const int64_t m = idx / N, n = idx % N;
        if (cached != n) {
          wrow.resize(K);
          for (int64_t k = 0; k < K; ++k) wrow[k] = w.at(n, k);
          cached = n;
        }
        double acc = 0;
        const float* xr = xv.f32() + m * xv.stride;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(xr[k]) * wrow[k];
        yv.f32()[m * yv.stride + n] = static_cast<float>(acc);
      }
    });
  }

  void run_rms_norm(const View& x, const Matrix& w, float eps, const View& y) override {
    const int64_t dim = w.rows * w.cols, groups = x.cols / dim;
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        const float* xr = x.f32() + r * x.stride + g * dim;
        double ss = 0;
        for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
        const float inv = static_cast<float>(1.0 / std::sqrt(ss / dim + eps));
        float* yr = y.f32() + r * y.stride + g * dim;
        for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * inv) * w.at(0, i);
      }
  }

  void run_rope(const View& x, const View& cos, const View& sin) override {
    const int64_t half = cos.cols, head_dim = 2 * half, n_heads = x.cols / head_dim;
    for (int64_t r = 0; r < x.rows; ++r) {
      const float* c = cos.f32() + r * half;
      const float* s = sin.f32() + r * half;
      for (int64_t h = 0; h < n_heads; ++h) {
        float* xh = x.f32() + r * x.stride + h * head_dim;
        for (int64_t d = 0; d < half; ++d) {
          const float a = xh[d], b = xh[d + half];
          xh[d] = a * c[d] - b * s[d];
          xh[d + half] = b * c[d] + a * s[d];
        }
      }
    }
  }

  void run_silu_mul(const View& gate, const View& up, const View& out) override {
    for (int64_t r = 0; r < gate.rows; ++r)
      for (int64_t i = 0; i < gate.cols; ++i) {
        const float g = gate.f32()[r * gate.stride + i];
        out.f32()[r * out.stride + i] = (g / (1.0f + std::exp(-g))) * up.f32()[r * up.stride + i];
      }
  }

  void run_gelu(const View& xv) override {
    float* x = xv.f32();
    for (int64_t i = 0; i < xv.numel(); ++i)
      x[i] = static_cast<float>(0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))));
  }

  void run_add(const View& y, const View& x) override {
    for (int64_t i = 0; i < y.numel(); ++i) y.f32()[i] += x.f32()[i];
  }

  void run_attention(const View& qv, const View& kv_k, const View& kv_v, const View& outv,
                     const AttentionParams& p) override {
    const float* q = qv.f32();
    const void* k = kv_k.data;
    const void* v = kv_v.data;
    float* out = outv.f32();
    const bool kv_bf16 = p.kv_dtype == DType::kBF16, kv_fp8 = p.kv_dtype == DType::kF8E4M3;
    // Element e of k / v row `row` as a double (an FP8 one times its head's scale).
    auto kv_at = [&](const void* base, const float* scale, int64_t row, int64_t e) -> double {
      const int64_t i = row * p.kv_stride + e;
      if (kv_fp8)
        return static_cast<double>(fp8_e4m3_to_f32(static_cast<const uint8_t*>(base)[i])) *
               static_cast<double>(scale[row * p.n_kv_heads + e / p.head_dim]);
      return kv_bf16 ? static_cast<double>(bf16_to_f32(static_cast<const uint16_t*>(base)[i]))
                     : static_cast<double>(static_cast<const float*>(base)[i]);
    };
    const int64_t group = p.n_heads / p.n_kv_heads;
    ThreadPool::global().parallel_for(p.n_q * p.n_heads, 1, [&](int64_t b, int64_t e, int) {
      std::vector<double> scores(p.n_kv);
      std::vector<double> acc(p.head_dim);
      for (int64_t idx = b; idx < e; ++idx) {
        const int64_t i = idx / p.n_heads, h = idx % p.n_heads, kh = h / group;
        const float* qi = q + i * p.q_stride + h * p.head_dim;
        const int64_t n_visible = p.causal ? std::min(p.n_kv, p.q_offset + i + 1) : p.n_kv;
        double mx = -INFINITY;
        for (int64_t j = 0; j < n_visible; ++j) {
          const int64_t row = p.kv_row(j);
          double s = 0;
          for (int64_t d = 0; d < p.head_dim; ++d) s += static_cast<double>(qi[d]) * kv_at(k, p.k_scale, row, kh * p.head_dim + d);
          scores[j] = s * p.scale;
          mx = std::max(mx, scores[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n_visible; ++j) {
          scores[j] = std::exp(scores[j] - mx);
          sum += scores[j];
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n_visible; ++j) {
          const int64_t row = p.kv_row(j);
          const double wgt = scores[j] / sum;
          for (int64_t d = 0; d < p.head_dim; ++d) acc[d] += wgt * kv_at(v, p.v_scale, row, kh * p.head_dim + d);
        }
        float* o = out + i * p.out_stride + h * p.head_dim;
        for (int64_t d = 0; d < p.head_dim; ++d) o[d] = static_cast<float>(acc[d]);
      }
    });
  }

  void run_embed(const Matrix& table, const View& idv, const View& outv) override {
    const int32_t* ids = idv.as<const int32_t>();
    float* out = outv.f32();
    for (int64_t i = 0; i < idv.numel(); ++i) {
      LOCR_CHECK(ids[i] >= 0 && ids[i] < table.rows, "token id ", ids[i], " outside the embedding table");
      for (int64_t c = 0; c < table.cols; ++c) out[i * outv.stride + c] = table.at(ids[i], c);
    }
  }
};

}  // namespace

std::unique_ptr<Ops> make_ref_ops() { return std::make_unique<RefOps>(); }

}  // namespace locr::kernels
