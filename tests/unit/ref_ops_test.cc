// The scalar reference backend against hand-computed values (it is the oracle for every other
// backend, so it is checked against arithmetic done here, not against another implementation).
#include <gtest/gtest.h>

#include <cmath>

#include "core/fp8.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

using testing_util::hv;
using testing_util::hv_kv;

Matrix f32_matrix(std::vector<float>& v, int64_t rows, int64_t cols) {
  Matrix m;
  m.dtype = DType::kF32;
  m.rows = rows;
  m.cols = cols;
  m.data = v.data();
  return m;
}

TEST(RefOps, MatmulAllWeightDtypes) {
  auto ops = make_ops("ref");
  std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<float> w = {1, 0, -1, 0.5f, 0.25f, 2};  // [2, 3]
  std::vector<float> y(4);
  ops->matmul(hv(x, 2, 3), f32_matrix(w, 2, 3), hv(y, 2, 2));
  EXPECT_FLOAT_EQ(y[0], 1 - 3);
  EXPECT_FLOAT_EQ(y[1], 0.5f + 0.5f + 6);
  EXPECT_FLOAT_EQ(y[2], 4 - 6);
  EXPECT_FLOAT_EQ(y[3], 2.0f + 1.25f + 12);
  std::vector<uint16_t> wb(6), wh(6);
  for (int i = 0; i < 6; ++i) wb[i] = f32_to_bf16(w[i]), wh[i] = f32_to_f16(w[i]);
  for (auto [dt, ptr] : {std::pair{DType::kBF16, static_cast<const void*>(wb.data())}, {DType::kF16, wh.data()}}) {
    Matrix m;
    m.dtype = dt, m.rows = 2, m.cols = 3, m.data = ptr;
    std::vector<float> y2(4);
    ops->matmul(hv(x, 2, 3), m, hv(y2, 2, 2));
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y2[i], y[i]);
  }
}

TEST(RefOps, RmsNormRopeActivations) {
  auto ops = make_ops("ref");
  std::vector<float> x = {3, 4}, w = {2, 0.5f}, y(2);
  ops->rms_norm(hv(x, 1, 2), f32_matrix(w, 1, 2), 0.0f, hv(y, 1, 2));
  const float inv = 1.0f / std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(y[0], 3 * inv * 2);
  EXPECT_FLOAT_EQ(y[1], 4 * inv * 0.5f);
  // RoPE pairs (d, d + half): [1, 0 | 0, 1] rotated by 90 degrees for d = 0 and 0 for d = 1.
  std::vector<float> r = {1, 0, 0, 1}, c = {0, 1}, s = {1, 0};
  ops->rope(hv(r, 1, 4), hv(c, 1, 2), hv(s, 1, 2));
  EXPECT_NEAR(r[0], 0, 1e-7);   // x0*cos - x2*sin = 1*0 - 0*1
  EXPECT_NEAR(r[2], 1, 1e-7);   // x2*cos + x0*sin = 0 + 1
  EXPECT_NEAR(r[1], 0, 1e-7);
  EXPECT_NEAR(r[3], 1, 1e-7);
  std::vector<float> g = {-1.0f, 0.0f, 1.0f};
  ops->gelu(hv(g, 1, 3));
  EXPECT_NEAR(g[0], -0.15865525393145707, 1e-7);  // 0.5*x*(1+erf(x/sqrt2))
  EXPECT_NEAR(g[2], 0.8413447460685429, 1e-7);
  std::vector<float> gate = {1.0f}, up = {2.0f}, o(1);
  ops->silu_mul(hv(gate, 1, 1), hv(up, 1, 1), hv(o, 1, 1));
  EXPECT_NEAR(o[0], 2.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

TEST(RefOps, CausalGqaAttention) {
  auto ops = make_ops("ref");
  // 2 query heads sharing 1 kv head, head_dim 1, 2 positions.
  std::vector<float> q = {1, 2, 1, 2};  // [2 rows, 2 heads]
  std::vector<float> k = {0, 1};        // [2 rows, 1 kv head]
  std::vector<float> v = {10, 20};
  std::vector<float> out(4);
  AttentionParams p;
  p.n_kv = 2;
  p.n_heads = 2;
  p.n_kv_heads = 1;
  p.head_dim = 1;
  p.scale = 1.0f;
  p.causal = true;
  ops->attention(hv(q, 2, 2), hv(k, 2, 1), hv(v, 2, 1), hv(out, 2, 2), p);
  EXPECT_FLOAT_EQ(out[0], 10);  // row 0 sees only key 0
  EXPECT_FLOAT_EQ(out[1], 10);
  const double w1 = std::exp(1.0) / (1 + std::exp(1.0)), w2 = std::exp(2.0) / (1 + std::exp(2.0));
  EXPECT_NEAR(out[2], 10 * (1 - w1) + 20 * w1, 1e-5);
  EXPECT_NEAR(out[3], 10 * (1 - w2) + 20 * w2, 1e-5);
  p.causal = false;
  ops->attention(hv(q, 2, 2), hv(k, 2, 1), hv(v, 2, 1), hv(out, 2, 2), p);
  EXPECT_NEAR(out[0], 10 * (1 - w1) + 20 * w1, 1e-5);
}

TEST(RefOps, PagedAttentionMatchesContiguous) {
  auto ops = make_ops("ref");
  const int64_t n = 7, hd = 2, bs = 3;  // 7 keys in 3 blocks of 3 (last one partial)
  std::vector<float> q(hd), k(n * hd), v(n * hd);
  for (int64_t i = 0; i < n * hd; ++i) k[i] = std::sin(0.7 * i), v[i] = std::cos(0.3 * i);
  q[0] = 0.5f, q[1] = -1.0f;
  // Scatter rows into a pool of 4 blocks using block table {2, 0, 3}.
  const std::vector<int32_t> table = {2, 0, 3};
  std::vector<float> kp(4 * bs * hd, NAN), vp(4 * bs * hd, NAN);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < hd; ++d) {
      const int64_t row = table[j / bs] * bs + j % bs;
      kp[row * hd + d] = k[j * hd + d];
      vp[row * hd + d] = v[j * hd + d];
    }
  AttentionParams p;
  p.n_kv = n;
  p.n_heads = p.n_kv_heads = 1;
  p.head_dim = hd;
  p.scale = 0.7f;
  p.causal = true;
  p.q_offset = n - 1;
  std::vector<float> a(hd), b(hd);
  ops->attention(hv(q, 1, hd), hv(k, n, hd), hv(v, n, hd), hv(a, 1, hd), p);
  p.block_table = table.data();
  p.block_size = bs;
  ops->attention(hv(q, 1, hd), hv(kp, 4 * bs, hd), hv(vp, 4 * bs, hd), hv(b, 1, hd), p);
  for (int64_t d = 0; d < hd; ++d) EXPECT_FLOAT_EQ(a[d], b[d]);
}

TEST(RefOps, Bf16KvReadsTheSameValuesAsF32) {
  // A BF16 cache holds bf16-rounded keys/values; reading them must equal an F32 cache holding the
  // same rounded values, bit for bit (the widening is exact).
  auto ops = make_ops("ref");
  const int64_t n = 9, hd = 4;
  // 2 query rows of 2 heads; 1 kv head.
  std::vector<float> q(2 * 2 * hd), k(n * hd), v(n * hd);
  std::vector<uint16_t> k16(n * hd), v16(n * hd);
  for (int64_t i = 0; i < 2 * 2 * hd; ++i) q[i] = std::sin(1.3 * i);
  for (int64_t i = 0; i < n * hd; ++i) {
    k16[i] = f32_to_bf16(static_cast<float>(std::sin(0.7 * i) * 3.1));
    v16[i] = f32_to_bf16(static_cast<float>(std::cos(0.3 * i) * 1.7));
    k[i] = bf16_to_f32(k16[i]);
    v[i] = bf16_to_f32(v16[i]);
  }
  AttentionParams p;
  p.n_kv = n;
  p.n_heads = 2;
  p.n_kv_heads = 1;
  p.head_dim = hd;
  p.scale = 0.5f;
  p.causal = true;
  p.q_offset = n - 2;
  std::vector<float> a(2 * 2 * hd), b(2 * 2 * hd);
  ops->attention(hv(q, 2, 2 * hd), hv(k, n, hd), hv(v, n, hd), hv(a, 2, 2 * hd), p);
  ops->attention(hv(q, 2, 2 * hd), hv_kv(k16.data(), DType::kBF16, n, hd), hv_kv(v16.data(), DType::kBF16, n, hd),
                 hv(b, 2, 2 * hd), p);
  for (int64_t i = 0; i < 2 * 2 * hd; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(RefOps, AttentionFp8KvEqualsF32KvOfTheDecodedValues) {
  // An FP8 cache (codes and a scale per row and kv head) must read as an F32 cache holding
  // code value * scale; with power-of-two scales that product is exact, so bit for bit. Two kv
  // heads of different scales catch a wrong scale index.
  auto ops = make_ops("ref");
  const int64_t n = 9, hd = 4, nkv = 2, w = nkv * hd;
  std::vector<float> q(2 * 4 * hd), k(n * w), v(n * w), ks(n * nkv), vs(n * nkv);
  std::vector<uint8_t> k8(n * w), v8(n * w);
  for (int64_t i = 0; i < 2 * 4 * hd; ++i) q[i] = static_cast<float>(std::sin(1.3 * i));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t h = 0; h < nkv; ++h) {
      ks[j * nkv + h] = std::ldexp(1.0f, static_cast<int>(-4 - j - 3 * h));
      vs[j * nkv + h] = std::ldexp(1.0f, static_cast<int>(-6 + h - j % 3));
      for (int64_t d = 0; d < hd; ++d) {
        const int64_t i = j * w + h * hd + d;
        k8[i] = f32_to_fp8_e4m3(static_cast<float>(std::sin(0.7 * i) * 300));
        v8[i] = f32_to_fp8_e4m3(static_cast<float>(std::cos(0.3 * i) * 200));
        k[i] = fp8_e4m3_to_f32(k8[i]) * ks[j * nkv + h];
        v[i] = fp8_e4m3_to_f32(v8[i]) * vs[j * nkv + h];
      }
    }
  AttentionParams p;
  p.n_kv = n;
  p.n_heads = 4;
  p.n_kv_heads = nkv;
  p.head_dim = hd;
  p.scale = 0.5f;
  p.causal = true;
  p.q_offset = n - 2;
  std::vector<float> a(2 * 4 * hd), b(2 * 4 * hd);
  ops->attention(hv(q, 2, 4 * hd), hv(k, n, w), hv(v, n, w), hv(a, 2, 4 * hd), p);
  p.k_scale = ks.data();
  p.v_scale = vs.data();
  ops->attention(hv(q, 2, 4 * hd), hv_kv(k8.data(), DType::kF8E4M3, n, w), hv_kv(v8.data(), DType::kF8E4M3, n, w),
                 hv(b, 2, 4 * hd), p);
  for (int64_t i = 0; i < 2 * 4 * hd; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(RefOps, UnknownBackend) { EXPECT_THROW(make_ops("tpu"), Error); }

}  // namespace
}  // namespace locr::kernels
