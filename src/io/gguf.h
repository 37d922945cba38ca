// GGUF (llama.cpp's model file): a memory-mapped reader of the header, the metadata, the tensor
// infos and the tensors' bytes, and reference dequantization of the block formats llama.cpp writes
// for LightOnOCR (a text model of arch `qwen3` and an `mmproj` of arch `clip`).
//
// Layout (little-endian; GGUF v2 and v3): "GGUF", u32 version, u64 tensor count, u64 metadata
// count; metadata as (string key, u32 value type, value), strings as u64 length + bytes, arrays as
// u32 element type + u64 count + elements (arrays may nest); tensor infos as (string name, u32
// n_dims <= 4, u64 ne[n_dims] with ne[0] the fastest-varying dimension, u32 ggml type, u64 offset);
// then padding to `general.alignment` (default 32) and the data, each tensor at its offset (a
// multiple of the alignment) from the data's start. Every count, length, offset and size is
// checked against the file before it is used: a truncated or corrupt file, an absurd count or a
// tensor past the end is a clear error naming the file (and the key or tensor), never a read past
// the map nor an allocation the file cannot back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/file.h"

namespace locr::io {

// ggml's tensor types (ggml.h `enum ggml_type`), those a GGUF may hold.
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22, kIQ4_XS = 23,
  kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30, kTQ1_0 = 34, kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeInfo {
  const char* name;    // "Q8_0"
  int64_t block;       // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  bool dequantize;     // dequantize_row() reads it
};
// Null for a type number ggml does not define.
const GgmlTypeInfo* ggml_type_info(uint32_t type);

// GGUF metadata value types.
enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

struct GgufTensor {
  std::string name;
  uint32_t type = 0;        // GgmlType
  std::vector<int64_t> ne;  // ggml order: ne[0] varies fastest
  uint64_t offset = 0;      // from the data section's start
  uint64_t bytes = 0;
  int64_t elements = 0;
  // Row-major shape (ne reversed), as the same tensor has in a safetensors file.
  std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufFile {
 public:
  // Maps and parses `path`. Throws locr::Error naming the file and what is wrong.
  static std::shared_ptr<GgufFile> open(const std::string& path);
  // Parses bytes held elsewhere (they must outlive the result); `name` is used in errors.
  static std::shared_ptr<GgufFile> parse(std::string_view bytes, const std::string& name);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& name() const { return name_; }
  // Metadata values as JSON (numbers, booleans, strings, arrays), and each key's GGUF type (an
  // array's is kArray; its element type in array_types()).
  const nlohmann::json& metadata() const { return metadata_; }
  const std::map<std::string, GgufValueType>& types() const { return types_; }
  const std::map<std::string, GgufValueType>& array_types() const { return array_types_; }
  bool has(const std::string& key) const { return metadata_.contains(key); }

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  // Null when there is no tensor of that name.
  const GgufTensor* find(const std::string& name) const;
  // The tensor's bytes in the map.
  std::string_view data(const GgufTensor& t) const;
  // The tensor as float32 (row-major, shape()). Throws kUnsupported naming the type when
  // dequantize_row() cannot read it.
  std::vector<float> dequantize(const GgufTensor& t) const;

 private:
  std::shared_ptr<MappedFile> map_;
  std::string_view bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_start_ = 0;
  nlohmann::json metadata_ = nlohmann::json::object();
  std::map<std::string, GgufValueType> types_, array_types_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> index_;
  void parse_all();
};

// Reference dequantization (scalar, the formats of ggml-quants.c): `n` elements of `type` from
// `src` (n a multiple of the type's block) to `dst`. F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K. Throws kUnsupported naming any other type.
void dequantize_row(uint32_t type, const void* src, float* dst, int64_t n);

}  // namespace locr::io
