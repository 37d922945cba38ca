// FP8 E4M3 (OCP "fn") conversions against a slow reference written from the format's definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/fp8.h"

namespace locr {
namespace {

// The value of code b straight from the definition (sign, 4-bit exponent with bias 7, 3-bit
// mantissa, exponent 0 subnormal, S.1111.111 NaN, no infinities), in double.
double def_value(int b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

// Encoding from the definition: the nearest finite code (a tie to the one with an even mantissa),
// magnitudes past 448 saturate, NaN to NaN. Searches all 127 non-negative finite codes.
uint8_t def_encode(float x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xff : 0x7f;
  const double a = std::fabs(static_cast<double>(x));
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c <= 0x7e; ++c) {
    const double d = std::fabs(def_value(c) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best = c;
      best_d = d;
    }
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Fp8E4M3Test, EveryCodeDecodesAsTheDefinitionSays) {
  for (int b = 0; b < 256; ++b) {
    const float f = fp8_e4m3_to_f32(static_cast<uint8_t>(b));
    const double want = def_value(b);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << "code " << b;
      EXPECT_TRUE((b & 0x7f) == 0x7f) << "code " << b;
      continue;
    }
    EXPECT_EQ(static_cast<double>(f), want) << "code " << b;
    EXPECT_EQ(std::signbit(f), (b & 0x80) != 0) << "code " << b;  // -0 is 0x80
  }
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6));
}

TEST(Fp8E4M3Test, EveryFiniteCodeRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7f) == 0x7f) continue;
    EXPECT_EQ(f32_to_fp8_e4m3(fp8_e4m3_to_f32(static_cast<uint8_t>(b))), b) << "code " << b;
  }
}

TEST(Fp8E4M3Test, EncodeMatchesTheDefinitionAtEveryBoundaryAndHalfway) {
  // Every representable value, every midpoint between neighbours (exact in f32: one more bit) and
  // the floats right beside each, both signs; the midpoints exercise ties to even.
  std::vector<float> xs;
  auto around = [&](float v) {
    xs.push_back(v);
    xs.push_back(std::nextafter(v, INFINITY));
    xs.push_back(std::nextafter(v, -INFINITY));
  };
  for (int c = 0; c <= 0x7e; ++c) {
    const float v = fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    around(v);
    if (c < 0x7e) {
      const double mid = (def_value(c) + def_value(c + 1)) / 2;
      ASSERT_EQ(static_cast<double>(static_cast<float>(mid)), mid);
      around(static_cast<float>(mid));
    }
  }
  // Saturation: 448 .. 464 (the tie with 480 goes to the even 448), past it, the f32 limits.
  for (float v : {456.0f, 464.0f, 470.0f, 480.0f, 500.0f, 1e6f, std::numeric_limits<float>::max(), INFINITY}) around(v);
  // Below the subnormals: half of 2^-9 is a tie with 0; f32 subnormals.
  for (float v : {std::ldexp(1.0f, -10), std::ldexp(1.0f, -11), std::ldexp(3.0f, -11),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 0.0f})
    around(v);
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 20000; ++i) {  // random floats of every magnitude
    uint32_t u = any(rng);
    if ((u & 0x7f800000u) == 0x7f800000u) continue;
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(f);
  }
  std::uniform_real_distribution<float> mid(-500.0f, 500.0f);
  for (int i = 0; i < 20000; ++i) xs.push_back(mid(rng));
  for (float x : std::vector<float>(xs)) xs.push_back(-x);
  for (float x : xs) {
    const uint8_t got = f32_to_fp8_e4m3(x), want = def_encode(x);
    ASSERT_EQ(got, want) << "x = " << x << " (0x" << std::hex << bits(x) << ")";
  }
}

TEST(Fp8E4M3Test, SpecialValues) {
  EXPECT_EQ(f32_to_fp8_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(f32_to_fp8_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(f32_to_fp8_e4m3(464.0f), 0x7e);                // tie 448 / 480: even mantissa
  EXPECT_EQ(f32_to_fp8_e4m3(std::ldexp(1.0f, -10)), 0x00);  // tie 0 / 2^-9: even
  EXPECT_EQ(f32_to_fp8_e4m3(std::ldexp(3.0f, -10)), 0x02);  // tie 2^-9 / 2^-8: even
  EXPECT_EQ(f32_to_fp8_e4m3(-0.0f), 0x80);
  EXPECT_EQ(f32_to_fp8_e4m3(std::nanf("")) & 0x7f, 0x7f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(f32_to_fp8_e4m3(std::nanf("")))));
}

}  // namespace
}  // namespace locr
