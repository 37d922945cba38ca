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

  void matmul(const float* x, int64_t M, const Matrix& w, float* y) override {
    const int64_t N = w.rows, K = w.cols;
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
        const float* xr = x + m * K;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(xr[k]) * wrow[k];
        y[idx] = static_cast<float>(acc);
      }
    });
  }

  void rms_norm(const float* x, const Matrix& w, float eps, int64_t rows, int64_t dim, float* y) override {
    LOCR_CHECK(w.rows * w.cols == dim, "rms_norm weight size ", w.rows * w.cols, " != ", dim);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * dim;
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / dim + eps));
      float* yr = y + r * dim;
      for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * inv) * w.at(0, i);
    }
  }

  void rope(float* x, int64_t rows, int64_t n_heads, int64_t head_dim, int64_t stride, const float* cos,
            const float* sin) override {
    const int64_t half = head_dim / 2;
    for (int64_t r = 0; r < rows; ++r) {
      const float* c = cos + r * half;
      const float* s = sin + r * half;
      for (int64_t h = 0; h < n_heads; ++h) {
        float* xh = x + r * stride + h * head_dim;
        for (int64_t d = 0; d < half; ++d) {
          const float a = xh[d], b = xh[d + half];
          xh[d] = a * c[d] - b * s[d];
          xh[d + half] = b * c[d] + a * s[d];
        }
      }
    }
  }

  void silu_mul(const float* gate, const float* up, float* out, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) {
      const float g = gate[i];
      out[i] = (g / (1.0f + std::exp(-g))) * up[i];
    }
  }

  void gelu(float* x, int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))));
  }

  void add(float* y, const float* x, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
  }

  void attention(const float* q, const void* k, const void* v, float* out, const AttentionParams& p) override {
    LOCR_CHECK(p.n_heads % p.n_kv_heads == 0);
    LOCR_CHECK(p.kv_dtype == DType::kF32 || p.kv_dtype == DType::kBF16 || p.kv_dtype == DType::kF8E4M3,
               "attention kv dtype ", dtype_name(p.kv_dtype));
    const bool kv_bf16 = p.kv_dtype == DType::kBF16, kv_fp8 = p.kv_dtype == DType::kF8E4M3;
    LOCR_CHECK(!kv_fp8 || (p.k_scale && p.v_scale), "FP8 KV without scales");
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

  void embed(const Matrix& table, const int32_t* ids, int64_t n, float* out) override {
    for (int64_t i = 0; i < n; ++i) {
      LOCR_CHECK(ids[i] >= 0 && ids[i] < table.rows, "token id ", ids[i], " outside the embedding table");
      for (int64_t c = 0; c < table.cols; ++c) out[i * table.cols + c] = table.at(ids[i], c);
    }
  }
};

}  // namespace

std::unique_ptr<Ops> make_ref_ops() { return std::make_unique<RefOps>(); }

}  // namespace locr::kernels
