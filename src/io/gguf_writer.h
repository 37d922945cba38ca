// GGUF writer (llama.cpp's model file), the inverse of io/gguf.h: GGUF v3, little-endian, written as
// gguf-py's GGUFWriter does (what convert_hf_to_gguf.py uses): the header, the metadata in the
// order it was added, the tensor infos in the order they were added, padding to the alignment
// (`general.alignment` when set, else 32), then each tensor's bytes, each followed by padding to
// the alignment. Offsets are from the data section's start, each a multiple of the alignment.
//
// The writer knows nothing of quantization: a tensor is given as ggml type, ne (ggml order, ne[0]
// the fastest-varying: the reverse of the row-major shape) and a function that produces its bytes
// when the file is written, one tensor at a time (so a model is never held in memory twice). The
// bytes' count is checked against what the type and ne say.
//
// write() goes to PATH.tmp and renames it over PATH at the end: a failed or interrupted write never
// leaves a half-written PATH (the temporary file is removed on error).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf.h"

namespace locr::io {

class GgufWriter {
 public:
  GgufWriter() = default;

  // Scalars. A key added twice is a kInvalidArgument error naming it.
  void add_u8(const std::string& key, uint8_t v);
  void add_i8(const std::string& key, int8_t v);
  void add_u16(const std::string& key, uint16_t v);
  void add_i16(const std::string& key, int16_t v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_f32(const std::string& key, float v);
  void add_u64(const std::string& key, uint64_t v);
  void add_i64(const std::string& key, int64_t v);
  void add_f64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  // An array whose elements are of type `elem` (numbers, bools or strings as JSON values that fit
  // it); with elem = kArray each element is itself a JSON array of `inner` elements. A value that
  // does not fit its type is a kInvalidArgument error naming the key.
  void add_array(const std::string& key, GgufValueType elem, const nlohmann::json& values,
                 GgufValueType inner = GgufValueType::kI32);
  // general.alignment (u32): a power of two up to 1 MiB; the data is aligned to it.
  void set_alignment(uint32_t alignment);

  // A tensor of ggml type `type` and shape `ne` (1 to 4 dims, ne[0] a whole number of the type's
  // blocks); `bytes` is called once, while write() runs, and must return exactly the tensor's size.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::function<std::string()> bytes);
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::string bytes);

  uint64_t alignment() const { return alignment_; }
  size_t tensor_count() const { return tensors_.size(); }
  // Bytes a tensor of this type and ne takes (throws naming `name` when ne[0] is not whole blocks).
  static uint64_t tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne);

  // Writes the file (PATH.tmp, then renamed to PATH). Returns the file's size.
  uint64_t write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    uint64_t bytes = 0, offset = 0;
    std::function<std::string()> data;
  };
  std::string kv_;  // the encoded key-values, in order
  uint64_t n_kv_ = 0;
  std::vector<std::string> keys_;
  std::vector<Tensor> tensors_;
  uint64_t alignment_ = 32;

  void begin_kv(const std::string& key, GgufValueType type);
};

}  // namespace locr::io
