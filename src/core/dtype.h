// Element types and scalar conversions (bf16/f16 <-> f32), portable (no ISA assumptions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/host_device.h"

namespace locr {

// kQ8_0, kQ4_K and kQ6_K are block types (GGUF's Q8_0: 32 int8 and an f16 scale in 34 bytes; Q4_K:
// 256 4-bit weights with 6-bit sub-block scales and mins in 144 bytes; Q6_K: 256 6-bit weights with
// an int8 scale per 16 and an f16 super-block scale in 210 bytes), only ever a weight matrix's
// dtype: dtype_size is 0 for them (use dtype_row_bytes), and parse_dtype never returns them.
// kF8E4M3 (core/fp8.h, 1 byte) is only ever the KV cache's element type (--kv-cache-dtype fp8,
// with scales beside it, model::KvPool); parse_dtype never returns it either.
enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool, kQ8_0, kQ4_K, kF8E4M3, kQ6_K };

size_t dtype_size(DType t);
// Bytes of one row of `cols` elements (block types: cols must be a whole number of blocks).
int64_t dtype_row_bytes(DType t, int64_t cols);
const char* dtype_name(DType t);  // safetensors spelling: "F32", "BF16", ...
// Parses a safetensors dtype string; returns false if unknown.
bool parse_dtype(std::string_view s, DType* out);

LOCR_HOST_DEVICE inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN preserved (as torch does). Host and device (core/host_device.h).
LOCR_HOST_DEVICE inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Converts n elements of type t at src to f32.
void convert_to_f32(DType t, const void* src, float* dst, size_t n);

}  // namespace locr
