// RMSNorm kernels against the scalar oracle (f64 statistics) on BF16-rounded weights: allowed
// difference = F32 sum of squares (1e-5 relative) plus the BF16 rounding of the output.
#include <cmath>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

Matrix f32_vector(const std::vector<float>& v) {
  Matrix m;
  m.dtype = DType::kF32;
  m.rows = 1;
  m.cols = static_cast<int64_t>(v.size());
  m.data = v.data();
  return m;
}

void expect_norm_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = std::ldexp(std::fabs(want[i]), -8) + 1e-5f * std::fabs(want[i]) + 1e-7f;
    ASSERT_LE(std::fabs(got[i] - want[i]), tol) << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(CudaNorm, RmsNormStridedMatchesRef) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (auto [rows, dim] : {std::pair<int64_t, int64_t>{1, 1}, {31, 33}, {129, 127}, {33, 1024}, {2, 4099}}) {
    const int64_t xs = dim + 3, ys = dim + 5;
    const std::vector<float> x = random_f32(rows * xs, -3, 3, 31);
    std::vector<uint16_t> wb;
    const std::vector<float> w = random_bf16(dim, 0.5f, 1.5f, 32, &wb);
    std::vector<float> xd(rows * dim), want(rows * dim);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < dim; ++c) xd[r * dim + c] = x[r * xs + c];
    ref->rms_norm(ref->f32(xd.data(), rows, dim), f32_vector(w), 1e-6f, ref->f32(want.data(), rows, dim));
    Dev<float> dx(x);
    Dev<uint16_t> dw(wb), dy(rows * ys);
    rms_norm(dx.get(), xs, dw.get(), 1e-6f, rows, dim, dy.get(), ys, nullptr);
    const std::vector<float> y = to_f32(dy.host());
    std::vector<float> got(rows * dim);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < dim; ++c) got[r * dim + c] = y[r * ys + c];
    expect_norm_close(got, want, "rms_norm");
    EXPECT_EQ(dx.host(), x);  // x is read only
  }
}

TEST(CudaNorm, AddRmsNormUpdatesResidual) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (auto [rows, dim] : {std::pair<int64_t, int64_t>{1, 31}, {33, 129}, {127, 1024}}) {
    for (bool with_delta : {true, false}) {
      const int64_t ds = dim + 1;  // odd delta stride
      const std::vector<float> x = random_f32(rows * dim, -3, 3, 41);
      std::vector<uint16_t> db, wb;
      const std::vector<float> delta = random_bf16(rows * ds, -1, 1, 42, &db);
      const std::vector<float> w = random_bf16(dim, 0.5f, 1.5f, 43, &wb);
      std::vector<float> x_new = x, want(rows * dim);
      if (with_delta)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < dim; ++c) x_new[r * dim + c] += delta[r * ds + c];
      ref->rms_norm(ref->f32(x_new.data(), rows, dim), f32_vector(w), 1e-5f, ref->f32(want.data(), rows, dim));
      Dev<float> dx(x);
      Dev<uint16_t> dd(db), dw(wb), dy(rows * dim);
      add_rms_norm(dx.get(), with_delta ? dd.get() : nullptr, ds, dw.get(), 1e-5f, rows, dim, dy.get(), nullptr);
      EXPECT_EQ(dx.host(), x_new);  // exact F32 adds
      expect_norm_close(to_f32(dy.host()), want, "add_rms_norm");
    }
  }
}

TEST(CudaNorm, HeadRmsNormInPlace) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  struct Case { int64_t rows, heads, hd, pad; };
  for (const Case& c : {Case{1, 1, 64, 0}, Case{33, 3, 128, 7}, Case{129, 16, 128, 0}, Case{31, 5, 64, 64}}) {
    const int64_t stride = c.heads * c.hd + c.pad;
    std::vector<uint16_t> xb, wb;
    const std::vector<float> x = random_bf16(c.rows * stride, -4, 4, 51, &xb);
    const std::vector<float> w = random_bf16(c.hd, 0.5f, 1.5f, 52, &wb);
    std::vector<float> heads(c.rows * c.heads * c.hd), want(heads.size());
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t i = 0; i < c.heads * c.hd; ++i) heads[r * c.heads * c.hd + i] = x[r * stride + i];
    ref->rms_norm(ref->f32(heads.data(), c.rows * c.heads, c.hd), f32_vector(w), 1e-6f,
                  ref->f32(want.data(), c.rows * c.heads, c.hd));
    Dev<uint16_t> dx(xb), dw(wb);
    head_rms_norm(dx.get(), c.rows, c.heads, c.hd, stride, dw.get(), 1e-6f, nullptr);
    const std::vector<uint16_t> out = dx.host();
    std::vector<float> got(heads.size());
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t i = 0; i < c.heads * c.hd; ++i) got[r * c.heads * c.hd + i] = host_f32(out[r * stride + i]);
      for (int64_t i = c.heads * c.hd; i < stride; ++i) ASSERT_EQ(out[r * stride + i], xb[r * stride + i]);
    }
    expect_norm_close(got, want, "head_rms_norm");
  }
}

}  // namespace
}  // namespace locr::kernels::cuda::test
