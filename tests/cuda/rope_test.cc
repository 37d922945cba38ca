// RoPE kernels against the scalar oracle's rope on BF16-rounded inputs. rope_table gets the very
// same tables; rope_1d builds its angles on the device, so the host tables here are computed as
// model/rope.cc does (inv_freq = 1 / powf(theta, 2d/hd), angle = pos * inv_freq in F32) and the
// tolerance allows one F32 ulp of the angle (its error times the pair's magnitude) besides the
// BF16 output rounding.
#include <cmath>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

struct Case {
  int64_t rows, heads, hd, pad;
};

void check(const std::vector<uint16_t>& out, const std::vector<float>& want, const std::vector<float>& in,
           const Case& c, int64_t stride, const std::vector<float>& angle_err) {
  const int64_t half = c.hd / 2;
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t d = 0; d < c.hd; ++d) {
        const int64_t i = r * stride + h * c.hd + d;
        const int64_t dp = d % half;
        const float mag = std::fabs(in[r * stride + h * c.hd + dp]) + std::fabs(in[r * stride + h * c.hd + dp + half]);
        const float tol = std::ldexp(std::fabs(want[i]), -8) + 2e-6f * mag + mag * angle_err[r * half + dp];
        ASSERT_LE(std::fabs(host_f32(out[i]) - want[i]), tol) << "row " << r << " head " << h << " d " << d;
      }
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t i = c.heads * c.hd; i < stride; ++i) ASSERT_EQ(host_f32(out[r * stride + i]), in[r * stride + i]);
}

const Case kCases[] = {{1, 1, 64, 0}, {33, 3, 128, 5}, {129, 16, 64, 0}, {31, 8, 128, 128}};

TEST(CudaRope, TableMatchesRef) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (const Case& c : kCases) {
    const int64_t stride = c.heads * c.hd + c.pad, half = c.hd / 2;
    std::vector<uint16_t> xb;
    const std::vector<float> x = random_bf16(c.rows * stride, -2, 2, 61, &xb);
    const std::vector<float> ang = random_f32(c.rows * half, -100, 100, 62);
    std::vector<float> cs(ang.size()), sn(ang.size());
    for (size_t i = 0; i < ang.size(); ++i) cs[i] = std::cos(ang[i]), sn[i] = std::sin(ang[i]);
    std::vector<float> want = x;
    ref->rope(ref->f32(want.data(), c.rows, c.heads * c.hd, stride), ref->f32(cs.data(), c.rows, half),
              ref->f32(sn.data(), c.rows, half));
    Dev<uint16_t> dx(xb);
    Dev<float> dc(cs), ds(sn);
    rope_table(dx.get(), c.rows, c.heads, c.hd, stride, dc.get(), ds.get(), nullptr);
    check(dx.host(), want, x, c, stride, std::vector<float>(ang.size(), 0.0f));
  }
}

TEST(CudaRope, OneDimensionalMatchesHostTables) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (float theta : {1e6f, 1e4f})
    for (const Case& c : kCases) {
      const int64_t stride = c.heads * c.hd + c.pad, half = c.hd / 2;
      std::vector<uint16_t> xb;
      const std::vector<float> x = random_bf16(c.rows * stride, -2, 2, 71, &xb);
      std::vector<int32_t> pos(c.rows);
      for (int64_t r = 0; r < c.rows; ++r) pos[r] = static_cast<int32_t>((r * 7919) % 16384);  // not sorted
      std::vector<float> cs(c.rows * half), sn(c.rows * half), err(c.rows * half);
      for (int64_t d = 0; d < half; ++d) {
        const float e = static_cast<float>(2 * d) / static_cast<float>(c.hd);
        const float inv = 1.0f / std::pow(theta, e);
        for (int64_t r = 0; r < c.rows; ++r) {
          const float a = static_cast<float>(pos[r]) * inv;
          cs[r * half + d] = std::cos(a);
          sn[r * half + d] = std::sin(a);
          err[r * half + d] = 2.0f * std::ldexp(std::fabs(a), -23);  // an ulp of inv_freq and of the product
        }
      }
      std::vector<float> want = x;
      ref->rope(ref->f32(want.data(), c.rows, c.heads * c.hd, stride), ref->f32(cs.data(), c.rows, half),
              ref->f32(sn.data(), c.rows, half));
      Dev<uint16_t> dx(xb);
      Dev<int32_t> dp(pos);
      rope_1d(dx.get(), c.rows, c.heads, c.hd, stride, dp.get(), theta, nullptr);
      check(dx.host(), want, x, c, stride, err);
    }
}

}  // namespace
}  // namespace locr::kernels::cuda::test
