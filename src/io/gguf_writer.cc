#include "io/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

#include "core/error.h"

namespace locr::io {

namespace {

using json = nlohmann::json;

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

template <typename T>
T integer(const json& v, const std::string& key) {
  bool ok = v.is_number_integer();
  if (ok) {
    if (v.is_number_unsigned() || v.get<int64_t>() >= 0) {
      const uint64_t u = v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
      ok = u <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else {
      ok = std::numeric_limits<T>::is_signed && v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min());
    }
  }
  if (!ok) fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': ", v.dump(), " does not fit its integer type");
  return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
}

// One value of type t (not an array) from JSON.
void put_value(std::string& out, GgufValueType t, const json& v, const std::string& key) {
  switch (t) {
    case GgufValueType::kU8: return put(out, integer<uint8_t>(v, key));
    case GgufValueType::kI8: return put(out, integer<int8_t>(v, key));
    case GgufValueType::kU16: return put(out, integer<uint16_t>(v, key));
    case GgufValueType::kI16: return put(out, integer<int16_t>(v, key));
    case GgufValueType::kU32: return put(out, integer<uint32_t>(v, key));
    case GgufValueType::kI32: return put(out, integer<int32_t>(v, key));
    case GgufValueType::kU64: return put(out, integer<uint64_t>(v, key));
    case GgufValueType::kI64: return put(out, integer<int64_t>(v, key));
    case GgufValueType::kF32:
    case GgufValueType::kF64:
      if (!v.is_number()) fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': ", v.dump(), " is not a number");
      if (t == GgufValueType::kF32) return put(out, v.get<float>());
      return put(out, v.get<double>());
    case GgufValueType::kBool:
      if (!v.is_boolean()) fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': ", v.dump(), " is not a bool");
      return put<uint8_t>(out, v.get<bool>() ? 1 : 0);
    case GgufValueType::kString:
      if (!v.is_string()) fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': ", v.dump(), " is not a string");
      return put_string(out, v.get_ref<const std::string&>());
    case GgufValueType::kArray:
      break;
  }
  fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': value type ", static_cast<uint32_t>(t), " is not a scalar");
}

bool known_type(GgufValueType t) { return static_cast<uint32_t>(t) <= static_cast<uint32_t>(GgufValueType::kF64); }

uint64_t pad_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

void GgufWriter::begin_kv(const std::string& key, GgufValueType type) {
  if (key.empty()) fail(ErrorKind::kInvalidArgument, "GGUF metadata: an empty key");
  if (std::find(keys_.begin(), keys_.end(), key) != keys_.end())
    fail(ErrorKind::kInvalidArgument, "GGUF metadata key '", key, "' added twice");
  keys_.push_back(key);
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(type));
  ++n_kv_;
}

void GgufWriter::add_u8(const std::string& k, uint8_t v) { begin_kv(k, GgufValueType::kU8); put(kv_, v); }
void GgufWriter::add_i8(const std::string& k, int8_t v) { begin_kv(k, GgufValueType::kI8); put(kv_, v); }
void GgufWriter::add_u16(const std::string& k, uint16_t v) { begin_kv(k, GgufValueType::kU16); put(kv_, v); }
void GgufWriter::add_i16(const std::string& k, int16_t v) { begin_kv(k, GgufValueType::kI16); put(kv_, v); }
void GgufWriter::add_u32(const std::string& k, uint32_t v) { begin_kv(k, GgufValueType::kU32); put(kv_, v); }
void GgufWriter::add_i32(const std::string& k, int32_t v) { begin_kv(k, GgufValueType::kI32); put(kv_, v); }
void GgufWriter::add_f32(const std::string& k, float v) { begin_kv(k, GgufValueType::kF32); put(kv_, v); }
void GgufWriter::add_u64(const std::string& k, uint64_t v) { begin_kv(k, GgufValueType::kU64); put(kv_, v); }
void GgufWriter::add_i64(const std::string& k, int64_t v) { begin_kv(k, GgufValueType::kI64); put(kv_, v); }
void GgufWriter::add_f64(const std::string& k, double v) { begin_kv(k, GgufValueType::kF64); put(kv_, v); }
void GgufWriter::add_bool(const std::string& k, bool v) { begin_kv(k, GgufValueType::kBool); put<uint8_t>(kv_, v ? 1 : 0); }
void GgufWriter::add_string(const std::string& k, const std::string& v) {
  begin_kv(k, GgufValueType::kString);
  put_string(kv_, v);
}

void GgufWriter::add_array(const std::string& key, GgufValueType elem, const json& values, GgufValueType inner) {
  if (!values.is_array()) fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': not an array");
  if (!known_type(elem) || (elem == GgufValueType::kArray && (!known_type(inner) || inner == GgufValueType::kArray)))
    fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': unsupported array element type");
  // Encode first, so that a bad element leaves nothing behind.
  std::string body;
  put<uint32_t>(body, static_cast<uint32_t>(elem));
  put<uint64_t>(body, values.size());
  for (const json& v : values) {
    if (elem != GgufValueType::kArray) {
      put_value(body, elem, v, key);
      continue;
    }
    if (!v.is_array()) fail(ErrorKind::kInvalidArgument, "GGUF metadata '", key, "': ", v.dump(), " is not an array");
    put<uint32_t>(body, static_cast<uint32_t>(inner));
    put<uint64_t>(body, v.size());
    for (const json& x : v) put_value(body, inner, x, key);
  }
  begin_kv(key, GgufValueType::kArray);
  kv_ += body;
}

void GgufWriter::set_alignment(uint32_t a) {
  if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 20))
    fail(ErrorKind::kInvalidArgument, "GGUF alignment must be a power of two up to 1 MiB, got ", a);
  add_u32("general.alignment", a);
  alignment_ = a;
}

uint64_t GgufWriter::tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne) {
  const GgmlTypeInfo* ti = ggml_type_info(static_cast<uint32_t>(type));
  if (!ti) fail(ErrorKind::kInvalidArgument, "GGUF tensor '", name, "': unknown ggml type ", static_cast<uint32_t>(type));
  if (ne.empty() || ne.size() > 4)
    fail(ErrorKind::kInvalidArgument, "GGUF tensor '", name, "' has ", ne.size(), " dimensions (1 to 4 are valid)");
  int64_t n = 1;
  for (int64_t d : ne) {
    if (d < 0) fail(ErrorKind::kInvalidArgument, "GGUF tensor '", name, "' has a negative dimension");
    n *= d;
  }
  if (ne[0] % ti->block != 0)
    fail(ErrorKind::kInvalidArgument, "GGUF tensor '", name, "' of type ", ti->name, " has rows of ", ne[0],
         " elements, not a multiple of its block (", ti->block, ")");
  return static_cast<uint64_t>(n / ti->block) * static_cast<uint64_t>(ti->block_bytes);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                            std::function<std::string()> bytes) {
  if (name.empty()) fail(ErrorKind::kInvalidArgument, "GGUF tensor: an empty name");
  for (const Tensor& t : tensors_)
    if (t.name == name) fail(ErrorKind::kInvalidArgument, "GGUF tensor '", name, "' added twice");
  Tensor t;
  t.bytes = tensor_bytes(name, type, ne);
  t.name = name;
  t.type = type;
  t.ne = std::move(ne);
  t.data = std::move(bytes);
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::string bytes) {
  auto held = std::make_shared<std::string>(std::move(bytes));
  add_tensor(name, type, std::move(ne), [held] { return *held; });
}

uint64_t GgufWriter::write(const std::string& path) const {
  std::string head;
  head.append("GGUF", 4);
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, n_kv_);
  head += kv_;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(head, static_cast<uint64_t>(d));
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, offset);
    offset += pad_to(t.bytes, alignment_);
  }
  head.resize(pad_to(head.size(), alignment_), '\0');

  const std::string tmp = path + ".tmp";
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(ErrorKind::kIo, "cannot write ", tmp, ": ", std::strerror(errno));
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    const std::string zeros(alignment_, '\0');
    for (const Tensor& t : tensors_) {
      const std::string b = t.data();
      if (b.size() != t.bytes)
        fail(ErrorKind::kInternal, "GGUF tensor '", t.name, "': ", b.size(), " bytes produced, ", t.bytes, " expected");
      out.write(b.data(), static_cast<std::streamsize>(b.size()));
      out.write(zeros.data(), static_cast<std::streamsize>(pad_to(t.bytes, alignment_) - t.bytes));
      if (!out) fail(ErrorKind::kIo, "write failed for ", tmp, ": ", std::strerror(errno));
    }
    out.close();
    if (!out) fail(ErrorKind::kIo, "write failed for ", tmp, ": ", std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      fail(ErrorKind::kIo, "cannot rename ", tmp, " to ", path, ": ", std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  return head.size() + offset;
}

}  // namespace locr::io
