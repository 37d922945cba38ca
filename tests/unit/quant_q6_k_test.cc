// GGUF Q6_K on the CPU (kernels/cpu/quant_q6_k.h), on every ISA path: the quantizer byte for byte
// llama.cpp's (quantize_row_q6_K_ref compiled from its sources by tools/reference/
// make_q6_k_fixtures.py), Matrix::at exactly the reference dequantization (io::dequantize_row, and
// gguf's NumPy dequantizer on the fixture), the dot product against the dequantized rows in double
// and the same bits on every path and batch size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf.h"
#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/ops.h"

namespace locr::kernels {
namespace {

constexpr int64_t kW = 210, kX = 292;
constexpr uint32_t kQ6K = static_cast<uint32_t>(io::GgmlType::kQ6_K);

std::string read_fixture(const char* name) {
  std::ifstream f(std::string(LOCR_FIXTURES_DIR) + "/gguf/" + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  return {std::istreambuf_iterator<char>(f), {}};
}

// Random Q6_K rows: any quant byte and any int8 scale, an f16 d of either sign.
std::vector<uint8_t> random_q6_k(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.002f, 0.002f);
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols / 256 * kW));
  for (size_t b = 0; b < out.size(); b += kW) {
    for (int j = 0; j < 208; ++j) out[b + j] = static_cast<uint8_t>(byte(rng));
    const uint16_t d = f32_to_f16(scale(rng));
    std::memcpy(&out[b + 208], &d, 2);
  }
  return out;
}

std::vector<float> dequantized(const uint8_t* q, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  io::dequantize_row(kQ6K, q, v.data(), n);
  return v;
}

std::vector<double> q8_k_values(const uint8_t* x, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / 256; ++b) {
    float d;
    std::memcpy(&d, x + b * kX, 4);
    for (int j = 0; j < 256; ++j) v[b * 256 + j] = static_cast<double>(d) * static_cast<int8_t>(x[b * kX + 4 + j]);
  }
  return v;
}

std::vector<float> normal_floats(size_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

Matrix q6_k_matrix(const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
  Matrix m;
  m.dtype = DType::kQ6_K;
  m.rows = rows;
  m.cols = cols;
  m.data = w.data();
  return m;
}

TEST(QuantQ6_K, QuantizerWritesLlamaCppsBytes) {
  const std::string src = read_fixture("q4_k_source.f32");
  ASSERT_EQ(src.size(), 8u * 256 * 4);
  std::vector<float> x(8 * 256);
  std::memcpy(x.data(), src.data(), src.size());
  const std::string want = read_fixture("q6_k_ref.bin");
  ASSERT_EQ(want.size(), 8u * kW);
  std::vector<uint8_t> got(8 * kW, 0xff);
  quantize_row_q6_K(x.data(), got.data(), 8 * 256);
  for (int b = 0; b < 8; ++b)
    EXPECT_EQ(std::memcmp(got.data() + b * kW, want.data() + b * kW, kW), 0) << "Q6_K super-block " << b;
  std::vector<float> bad(300);
  EXPECT_THROW(quantize_row_q6_K(bad.data(), got.data(), 300), locr::Error);
}

// llama.cpp's bytes dequantized by gguf's NumPy code (the fixture) equal Matrix::at's values bit for bit.
TEST(QuantQ6_K, MatrixAtIsGgufsNumPyDequantization) {
  const std::string q = read_fixture("q6_k_ref.bin"), f = read_fixture("q6_k_ref.f32");
  ASSERT_EQ(f.size(), 8u * 256 * 4);
  const std::vector<uint8_t> w(q.begin(), q.end());
  const Matrix m = q6_k_matrix(w, 8, 256);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 256; ++c) {
      float want;
      std::memcpy(&want, f.data() + (r * 256 + c) * 4, 4);
      const float got = m.at(r, c);
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << r << "," << c << ": " << got << " vs " << want;
    }
}

TEST(QuantQ6_K, QuantizerErrorIsBoundedOnWeightLikeRows) {
  // Gaussian rows: each value within about one group step of its dequantization (the group's
  // max / 32, plus the int8 scale's and the f16 d's rounding), and the RMS error small.
  const int64_t n = 256 * 16;
  const std::vector<float> x = normal_floats(n, 3, 0.02f);
  std::vector<uint8_t> q(n / 256 * kW);
  quantize_row_q6_K(x.data(), q.data(), n);
  const std::vector<float> y = dequantized(q.data(), n);
  double se = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) {
    se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    ss += double(x[i]) * x[i];
    float amax = 0;
    for (int64_t k = i / 16 * 16; k < i / 16 * 16 + 16; ++k) amax = std::max(amax, std::fabs(x[k]));
    EXPECT_LE(std::fabs(x[i] - y[i]), amax / 32 * 1.2) << i;
  }
  EXPECT_LT(std::sqrt(se / ss), 0.04);
}

TEST(QuantQ6_K, MatrixAtIsTheReferenceDequantization) {
  const int64_t rows = 3, cols = 512;
  const auto w = random_q6_k(rows, cols, 17);
  const Matrix m = q6_k_matrix(w, rows, cols);
  EXPECT_EQ(dtype_row_bytes(DType::kQ6_K, cols), 2 * kW);
  EXPECT_STREQ(dtype_name(DType::kQ6_K), "Q6_K");
  EXPECT_THROW(dtype_row_bytes(DType::kQ6_K, 320), locr::Error);
  for (int64_t r = 0; r < rows; ++r) {
    const auto ref = dequantized(w.data() + r * 2 * kW, cols);
    for (int64_t c = 0; c < cols; ++c) {
      const float a = m.at(r, c);
      ASSERT_EQ(std::memcmp(&a, &ref[c], 4), 0) << r << "," << c << ": " << a << " vs " << ref[c];
    }
  }
  // The CPU backend's embedding gather reads the same values.
  for (const char* backend : {"cpu-f32", "cpu-bf16"}) {
    const auto ops = make_ops(backend);
    const int32_t ids[2] = {2, 0};
    std::vector<float> out(2 * cols);
    ops->embed(m, ops->i32(ids, 2), ops->f32(out.data(), 2, cols));
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(out[c], m.at(2, c)) << backend;
      ASSERT_EQ(out[cols + c], m.at(0, c)) << backend;
    }
  }
}

class QuantQ6_KIsa : public testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpu_isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << cpu_isa_name(GetParam());
  }
};

// |dequantized weight| x |activation| summed: the magnitude the float steps round against.
double magnitude(const std::vector<float>& dw, const std::vector<double>& dx) {
  double mag = 0;
  for (size_t i = 0; i < dw.size(); ++i) mag += std::fabs(double(dw[i])) * std::fabs(dx[i]);
  return mag;
}

TEST_P(QuantQ6_KIsa, DotMatchesTheDequantizedRowsAndTheGenericBits) {
  for (int64_t n : {256, 512, 256 * 7, 4096}) {
    const auto w = random_q6_k(1, n, 7 + static_cast<uint32_t>(n));
    const std::vector<float> xf = normal_floats(n, 11 + static_cast<uint32_t>(n));
    std::vector<uint8_t> x(n / 256 * kX);
    quantize_row_q8_K(xf.data(), x.data(), n);
    const float got = dot_q6_K(GetParam(), w.data(), x.data(), n);
    const float generic = dot_q6_K(CpuIsa::kGeneric, w.data(), x.data(), n);
    EXPECT_EQ(std::memcmp(&got, &generic, 4), 0) << n << ": " << got << " vs " << generic;
    const auto dw = dequantized(w.data(), n);
    const auto dx = q8_k_values(x.data(), n);
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) ref += dw[i] * dx[i];
    EXPECT_NEAR(got, ref, 1e-6 * magnitude(dw, dx) + 1e-12) << n;
  }
  // Extremes: every quant 0 (-32 after the offset), every scale -128, d = 1, activations all 127
  // or all -127 with scale 1: the largest integer sums (16 * 128 * 32 * 127 * 16), exact in float.
  for (const int xv : {-127, 127}) {
    std::vector<uint8_t> w(kW * 2, 0), x(kX * 2, 0);
    for (int b = 0; b < 2; ++b) {
      std::memset(&w[b * kW + 192], 0x80, 16);
      const uint16_t one = f32_to_f16(1.0f);
      std::memcpy(&w[b * kW + 208], &one, 2);
      const float d = 1.0f;
      std::memcpy(&x[b * kX], &d, 4);
      std::memset(&x[b * kX + 4], static_cast<uint8_t>(static_cast<int8_t>(xv)), 256);
      for (int j = 0; j < 16; ++j) {
        const int16_t s = static_cast<int16_t>(16 * xv);
        std::memcpy(&x[b * kX + 260 + 2 * j], &s, 2);
      }
    }
    EXPECT_EQ(dequantized(w.data(), 512)[0], 4096.0f);
    const float want = 2 * 256 * 4096.0f * static_cast<float>(xv);
    EXPECT_EQ(dot_q6_K(GetParam(), w.data(), x.data(), 512), want) << xv;
    // Every quant 63 (+31): the largest unsigned quant in the byte products (2 * 63 * 127 per pair).
    for (int b = 0; b < 2; ++b) std::memset(&w[b * kW], 0xff, 192);
    EXPECT_EQ(dequantized(w.data(), 512)[0], -128.0f * 31);
    EXPECT_EQ(dot_q6_K(GetParam(), w.data(), x.data(), 512), 2 * 256 * -128.0f * 31 * static_cast<float>(xv)) << xv;
  }
  EXPECT_THROW(dot_q6_K(GetParam(), nullptr, nullptr, 300), locr::Error);
}

// The kernels run on the packed layout; their result is q6_k_block.h's canonical order written out
// on GGUF's own bytes (q6_k_dot_scalar), bit for bit, on every path.
TEST_P(QuantQ6_KIsa, DotIsTheCanonicalOrderOnTheGgufBytes) {
  for (int64_t n : {256, 768, 256 * 13}) {
    for (uint32_t seed = 0; seed < 4; ++seed) {
      const auto w = random_q6_k(1, n, 100 + seed + static_cast<uint32_t>(n));
      const std::vector<float> xf = normal_floats(n, 200 + seed + static_cast<uint32_t>(n));
      std::vector<uint8_t> x(n / 256 * kX);
      quantize_row_q8_K(xf.data(), x.data(), n);
      const float got = dot_q6_K(GetParam(), w.data(), x.data(), n);
      const float want = cpu::q6_k_dot_scalar(w.data(), x.data(), n / 256);
      EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << n << " seed " << seed << ": " << got << " vs " << want;
    }
  }
}

TEST_P(QuantQ6_KIsa, GemvMatchesTheDequantizedReference) {
  const int64_t rows = 37, cols = 2048;  // rows: not a multiple of the 4-row tile nor of 16
  const auto w = random_q6_k(rows, cols, 3);
  const std::vector<float> x = normal_floats(cols, 5);
  std::vector<float> y(rows);
  gemv_q6_K(GetParam(), w.data(), rows, cols, x.data(), y.data());
  std::vector<uint8_t> xq(cols / 256 * kX);
  quantize_row_q8_K(x.data(), xq.data(), cols);
  const auto dx = q8_k_values(xq.data(), cols);
  const int64_t row_bytes = cols / 256 * kW;
  for (int64_t r = 0; r < rows; ++r) {
    const auto dw = dequantized(w.data() + r * row_bytes, cols);
    double ref = 0, exact = 0, bound = 0;
    for (int64_t j = 0; j < cols; ++j) {
      ref += dw[j] * dx[j];
      exact += double(dw[j]) * x[j];
      // Quantizing x moves each value by at most half its block's step, max|x| / 127 / 2.
      float amax = 0;
      for (int64_t i = j / 256 * 256; i < j / 256 * 256 + 256; ++i) amax = std::max(amax, std::fabs(x[i]));
      bound += std::fabs(double(dw[j])) * (amax / 127.0 * 0.5);
    }
    const double mag = magnitude(dw, dx);
    EXPECT_NEAR(y[r], ref, 1e-6 * mag + 1e-12) << "row " << r;  // the kernel computes exactly this
    EXPECT_LE(std::fabs(y[r] - exact), bound * 1.0001 + 1e-6 * mag + 1e-9) << "row " << r;  // and that close to W.x
  }
  std::vector<float> yg(rows);
  gemv_q6_K(CpuIsa::kGeneric, w.data(), rows, cols, x.data(), yg.data());
  EXPECT_EQ(std::memcmp(y.data(), yg.data(), rows * 4), 0);
}

// Several activation rows at once (every tile shape of every path: one group x 2 and x 1 activation
// rows on 256 bits; 1, 2 or 4 groups x 1..4 activation rows on 512 bits; a last group of fewer than
// 16 rows; tiles of 64 weight rows past 64 activation rows): every element the same bits as that
// row alone on the generic path.
TEST_P(QuantQ6_KIsa, GemmRowsAreTheGemvOfEachRowOnEveryPath) {
  const int64_t cols = 256 * 3;
  // 301 rows: several groups per thread's chunk, one tile call over the chunk (quant_gemm.h) that
  // walks its groups by two or four (quant_tiles.h) and a last group of 13 rows; m = 64: the most
  // rows of one pass, 67: tiles of 64 weight rows
  for (const int64_t rows : {int64_t{37}, int64_t{301}}) {
    const auto w = random_q6_k(rows, cols, 21 + static_cast<uint32_t>(rows));
    for (const int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 64, 67}) {
      const std::vector<float> x = normal_floats(static_cast<size_t>(m * cols), 9 + static_cast<uint32_t>(m));
      std::vector<float> y(m * rows, -1.0f);
      gemm_q6_K(GetParam(), w.data(), rows, cols, x.data(), m, y.data());
      for (int64_t i = 0; i < m; ++i) {
        std::vector<float> yi(rows);
        gemv_q6_K(CpuIsa::kGeneric, w.data(), rows, cols, x.data() + i * cols, yi.data());
        ASSERT_EQ(std::memcmp(y.data() + i * rows, yi.data(), rows * 4), 0) << "rows " << rows << ", m " << m << ", activation row " << i;
      }
    }
  }
  const int64_t rows = 37;
  const auto w = random_q6_k(rows, cols, 21);
  std::vector<float> x(cols + 1), y(rows);
  EXPECT_THROW(gemm_q6_K(GetParam(), w.data(), rows, cols + 1, x.data(), 1, y.data()), locr::Error);
}

// Ops::matmul on a Q6_K Matrix runs these kernels on the CPU backends, and ref multiplies the
// exactly dequantized weight.
TEST_P(QuantQ6_KIsa, MatmulRunsTheKernelsAndRefTheDequantizedWeight) {
  const int64_t rows = 20, cols = 512, m = 3;
  const auto w = random_q6_k(rows, cols, 31);
  Matrix mw = q6_k_matrix(w, rows, cols);
  const std::vector<float> x = normal_floats(m * cols, 33);
  std::vector<float> want(m * rows), got(m * rows), ref(m * rows);
  gemm_q6_K(CpuIsa::kGeneric, w.data(), rows, cols, x.data(), m, want.data());
  for (const char* backend : {"cpu-f32", "cpu-bf16"}) {
    const auto ops = make_ops(backend);
    ops->prepare(mw);  // repacks the weight once (quant_q6_k.h's layout), a second prepare keeps it
    ASSERT_NE(mw.packed, nullptr) << backend;
    const void* packed = mw.packed.get();
    ops->prepare(mw);
    EXPECT_EQ(mw.packed.get(), packed) << backend;
    ops->matmul(ops->f32(x.data(), m, cols), mw, ops->f32(got.data(), m, rows));
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << backend;
  }
  const auto r_ops = make_ops("ref");
  r_ops->matmul(r_ops->f32(x.data(), m, cols), mw, r_ops->f32(ref.data(), m, rows));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < rows; ++r) {
      const auto dw = dequantized(w.data() + r * 2 * kW, cols);
      double s = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        s += double(dw[c]) * x[i * cols + c];
        mag += std::fabs(double(dw[c]) * x[i * cols + c]);
      }
      EXPECT_NEAR(ref[i * rows + r], s, 1e-5 * mag + 1e-9);
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, QuantQ6_KIsa,
                         testing::ValuesIn(kAllCpuIsas),
                         [](const testing::TestParamInfo<CpuIsa>& i) {
                           std::string n = cpu_isa_name(i.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace locr::kernels
