#include "io/gguf.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace locr::io {

namespace {

using json = nlohmann::json;

constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;        // arrays of arrays of ...
constexpr uint64_t kMaxKeyBytes = 65535;  // a key longer than this is not a key

const GgmlTypeInfo kTypes[] = {
    {"F32", 1, 4, true},       {"F16", 1, 2, true},      {"Q4_0", 32, 18, true},    {"Q4_1", 32, 20, true},
    {nullptr, 0, 0, false},    {nullptr, 0, 0, false},   {"Q5_0", 32, 22, true},    {"Q5_1", 32, 24, true},
    {"Q8_0", 32, 34, true},    {"Q8_1", 32, 36, false},  {"Q2_K", 256, 84, false},  {"Q3_K", 256, 110, false},
    {"Q4_K", 256, 144, true},  {"Q5_K", 256, 176, true}, {"Q6_K", 256, 210, true},  {"Q8_K", 256, 292, false},
    {"IQ2_XXS", 256, 66, false}, {"IQ2_XS", 256, 74, false}, {"IQ3_XXS", 256, 98, false}, {"IQ1_S", 256, 50, false},
    {"IQ4_NL", 32, 18, false}, {"IQ3_S", 256, 110, false}, {"IQ2_S", 256, 82, false}, {"IQ4_XS", 256, 136, false},
    {"I8", 1, 1, false},       {"I16", 1, 2, false},     {"I32", 1, 4, false},      {"I64", 1, 8, false},
    {"F64", 1, 8, false},      {"IQ1_M", 256, 56, false}, {"BF16", 1, 2, true},     {nullptr, 0, 0, false},
    {nullptr, 0, 0, false},    {nullptr, 0, 0, false},   {"TQ1_0", 256, 54, false}, {"TQ2_0", 256, 66, false},
    {nullptr, 0, 0, false},    {nullptr, 0, 0, false},   {nullptr, 0, 0, false},    {"MXFP4", 32, 17, false},
};

// Bounds-checked little-endian reads over the file's bytes.
class Reader {
 public:
  Reader(std::string_view b, const std::string& name) : b_(b), name_(name) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return b_.size() - pos_; }
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const char* what, uint64_t max_len = UINT64_MAX) {
    const uint64_t n = get<uint64_t>(what);
    if (n > max_len) bad(what, " is ", n, " bytes long, more than ", max_len);
    need(n, what);
    std::string s(b_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  void need(uint64_t n, const char* what) const {
    if (n > left())
      fail(ErrorKind::kInvalidArgument, name_, ": truncated GGUF file: ", what, " needs ", n, " bytes at offset ", pos_,
           " but the file has ", left(), " left (re-download or re-convert it)");
  }
  template <typename... A>
  [[noreturn]] void bad(A&&... a) const {
    fail(ErrorKind::kInvalidArgument, name_, ": corrupt GGUF file (offset ", pos_, "): ", std::forward<A>(a)...);
  }

 private:
  std::string_view b_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

// The smallest size a value of type t takes in the file (so an array count can be checked against
// what is left before anything is allocated); 0 for an unknown type.
uint64_t min_size(uint32_t t) {
  switch (static_cast<GgufValueType>(t)) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 0;
}

json read_value(Reader& r, uint32_t type, const std::string& key, int depth, uint32_t* elem_type) {
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::kU8: return r.get<uint8_t>(key.c_str());
    case GgufValueType::kI8: return r.get<int8_t>(key.c_str());
    case GgufValueType::kU16: return r.get<uint16_t>(key.c_str());
    case GgufValueType::kI16: return r.get<int16_t>(key.c_str());
    case GgufValueType::kU32: return r.get<uint32_t>(key.c_str());
    case GgufValueType::kI32: return r.get<int32_t>(key.c_str());
    case GgufValueType::kF32: return r.get<float>(key.c_str());
    case GgufValueType::kU64: return r.get<uint64_t>(key.c_str());
    case GgufValueType::kI64: return r.get<int64_t>(key.c_str());
    case GgufValueType::kF64: return r.get<double>(key.c_str());
    case GgufValueType::kBool: {
      const uint8_t b = r.get<uint8_t>(key.c_str());
      if (b > 1) r.bad("metadata '", key, "' is a bool of value ", int{b});
      return b == 1;
    }
    case GgufValueType::kString: return r.str(key.c_str());
    case GgufValueType::kArray: {
      if (depth >= kMaxArrayDepth) r.bad("metadata '", key, "' nests arrays deeper than ", kMaxArrayDepth);
      const uint32_t et = r.get<uint32_t>(key.c_str());
      const uint64_t n = r.get<uint64_t>(key.c_str());
      const uint64_t each = min_size(et);
      if (each == 0) r.bad("metadata '", key, "' is an array of unknown value type ", et);
      if (n > r.left() / each)
        r.bad("metadata '", key, "' claims ", n, " elements, more than the ", r.left(), " bytes left can hold");
      if (elem_type) *elem_type = et;
      json a = json::array();
      a.get_ref<json::array_t&>().reserve(n);
      for (uint64_t i = 0; i < n; ++i) a.push_back(read_value(r, et, key, depth + 1, nullptr));
      return a;
    }
  }
  r.bad("metadata '", key, "' has unknown value type ", type);
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
  if (type >= sizeof(kTypes) / sizeof(kTypes[0]) || kTypes[type].name == nullptr) return nullptr;
  return &kTypes[type];
}

std::shared_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto f = std::shared_ptr<GgufFile>(new GgufFile());
  f->map_ = MappedFile::open(path);
  f->bytes_ = std::string_view(f->map_->data(), f->map_->size());
  f->name_ = path;
  f->parse_all();
  return f;
}

std::shared_ptr<GgufFile> GgufFile::parse(std::string_view bytes, const std::string& name) {
  auto f = std::shared_ptr<GgufFile>(new GgufFile());
  f->bytes_ = bytes;
  f->name_ = name;
  f->parse_all();
  return f;
}

void GgufFile::parse_all() {
  Reader r(bytes_, name_);
  if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0)
    fail(ErrorKind::kInvalidArgument, name_, ": not a GGUF file (it does not start with \"GGUF\")");
  r.get<uint32_t>("the magic");
  version_ = r.get<uint32_t>("the version");
  if (version_ == 1)
    fail(ErrorKind::kUnsupported, name_, ": GGUF version 1 (2023) is not supported; convert the model again with a "
                                         "current llama.cpp (convert_hf_to_gguf.py)");
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xFFFF) == 0 && version_ != 0)
      fail(ErrorKind::kUnsupported, name_, ": a big-endian GGUF file; locr reads little-endian ones");
    fail(ErrorKind::kUnsupported, name_, ": GGUF version ", version_, " is not supported (versions 2 and 3 are)");
  }
  const uint64_t n_tensors = r.get<uint64_t>("the tensor count");
  const uint64_t n_kv = r.get<uint64_t>("the metadata count");
  // A key-value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info 8 + 4 + 8 + 4 + 8.
  if (n_kv > r.left() / 13) r.bad("it claims ", n_kv, " metadata entries, more than its ", r.left(), " bytes can hold");
  if (n_tensors > r.left() / 32) r.bad("it claims ", n_tensors, " tensors, more than its ", r.left(), " bytes can hold");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.str("a metadata key", kMaxKeyBytes);
    if (metadata_.contains(key)) r.bad("metadata key '", key, "' appears twice");
    const uint32_t type = r.get<uint32_t>(key.c_str());
    uint32_t elem = 0;
    json v = read_value(r, type, key, 0, &elem);
    types_[key] = static_cast<GgufValueType>(type);
    if (type == static_cast<uint32_t>(GgufValueType::kArray)) array_types_[key] = static_cast<GgufValueType>(elem);
    metadata_[key] = std::move(v);
  }
  if (metadata_.contains("general.alignment")) {
    const json& a = metadata_["general.alignment"];
    if (!a.is_number_unsigned() || a.get<uint64_t>() == 0 || (a.get<uint64_t>() & (a.get<uint64_t>() - 1)) != 0 ||
        a.get<uint64_t>() > (1u << 20))
      r.bad("general.alignment must be a power of two up to 1 MiB, got ", a.dump());
    alignment_ = a.get<uint64_t>();
  }
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = r.str("a tensor name", kMaxKeyBytes);
    if (index_.count(t.name)) r.bad("tensor '", t.name, "' appears twice");
    const uint32_t n_dims = r.get<uint32_t>(t.name.c_str());
    if (n_dims == 0 || n_dims > kMaxDims) r.bad("tensor '", t.name, "' has ", n_dims, " dimensions (1 to 4 are valid)");
    t.elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = r.get<uint64_t>(t.name.c_str());
      if (ne > (uint64_t{1} << 40) || (ne != 0 && static_cast<uint64_t>(t.elements) > (uint64_t{1} << 50) / ne))
        r.bad("tensor '", t.name, "' has an absurd shape (dimension ", d, " is ", ne, ")");
      t.ne.push_back(static_cast<int64_t>(ne));
      t.elements *= static_cast<int64_t>(ne);
    }
    t.type = r.get<uint32_t>(t.name.c_str());
    t.offset = r.get<uint64_t>(t.name.c_str());
    const GgmlTypeInfo* ti = ggml_type_info(t.type);
    if (!ti) r.bad("tensor '", t.name, "' has unknown ggml type ", t.type);
    if (t.ne[0] % ti->block != 0)
      r.bad("tensor '", t.name, "' of type ", ti->name, " has rows of ", t.ne[0], " elements, not a multiple of its block (",
            ti->block, ")");
    t.bytes = static_cast<uint64_t>(t.elements / ti->block) * static_cast<uint64_t>(ti->block_bytes);
    if (t.offset % alignment_ != 0)
      r.bad("tensor '", t.name, "' starts at data offset ", t.offset, ", not a multiple of the alignment ", alignment_);
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  data_start_ = (r.pos() + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t data_size = data_start_ <= bytes_.size() ? bytes_.size() - data_start_ : 0;
  for (const GgufTensor& t : tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      fail(ErrorKind::kInvalidArgument, name_, ": tensor '", t.name, "' (", t.bytes, " bytes at data offset ", t.offset,
           ") lies past the end of the file (", data_size, " data bytes): the file is truncated; re-download it");
  }
}

const GgufTensor* GgufFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::string_view GgufFile::data(const GgufTensor& t) const {
  return bytes_.substr(data_start_ + t.offset, t.bytes);
}

std::vector<float> GgufFile::dequantize(const GgufTensor& t) const {
  const GgmlTypeInfo* ti = ggml_type_info(t.type);
  if (!ti || !ti->dequantize)
    fail(ErrorKind::kUnsupported, name_, ": tensor '", t.name, "' is of type ", ti ? ti->name : "unknown",
         ", which locr does not read (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  std::vector<float> out(static_cast<size_t>(t.elements));
  dequantize_row(t.type, data(t).data(), out.data(), t.elements);
  return out;
}

namespace {

float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// The 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace

void dequantize_row(uint32_t type, const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(src);
  const GgmlTypeInfo* ti = ggml_type_info(type);
  if (!ti || !ti->dequantize)
    fail(ErrorKind::kUnsupported, "dequantize: ggml type ", ti ? ti->name : std::to_string(type).c_str(), " is not supported");
  if (n % ti->block != 0) fail(ErrorKind::kInvalidArgument, "dequantize: ", n, " elements is not a whole number of ", ti->name, " blocks");
  if (n == 0) return;  // an empty tensor (its buffers may be null)
  const int64_t nb = n / ti->block;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      std::memcpy(y, b, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) y[i] = f16(b + 2 * i);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        y[i] = bf16_to_f32(h);
      }
      return;
    case GgmlType::kQ8_0:  // {f16 d; i8 qs[32]}
      for (int64_t i = 0; i < nb; ++i, b += 34, y += 32) {
        const float d = f16(b);
        for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(b[2 + j]));
      }
      return;
    case GgmlType::kQ4_0:  // {f16 d; u8 qs[16]}: low nibbles are elements 0..15, high 16..31
      for (int64_t i = 0; i < nb; ++i, b += 18, y += 32) {
        const float d = f16(b);
        for (int j = 0; j < 16; ++j) {
          y[j] = d * static_cast<float>((b[2 + j] & 0xF) - 8);
          y[j + 16] = d * static_cast<float>((b[2 + j] >> 4) - 8);
        }
      }
      return;
    case GgmlType::kQ4_1:  // {f16 d; f16 m; u8 qs[16]}
      for (int64_t i = 0; i < nb; ++i, b += 20, y += 32) {
        const float d = f16(b), m = f16(b + 2);
        for (int j = 0; j < 16; ++j) {
          y[j] = d * static_cast<float>(b[4 + j] & 0xF) + m;
          y[j + 16] = d * static_cast<float>(b[4 + j] >> 4) + m;
        }
      }
      return;
    case GgmlType::kQ5_0:  // {f16 d; u8 qh[4]; u8 qs[16]}: bit j of qh is element j's fifth bit
      for (int64_t i = 0; i < nb; ++i, b += 22, y += 32) {
        const float d = f16(b);
        uint32_t qh;
        std::memcpy(&qh, b + 2, 4);
        for (int j = 0; j < 16; ++j) {
          const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
          y[j] = d * static_cast<float>(((b[6 + j] & 0xF) | h0) - 16);
          y[j + 16] = d * static_cast<float>(((b[6 + j] >> 4) | h1) - 16);
        }
      }
      return;
    case GgmlType::kQ5_1:  // {f16 d; f16 m; u8 qh[4]; u8 qs[16]}
      for (int64_t i = 0; i < nb; ++i, b += 24, y += 32) {
        const float d = f16(b), m = f16(b + 2);
        uint32_t qh;
        std::memcpy(&qh, b + 4, 4);
        for (int j = 0; j < 16; ++j) {
          const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
          y[j] = d * static_cast<float>((b[8 + j] & 0xF) | h0) + m;
          y[j + 16] = d * static_cast<float>((b[8 + j] >> 4) | h1) + m;
        }
      }
      return;
    case GgmlType::kQ4_K:  // {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}
      for (int64_t i = 0; i < nb; ++i, b += 144) {
        const float d = f16(b), dmin = f16(b + 2);
        const uint8_t* sc = b + 4;
        const uint8_t* q = b + 16;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
          uint8_t s, m;
          scale_min_k4(is, sc, &s, &m);
          const float d1 = d * s, m1 = dmin * m;
          scale_min_k4(is + 1, sc, &s, &m);
          const float d2 = d * s, m2 = dmin * m;
          for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
          for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
        }
      }
      return;
    case GgmlType::kQ5_K:  // {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}
      for (int64_t i = 0; i < nb; ++i, b += 176) {
        const float d = f16(b), dmin = f16(b + 2);
        const uint8_t* sc = b + 4;
        const uint8_t* qh = b + 16;
        const uint8_t* ql = b + 48;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32) {
          uint8_t s, m;
          scale_min_k4(is, sc, &s, &m);
          const float d1 = d * s, m1 = dmin * m;
          scale_min_k4(is + 1, sc, &s, &m);
          const float d2 = d * s, m2 = dmin * m;
          for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
          for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
          u1 = static_cast<uint8_t>(u1 << 2);
          u2 = static_cast<uint8_t>(u2 << 2);
        }
      }
      return;
    case GgmlType::kQ6_K:  // {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}
      for (int64_t i = 0; i < nb; ++i, b += 210) {
        const float d = f16(b + 208);
        const uint8_t* ql = b;
        const uint8_t* qh = b + 128;
        const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
        for (int n128 = 0; n128 < 256; n128 += 128, ql += 64, qh += 32, sc += 8, y += 128) {
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * sc[is] * static_cast<float>(q1);
            y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
            y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
            y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
          }
        }
      }
      return;
    default:
      break;
  }
  fail(ErrorKind::kUnsupported, "dequantize: ggml type ", ti->name, " is not supported");
}

}  // namespace locr::io
