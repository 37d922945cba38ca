// cuBLASLt GEMM against the scalar oracle's f64-accumulated matmul on BF16 inputs, at awkward
// shapes, with strided (and misaligned) rows, F32 and BF16 outputs, and accumulation into Y.
#include <cmath>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda {
namespace detail {  // gemm_fallback.cu: what Gemm::run uses when cuBLASLt has no algorithm
void gemm_fallback(const uint16_t* x, int64_t M, int64_t K, int64_t ldx, const uint16_t* w, int64_t N, int64_t ldw,
                   void* y, bool y_bf16, int64_t ldy, bool accumulate, Stream s);
}  // namespace detail
}  // namespace locr::kernels::cuda

namespace locr::kernels::cuda::test {
namespace {

struct Shape {
  int64_t M, N, K, pad_x, pad_w, pad_y;
};

void run_case(const Shape& sh, bool y_bf16, bool accumulate, bool fallback = false) {
  const int64_t M = sh.M, N = sh.N, K = sh.K;
  const int64_t ldx = K + sh.pad_x, ldw = K + sh.pad_w, ldy = N + sh.pad_y;
  std::vector<uint16_t> xb, wb;
  const std::vector<float> xs = random_bf16(std::max<int64_t>(M * ldx, 1), -1, 1, 21, &xb);
  const std::vector<float> ws = random_bf16(N * ldw, -1, 1, 22, &wb);
  // Dense copies for the oracle.
  std::vector<float> x(M * K);
  std::vector<uint16_t> w(N * K);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) x[m * K + k] = xs[m * ldx + k];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) w[n * K + k] = wb[n * ldw + k];
  Matrix wm;
  wm.dtype = DType::kBF16;
  wm.rows = N;
  wm.cols = K;
  wm.data = w.data();
  std::vector<float> want(M * N);
  if (M > 0) {
    const auto ref = make_ops("ref");
    ref->matmul(ref->f32(x.data(), M, K), wm, ref->f32(want.data(), M, N));
  }
  // Initial Y (used when accumulating), already representable in the output dtype.
  std::vector<float> y0 = random_f32(std::max<int64_t>(M * ldy, 1), -2, 2, 23);
  for (auto& v : y0) v = y_bf16 ? round_bf16(v) : v;
  if (accumulate)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) want[m * N + n] += y0[m * ldy + n];

  Dev<uint16_t> dx(xb), dw(wb);
  std::vector<float> got(M * ldy);
  Gemm gemm;
  if (y_bf16) {
    std::vector<uint16_t> y0b(y0.size());
    for (size_t i = 0; i < y0.size(); ++i) y0b[i] = host_bf16(y0[i]);
    Dev<uint16_t> dy(y0b);
    if (fallback) detail::gemm_fallback(dx.get(), M, K, ldx, dw.get(), N, ldw, dy.get(), true, ldy, accumulate, nullptr);
    else gemm.run(dx.get(), M, K, ldx, dw.get(), N, ldw, dy.get(), true, ldy, accumulate, nullptr);
    const std::vector<float> g = to_f32(dy.host());
    std::copy(g.begin(), g.begin() + M * ldy, got.begin());
  } else {
    Dev<float> dy(y0);
    if (fallback) detail::gemm_fallback(dx.get(), M, K, ldx, dw.get(), N, ldw, dy.get(), false, ldy, accumulate, nullptr);
    else gemm.run(dx.get(), M, K, ldx, dw.get(), N, ldw, dy.get(), false, ldy, accumulate, nullptr);
    const std::vector<float> g = dy.host();
    std::copy(g.begin(), g.begin() + M * ldy, got.begin());
  }
  const float u32 = std::ldexp(1.0f, -24);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double abs_sum = accumulate ? std::fabs(y0[m * ldy + n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) abs_sum += std::fabs(x[m * K + k] * host_f32(w[n * K + k]));
      const float want_v = want[m * N + n];
      float tol = 8.0f * std::sqrt(static_cast<float>(K + 1)) * u32 * static_cast<float>(abs_sum) + 1e-30f;
      if (y_bf16) tol += std::ldexp(std::fabs(want_v), -8) * 1.01f;
      ASSERT_LE(std::fabs(got[m * ldy + n] - want_v), tol)
          << "M=" << M << " N=" << N << " K=" << K << " at (" << m << "," << n << ")";
    }
  // Padding columns of Y are never written.
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = N; n < ldy; ++n) ASSERT_EQ(got[m * ldy + n], y0[m * ldy + n]) << "padding written";
}

TEST(CudaGemm, MatchesRefAtAwkwardShapes) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const Shape shapes[] = {
      {1, 1, 1, 0, 0, 0},     {1, 33, 31, 0, 0, 0},   {31, 129, 127, 0, 0, 0}, {129, 127, 33, 0, 0, 0},
      {33, 64, 1024, 8, 8, 8}, {127, 31, 129, 1, 3, 1}, {5, 3072, 1024, 0, 0, 0}, {64, 256, 4096, 16, 0, 16},
  };
  for (const Shape& sh : shapes)
    for (bool y_bf16 : {false, true})
      for (bool acc : {false, true}) {
        SCOPED_TRACE(testing::Message() << "y_bf16=" << y_bf16 << " acc=" << acc);
        run_case(sh, y_bf16, acc);
      }
}

TEST(CudaGemm, FallbackKernelMatchesRef) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  for (const Shape& sh : {Shape{1, 1, 1, 0, 0, 0}, Shape{31, 33, 17, 1, 3, 1}, Shape{129, 127, 300, 0, 0, 5}})
    for (bool y_bf16 : {false, true})
      for (bool acc : {false, true}) run_case(sh, y_bf16, acc, true);
}

TEST(CudaGemm, EmptyMIsANoOp) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  Gemm gemm;
  std::vector<float> y = {42.0f};
  Dev<float> dy(y);
  gemm.run(nullptr, 0, 16, 16, nullptr, 1, 16, dy.get(), false, 1, false, nullptr);
  EXPECT_EQ(dy.host()[0], 42.0f);
}

TEST(CudaGemm, RepeatedShapesReuseThePlan) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  for (int rep = 0; rep < 3; ++rep) run_case({17, 40, 96, 0, 0, 0}, false, rep == 2);
}

}  // namespace
}  // namespace locr::kernels::cuda::test
