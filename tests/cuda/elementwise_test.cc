// Element-wise kernels against the scalar oracle (kernels/ref) on BF16-rounded inputs: the only
// differences allowed are F32 evaluation order and the final BF16 rounding of the output.
#include <cmath>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

// |got - want| within half a bf16 ulp of want (the output rounding) plus a small F32 slack.
void expect_bf16_close(float got, float want, float rel_slack, const char* what, int64_t i) {
  const float tol = std::ldexp(std::fabs(want), -8) + rel_slack * std::fabs(want) + 1e-30f;
  ASSERT_LE(std::fabs(got - want), tol) << what << " at " << i << ": got " << got << " want " << want;
}

TEST(CudaElementwise, ConversionsRoundToNearestEven) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  std::vector<float> x = random_f32(1000, -1e3f, 1e3f, 1);
  x.push_back(0.0f);
  x.push_back(-0.0f);
  x.push_back(INFINITY);
  x.push_back(-INFINITY);
  x.push_back(NAN);
  x.push_back(1.00390625f);  // exactly half-way between two bf16 values: rounds to even (1.0)
  x.push_back(1.01171875f);  // half-way, rounds up to even
  x.push_back(3e-39f);       // subnormal
  Dev<float> dx(x);
  Dev<uint16_t> dy(static_cast<int64_t>(x.size()));
  f32_to_bf16(dx.get(), dy.get(), dx.n, nullptr);
  const std::vector<uint16_t> y = dy.host();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], host_bf16(x[i])) << i;
  Dev<float> back(dx.n);
  bf16_to_f32(dy.get(), back.get(), dy.n, nullptr);
  const std::vector<float> b = back.host();
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = host_f32(y[i]);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(b[i]));
    else EXPECT_EQ(b[i], want) << i;
  }
}

TEST(CudaElementwise, SiluMulMatchesRef) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (auto [rows, inter] : {std::pair<int64_t, int64_t>{1, 1}, {31, 33}, {129, 127}, {3, 3072}}) {
    std::vector<uint16_t> bits;
    const std::vector<float> gu = random_bf16(rows * 2 * inter, -8, 8, 7, &bits);
    std::vector<float> gate(rows * inter), up(rows * inter), want(rows * inter);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < inter; ++i) {
        gate[r * inter + i] = gu[r * 2 * inter + i];
        up[r * inter + i] = gu[r * 2 * inter + inter + i];
      }
    ref->silu_mul(ref->f32(gate.data(), rows, inter), ref->f32(up.data(), rows, inter), ref->f32(want.data(), rows, inter));
    Dev<uint16_t> d(bits);
    Dev<uint16_t> out(rows * inter);
    silu_mul(d.get(), rows, inter, out.get(), nullptr);
    const std::vector<float> got = to_f32(out.host());
    for (int64_t i = 0; i < rows * inter; ++i) expect_bf16_close(got[i], want[i], 1e-6f, "silu_mul", i);
  }
}

TEST(CudaElementwise, GeluMatchesRef) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (int64_t n : {1, 31, 33, 127, 129, 100003}) {
    std::vector<uint16_t> bits;
    std::vector<float> want = random_bf16(n, -10, 10, 11, &bits);
    ref->gelu(ref->f32(want.data(), 1, n));
    Dev<uint16_t> d(bits);
    gelu(d.get(), n, nullptr);
    const std::vector<float> got = to_f32(d.host());
    // erfcf is within a few ulp: 4e-6 relative. The f64 oracle computes 1 + erf(x/sqrt2) and so
    // loses everything below about x = -8 (it returns 0 there); 1e-12 absolute covers that tail,
    // as in the CPU tests (docs/numerics.md).
    for (int64_t i = 0; i < n; ++i) {
      const float tol = std::ldexp(std::fabs(want[i]), -8) + 4e-6f * std::fabs(want[i]) + 1e-12f;
      ASSERT_LE(std::fabs(got[i] - want[i]), tol) << "gelu at " << i << ": got " << got[i] << " want " << want[i];
    }
  }
}

TEST(CudaElementwise, AddF32Bf16IsExactF32Add) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  for (int64_t n : {1, 33, 129, 65537}) {
    std::vector<uint16_t> bits;
    const std::vector<float> x = random_bf16(n, -4, 4, 3, &bits);
    std::vector<float> y = random_f32(n, -100, 100, 5);
    Dev<float> dy(y);
    Dev<uint16_t> dx(bits);
    add_f32_bf16(dy.get(), dx.get(), n, nullptr);
    const std::vector<float> got = dy.host();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], y[i] + x[i]) << i;
  }
}

}  // namespace
}  // namespace locr::kernels::cuda::test
