// GGUF Q8_0 on the CPU (kernels/cpu/quant_q8_0.h), on every ISA path: the quantizer against
// llama.cpp's (the bytes its gguf package wrote, tools/reference/make_gguf_fixtures.py), the dot
// product exact and the same bits on every path, GEMV against the dequantized reference
// (io::dequantize_row) with the activation-quantization error bounded.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/dtype.h"
#include "io/gguf.h"
#include "kernels/cpu/quant_q8_0.h"

namespace locr::kernels {
namespace {

constexpr int64_t kBlockBytes = 34;

std::string fixture(const char* name) { return std::string(LOCR_FIXTURES_DIR) + "/gguf/" + name; }

// Random Q8_0 rows and small positive or negative f16 scales. Weights: every int8 value (-128 too,
// which llama.cpp's quantizer never writes but a file may hold). Activations (activation = true):
// [-127, 127], what quantize_row_q8_0 writes.
std::vector<uint8_t> random_q8_0(int64_t rows, int64_t cols, uint32_t seed, bool activation = false) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(activation ? 129 : 128, 383);  // mod 256: -127 (or -128) .. 127
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols / 32 * kBlockBytes));
  for (size_t b = 0; b < out.size(); b += kBlockBytes) {
    const uint16_t h = f32_to_f16(scale(rng));
    std::memcpy(&out[b], &h, 2);
    for (int j = 0; j < 32; ++j) out[b + 2 + j] = static_cast<uint8_t>(byte(rng) % 256);
  }
  return out;
}

std::vector<float> dequantized(const uint8_t* q, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  io::dequantize_row(static_cast<uint32_t>(io::GgmlType::kQ8_0), q, v.data(), n);
  return v;
}

TEST(QuantQ8_0, QuantizerWritesLlamaCppsBytes) {
  const auto src = io::GgufFile::open(fixture("sources.gguf"));
  const auto types = io::GgufFile::open(fixture("types.gguf"));
  const std::vector<float> x = src->dequantize(*src->find("q8_0"));
  const std::string_view want = types->data(*types->find("q8_0"));
  std::vector<uint8_t> got(want.size());
  quantize_row_q8_0(x.data(), got.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(std::string(got.begin(), got.end()), std::string(want));
  // A block of zeros has scale 0 and zeros, not NaNs.
  std::vector<float> zeros(32, 0.0f);
  std::vector<uint8_t> zq(kBlockBytes, 0xff);
  quantize_row_q8_0(zeros.data(), zq.data(), 32);
  EXPECT_EQ(zq, std::vector<uint8_t>(kBlockBytes, 0));
  EXPECT_THROW(quantize_row_q8_0(zeros.data(), zq.data(), 31), locr::Error);
  // Halves round away from zero (roundf), as llama.cpp's quantizer: max 127 makes the step 1.
  std::vector<float> halves(32);
  for (int j = 0; j < 32; ++j) halves[j] = (j % 2 ? -1.0f : 1.0f) * (static_cast<float>(j) * 3.5f + 0.5f);
  halves[31] = 127.0f;
  std::vector<uint8_t> hq(kBlockBytes);
  quantize_row_q8_0(halves.data(), hq.data(), 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(static_cast<int8_t>(hq[2 + j]), static_cast<int>(std::round(halves[j]))) << halves[j];
}

class QuantQ8_0Isa : public testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpu_isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << cpu_isa_name(GetParam());
  }
};

TEST_P(QuantQ8_0Isa, DotIsExactAndTheSameBitsAsTheGenericPath) {
  for (int64_t n : {32, 64, 32 * 37, 2048}) {
    const auto a = random_q8_0(1, n, 7 + static_cast<uint32_t>(n));
    const auto b = random_q8_0(1, n, 11 + static_cast<uint32_t>(n), /*activation=*/true);
    const float got = dot_q8_0(GetParam(), a.data(), b.data(), n);
    const float generic = dot_q8_0(CpuIsa::kGeneric, a.data(), b.data(), n);
    EXPECT_EQ(std::memcmp(&got, &generic, 4), 0) << n << ": " << got << " vs " << generic;
    // Against the dequantized rows in double: equal up to float rounding of the block sums.
    const auto da = dequantized(a.data(), n), db = dequantized(b.data(), n);
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      ref += static_cast<double>(da[i]) * db[i];
      mag += std::fabs(static_cast<double>(da[i]) * db[i]);
    }
    EXPECT_NEAR(got, ref, 1e-6 * mag + 1e-12) << n;
  }
  // Extremes: weights all -128 against activations all -127 and all 127 (the integer sums must
  // neither saturate nor lose the sign of -128).
  for (const int xv : {-127, 127}) {
    std::vector<uint8_t> w(kBlockBytes * 4, 0x80), x(kBlockBytes * 4, static_cast<uint8_t>(static_cast<int8_t>(xv)));
    for (int b = 0; b < 4; ++b) {
      const uint16_t one = f32_to_f16(1.0f);
      std::memcpy(&w[b * kBlockBytes], &one, 2);
      std::memcpy(&x[b * kBlockBytes], &one, 2);
    }
    EXPECT_EQ(dot_q8_0(GetParam(), w.data(), x.data(), 128), -128.0f * static_cast<float>(xv) * 128.0f) << xv;
  }
}

// The canonical order of q8_0_block.h written out here on GGUF's own bytes (not on the packed
// layout the kernels read): per block the exact integer sum of its 32 products, then one FMA chain
// over the blocks with the product of the two scales. Every path gives exactly these bits.
float canonical_dot(const uint8_t* w, const uint8_t* x, int64_t n) {
  float acc = 0;
  for (int64_t b = 0; b < n / 32; ++b, w += kBlockBytes, x += kBlockBytes) {
    uint16_t hw, hx;
    std::memcpy(&hw, w, 2);
    std::memcpy(&hx, x, 2);
    int32_t p = 0;
    for (int k = 0; k < 32; ++k) p += int32_t{static_cast<int8_t>(w[2 + k])} * int32_t{static_cast<int8_t>(x[2 + k])};
    acc = std::fma(f16_to_f32(hw) * f16_to_f32(hx), static_cast<float>(p), acc);
  }
  return acc;
}

TEST_P(QuantQ8_0Isa, DotIsTheCanonicalOrderOnTheGgufBytes) {
  for (int64_t n : {32, 96, 32 * 37, 4096}) {
    for (uint32_t seed = 0; seed < 4; ++seed) {
      const auto a = random_q8_0(1, n, 100 + seed + static_cast<uint32_t>(n));
      const auto b = random_q8_0(1, n, 200 + seed + static_cast<uint32_t>(n), /*activation=*/true);
      const float got = dot_q8_0(GetParam(), a.data(), b.data(), n), want = canonical_dot(a.data(), b.data(), n);
      EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << n << " seed " << seed << ": " << got << " vs " << want;
    }
  }
}

TEST_P(QuantQ8_0Isa, GemvMatchesTheDequantizedReference) {
  const int64_t rows = 48, cols = 2048;
  const auto w = random_q8_0(rows, cols, 3);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(cols);
  for (float& v : x) v = normal(rng);
  std::vector<float> y(rows);
  gemv_q8_0(GetParam(), w.data(), rows, cols, x.data(), y.data());
  std::vector<uint8_t> xq(static_cast<size_t>(cols / 32 * kBlockBytes));
  quantize_row_q8_0(x.data(), xq.data(), cols);
  const auto dx = dequantized(xq.data(), cols);
  const int64_t row_bytes = cols / 32 * kBlockBytes;
  for (int64_t r = 0; r < rows; ++r) {
    const auto dw = dequantized(w.data() + r * row_bytes, cols);
    double ref = 0, mag = 0, exact = 0, bound = 0;
    for (int64_t j = 0; j < cols; ++j) {
      ref += static_cast<double>(dw[j]) * dx[j];
      mag += std::fabs(static_cast<double>(dw[j]) * dx[j]);
      exact += static_cast<double>(dw[j]) * x[j];
      // Quantizing x moves each value by at most half its block's step (max|x| / 127 / 2), plus
      // the f16 rounding of the step itself (2^-11 of it, times 127).
      float amax = 0;
      for (int64_t i = j / 32 * 32; i < j / 32 * 32 + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
      bound += std::fabs(static_cast<double>(dw[j])) * (amax / 127.0 * (0.5 + 127.0 / 2048));
    }
    EXPECT_NEAR(y[r], ref, 1e-6 * mag + 1e-12) << "row " << r;  // the kernel computes exactly this
    EXPECT_LE(std::fabs(y[r] - exact), bound * 1.0001 + 1e-6 * mag + 1e-9) << "row " << r;  // and that close to W.x
  }
  // The same bits as the generic path.
  std::vector<float> yg(rows);
  gemv_q8_0(CpuIsa::kGeneric, w.data(), rows, cols, x.data(), yg.data());
  EXPECT_EQ(std::memcmp(y.data(), yg.data(), rows * 4), 0);
}

// Several activation rows at once (every tile shape of every path: one group x 2 and x 1 activation
// rows on 256 bits; 1, 2 or 4 groups x 1..4 activation rows on 512 bits; a last group of fewer than
// 16 rows; tiles of 64 weight rows past 64 activation rows): every element the same bits as one row
// alone on the generic path.
TEST_P(QuantQ8_0Isa, GemmRowsAreTheGemvOfEachRowOnEveryPath) {
  const int64_t cols = 32 * 9;
  // 301 rows: several groups per thread's chunk, one tile call over the chunk (quant_gemm.h) that
  // walks its groups by two or four (quant_tiles.h) and a last group of 13 rows; m = 64: the most
  // rows of one pass, 67: tiles of 64 weight rows
  for (const int64_t rows : {int64_t{37}, int64_t{301}}) {
    const auto w = random_q8_0(rows, cols, 21 + static_cast<uint32_t>(rows));
    for (const int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 64, 67}) {
      std::mt19937 rng(9 + static_cast<uint32_t>(m));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> x(m * cols);
      for (float& v : x) v = normal(rng);
      std::vector<float> y(m * rows, -1.0f);
      gemm_q8_0(GetParam(), w.data(), rows, cols, x.data(), m, y.data());
      for (int64_t i = 0; i < m; ++i) {
        std::vector<float> yi(rows);
        gemv_q8_0(CpuIsa::kGeneric, w.data(), rows, cols, x.data() + i * cols, yi.data());
        ASSERT_EQ(std::memcmp(y.data() + i * rows, yi.data(), rows * 4), 0) << "rows " << rows << ", m " << m << ", activation row " << i;
      }
    }
  }
  const int64_t rows = 37;
  const auto w = random_q8_0(rows, cols, 21);
  std::vector<float> x(cols + 1), y(rows);
  EXPECT_THROW(gemm_q8_0(GetParam(), w.data(), rows, cols + 1, x.data(), 1, y.data()), locr::Error);
}

INSTANTIATE_TEST_SUITE_P(Cpu, QuantQ8_0Isa,
                         testing::ValuesIn(kAllCpuIsas),
                         [](const testing::TestParamInfo<CpuIsa>& i) {
                           std::string n = cpu_isa_name(i.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace locr::kernels
