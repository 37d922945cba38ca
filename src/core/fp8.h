// FP8 E4M3, the OCP "fn" variant (torch.float8_e4m3fn, safetensors F8_E4M3): 1 sign, 4 exponent
// (bias 7), 3 mantissa bits; no infinities, S.1111.111 (0x7f, 0xff) is NaN, so the largest finite
// value is 1.75 * 2^8 = 448; exponent 0 holds the subnormals m/8 * 2^-6 (smallest 2^-9).
// Portable scalar conversions (no ISA assumptions); the KV cache stores its keys and values so.
// The functions are LOCR_HOST_DEVICE: the CUDA backend's kv_store and attention run this source, so
// the device writes the bytes kernels::kv_store_host writes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/host_device.h"

namespace locr {

inline constexpr float kFp8E4M3Max = 448.0f;

// Exact: every E4M3 value is an f32 value.
LOCR_HOST_DEVICE inline float fp8_e4m3_to_f32(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t em = b & 0x7fu;
  float f;
  if (em == 0x7f) {
    const uint32_t u = sign | 0x7fc00000u;
    std::memcpy(&f, &u, 4);
    return f;
  }
  if ((em >> 3) == 0) {
    f = static_cast<float>(em) * 0.001953125f;  // subnormal: m * 2^-9 (exact)
  } else {
    // Normal: rebias the exponent (7 -> 127) and move the 3 mantissa bits to the top of f32's 23.
    const uint32_t u = (em + ((127u - 7u) << 3)) << 20;
    std::memcpy(&f, &u, 4);
  }
  return sign ? -f : f;
}

// Round to nearest, ties to even; magnitudes past 448 (and infinities) saturate to +-448, NaN
// stays NaN (sign kept).
LOCR_HOST_DEVICE inline uint8_t f32_to_fp8_e4m3(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7f);
  float a;
  std::memcpy(&a, &u, 4);
  uint32_t code;
  if (a < 0.015625f) {
    // Below 2^-6 the E4M3 grid is the subnormal step 2^-9: a * 512 is exact, rounded to an integer
    // 0..8 (ties to even, the default rounding mode); 8 is code 0x08 = 2^-6, the next binade.
    code = static_cast<uint32_t>(std::nearbyint(a * 512.0f));
  } else {
    // Keep 3 of the 23 mantissa bits with round-to-nearest-even on the dropped 20 (a carry moves
    // into the exponent as it should), then rebias the exponent 127 -> 7.
    const uint32_t r = u + 0x7ffffu + ((u >> 20) & 1u);
    code = (r >> 20) - ((127u - 7u) << 3);
  }
  // Past 464 (the tie between 448 and 480 goes to 448, the even one) the nearest is 480 or more,
  // which E4M3 cannot hold (0x7f is NaN): saturate.
  if (code > 0x7e) code = 0x7e;
  return static_cast<uint8_t>(sign | code);
}

// The scale of one KV head stored as E4M3 (kernels::KvLayer): amax / 448, so the largest magnitude
// maps to 448 and every head uses the whole range; at least FLT_MIN, so 1 / scale is finite. NaN
// when the head holds a non-finite value (`finite` false), so attention sees NaN rather than a
// clipped value. Element x is then stored as f32_to_fp8_e4m3(x * (1.0f / scale)).
LOCR_HOST_DEVICE inline float fp8_e4m3_head_scale(float amax, bool finite) {
  if (!finite) return std::numeric_limits<float>::quiet_NaN();
  const float s = amax / kFp8E4M3Max;
  return s > std::numeric_limits<float>::min() ? s : std::numeric_limits<float>::min();
}

}  // namespace locr
