// The quantized-weight kernels (quant_gemv.cu) against the scalar oracle: quant_gemv against ref's
// matmul of the same Q8_0 / Q4_K / Q6_K Matrix (exact dequantization, double sums) within the F32
// bound of docs/numerics.md (8 sqrt(K) u32 sum |x w|: the weights decode exactly and the
// activations are used as given, so only the F32 sums differ), at shapes with fewer units of 32
// weights than lanes and more, and every row count up to kQuantGemvMaxRows; dequantize_to_bf16
// against Matrix::at rounded to BF16, bit for bit. (tests/unit/cuda_quant_emulation_test.cc runs
// the same kernel bodies on the host.)
#include <cmath>

#include "core/error.h"
#include "cuda_test_util.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels::cuda::test {
namespace {

using testing_util::f32_matmul_tolerance;
using testing_util::make_quantized_matrix;

// The weight bytes of a host Matrix on the device.
Dev<uint8_t> upload(const Matrix& w) {
  const auto* p = static_cast<const uint8_t*>(w.data);
  return Dev<uint8_t>(std::vector<uint8_t>(p, p + w.rows * dtype_row_bytes(w.dtype, w.cols)));
}

struct Shape {
  DType dt;
  int64_t N, K;
};

const Shape kShapes[] = {{DType::kQ8_0, 37, 96},  {DType::kQ8_0, 5, 1184}, {DType::kQ8_0, 300, 2048},
                         {DType::kQ4_K, 11, 512}, {DType::kQ4_K, 129, 3072}, {DType::kQ6_K, 13, 256},
                         {DType::kQ6_K, 3, 768}};

TEST(CudaQuantGemv, MatchesRefMatmulWithinF32Sums) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  for (const Shape& s : kShapes)
    for (int M = 1; M <= kQuantGemvMaxRows; ++M) {
      SCOPED_TRACE(std::string(dtype_name(s.dt)) + " N " + std::to_string(s.N) + " K " + std::to_string(s.K) +
                   " M " + std::to_string(M));
      const Matrix w = make_quantized_matrix(s.dt, s.N, s.K, 50 + static_cast<uint32_t>(M));
      const std::vector<float> x = random_f32(M * s.K, -1, 1, 60 + static_cast<uint32_t>(s.K));
      std::vector<float> want(static_cast<size_t>(M * s.N));
      ref->matmul(ref->f32(x.data(), M, s.K), w, ref->f32(want.data(), M, s.N));
      Dev<uint8_t> dw = upload(w);
      Dev<float> dx(x), dy(M * s.N);
      quant_gemv(s.dt, dw.get(), s.N, s.K, dx.get(), M, dy.get(), nullptr);
      const std::vector<float> got = dy.host();
      for (int m = 0; m < M; ++m)
        for (int64_t n = 0; n < s.N; ++n)
          ASSERT_NEAR(got[m * s.N + n], want[m * s.N + n], f32_matmul_tolerance(w, x.data(), m, n))
              << "m " << m << " n " << n;
    }
}

TEST(CudaQuantGemv, RefusesMoreRowsThanItTakesAndNonQuantizedTypes) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const Matrix w = make_quantized_matrix(DType::kQ8_0, 4, 64, 1);
  Dev<uint8_t> dw = upload(w);
  Dev<float> dx((kQuantGemvMaxRows + 1) * 64), dy((kQuantGemvMaxRows + 1) * 4);
  EXPECT_THROW(quant_gemv(DType::kQ8_0, dw.get(), 4, 64, dx.get(), kQuantGemvMaxRows + 1, dy.get(), nullptr), Error);
  EXPECT_THROW(quant_gemv(DType::kBF16, dw.get(), 4, 64, dx.get(), 1, dy.get(), nullptr), Error);
  EXPECT_THROW(quant_gemv(DType::kQ4_K, dw.get(), 1, 64, dx.get(), 1, dy.get(), nullptr), Error);  // not 256s
}

TEST(CudaQuantGemv, DequantizeToBf16IsMatrixAtRounded) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::string(dtype_name(s.dt)) + " N " + std::to_string(s.N) + " K " + std::to_string(s.K));
    const Matrix w = make_quantized_matrix(s.dt, s.N, s.K, 70);
    Dev<uint8_t> dw = upload(w);
    Dev<uint16_t> out(s.N * s.K);
    dequantize_to_bf16(s.dt, dw.get(), s.N, s.K, out.get(), nullptr);
    const std::vector<uint16_t> got = out.host();
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t k = 0; k < s.K; ++k) ASSERT_EQ(got[n * s.K + k], host_bf16(w.at(n, k))) << "row " << n << " col " << k;
  }
}

TEST(CudaQuantGemv, EmbedQuantizedGathersRefsRows) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ref = make_ops("ref");
  const std::vector<int32_t> ids{3, 0, 49, 3, 17, 8};
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t dim = dt == DType::kQ8_0 ? 160 : 512, n = static_cast<int64_t>(ids.size());
    const Matrix t = make_quantized_matrix(dt, 50, dim, 71);
    Dev<uint8_t> dt_bytes = upload(t);
    Dev<int32_t> di(ids);
    Dev<float> out(n * dim);
    embed_quantized(dt, dt_bytes.get(), dim, di.get(), n, out.get(), nullptr);
    std::vector<float> want(static_cast<size_t>(n * dim));
    ref->embed(t, ref->i32(ids.data(), n), ref->f32(want.data(), n, dim));
    EXPECT_EQ(out.host(), want);
  }
}

}  // namespace
}  // namespace locr::kernels::cuda::test
