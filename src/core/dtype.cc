#include "core/dtype.h"

#include "core/error.h"

namespace locr {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kInfos[] = {
    {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2}, {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8}, {DType::kI64, "I64", 8}, {DType::kI32, "I32", 4},
    {DType::kI16, "I16", 2}, {DType::kI8, "I8", 1},   {DType::kU8, "U8", 1},
    {DType::kBool, "BOOL", 1},
};
}  // namespace

size_t dtype_size(DType t) {
  if (t == DType::kF8E4M3) return 1;
  for (const auto& i : kInfos)
    if (i.t == t) return i.size;
  return 0;
}

int64_t dtype_row_bytes(DType t, int64_t cols) {
  if (t == DType::kQ8_0) {
    if (cols % 32 != 0) fail(ErrorKind::kInvalidArgument, "a Q8_0 row of ", cols, " elements is not a whole number of 32-element blocks");
    return cols / 32 * 34;
  }
  if (t == DType::kQ4_K) {
    if (cols % 256 != 0) fail(ErrorKind::kInvalidArgument, "a Q4_K row of ", cols, " elements is not a whole number of 256-element super-blocks");
    return cols / 256 * 144;
  }
  if (t == DType::kQ6_K) {
    if (cols % 256 != 0) fail(ErrorKind::kInvalidArgument, "a Q6_K row of ", cols, " elements is not a whole number of 256-element super-blocks");
    return cols / 256 * 210;
  }
  return cols * static_cast<int64_t>(dtype_size(t));
}

const char* dtype_name(DType t) {
  if (t == DType::kQ8_0) return "Q8_0";
  if (t == DType::kQ4_K) return "Q4_K";
  if (t == DType::kQ6_K) return "Q6_K";
  if (t == DType::kF8E4M3) return "F8_E4M3";
  for (const auto& i : kInfos)
    if (i.t == t) return i.name;
  return "?";
}

bool parse_dtype(std::string_view s, DType* out) {
  for (const auto& i : kInfos)
    if (s == i.name) {
      *out = i.t;
      return true;
    }
  return false;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      u = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (absu >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absu < 0x38800000u) {  // subnormal or zero in f16
    if (absu < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exp = absu >> 23;
    uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;
    // round to nearest even on the dropped bits
    const uint32_t dropped = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    uint32_t r = mant >> shift;
    if (dropped > half || (dropped == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = absu - 0x38000000u;  // rebias exponent 127 -> 15
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  return static_cast<uint16_t>(sign | r);
}

void convert_to_f32(DType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::kF64: {
      const auto* s = static_cast<const double*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    default:
      fail(ErrorKind::kUnsupported, "cannot convert dtype ", dtype_name(t), " to F32");
  }
}

}  // namespace locr
