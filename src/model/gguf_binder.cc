#include "model/gguf_binder.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "core/tensor.h"
#include "io/file.h"

namespace locr::model {

using nlohmann::json;

const json* gguf_meta(const io::GgufFile& f, const std::string& key) {
  return f.has(key) ? &f.metadata()[key] : nullptr;
}

int64_t gguf_meta_int(const io::GgufFile& f, const std::string& key, int64_t def, bool required) {
  const json* v = gguf_meta(f, key);
  if (!v) {
    if (required) fail(ErrorKind::kInvalidArgument, f.name(), ": metadata key '", key, "' is missing");
    return def;
  }
  if (!v->is_number_integer())
    fail(ErrorKind::kInvalidArgument, f.name(), ": metadata key '", key, "' is not an integer (", v->dump(), ")");
  const int64_t x = v->get<int64_t>();
  if (required && x <= 0) fail(ErrorKind::kInvalidArgument, f.name(), ": metadata key '", key, "' must be positive, got ", x);
  return x;
}

int gguf_meta_i32(const io::GgufFile& f, const std::string& key, int64_t def, bool required) {
  const int64_t v = gguf_meta_int(f, key, def, required);
  if (v > (1 << 30) || v < -(1 << 30))
    fail(ErrorKind::kInvalidArgument, f.name(), ": metadata key '", key, "' is too large (", v, ")");
  return static_cast<int>(v);
}

double gguf_meta_float(const io::GgufFile& f, const std::string& key, double def) {
  const json* v = gguf_meta(f, key);
  if (!v) return def;
  if (!v->is_number()) fail(ErrorKind::kInvalidArgument, f.name(), ": metadata key '", key, "' is not a number");
  return v->get<double>();
}

std::string gguf_meta_string(const io::GgufFile& f, const std::string& key) {
  const json* v = gguf_meta(f, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

bool gguf_meta_bool(const io::GgufFile& f, const std::string& key, bool def) {
  const json* v = gguf_meta(f, key);
  return v && v->is_boolean() ? v->get<bool>() : def;
}

void gguf_mean_std(const io::GgufFile& m, std::array<float, 3>* mean, std::array<float, 3>* std) {
  for (const auto& [k, dst] : {std::pair{"clip.vision.image_mean", mean}, std::pair{"clip.vision.image_std", std}}) {
    const json* a = gguf_meta(m, k);
    if (!a) continue;
    if (!a->is_array() || a->size() != 3)
      fail(ErrorKind::kInvalidArgument, m.name(), ": metadata ", k, " is not an array of 3 numbers");
    for (int i = 0; i < 3; ++i) (*dst)[i] = (*a)[i].get<float>();
  }
}

std::shared_ptr<io::GgufFile> open_mmproj(const std::string& path, const std::string& projector, ErrorKind kind,
                                          const std::string& why) {
  auto f = io::GgufFile::open(path);
  const std::string arch = gguf_meta_string(*f, "general.architecture");
  if (arch != "clip")
    fail(ErrorKind::kInvalidArgument, path, ": --mmproj needs an mmproj GGUF (general.architecture 'clip'), "
         "this one is '", arch, "'");
  const std::string proj = gguf_meta_string(*f, "clip.projector_type");
  if (proj != projector) fail(kind, path, ": clip.projector_type is '", proj, "'; ", why);
  if (!gguf_meta_bool(*f, "clip.has_vision_encoder", false))
    fail(ErrorKind::kInvalidArgument, path, ": clip.has_vision_encoder is not true: the mmproj has no vision encoder");
  return f;
}

DType native_quantized_dtype(uint32_t type, int64_t cols) {
  if (type == static_cast<uint32_t>(io::GgmlType::kQ8_0) && cols % 32 == 0) return DType::kQ8_0;
  if (type == static_cast<uint32_t>(io::GgmlType::kQ4_K) && cols % 256 == 0) return DType::kQ4_K;
  if (type == static_cast<uint32_t>(io::GgmlType::kQ6_K) && cols % 256 == 0) return DType::kQ6_K;
  return DType::kF32;
}

Matrix bind_gguf_matrix(const std::shared_ptr<io::GgufFile>& file, const io::GgufTensor& t, int64_t rows,
                        int64_t cols, DType dequantize_to, const std::vector<int64_t>* row_of, bool keep_quantized) {
  LOCR_CHECK(rows * cols == t.elements, "bind_gguf_matrix: ", t.name, " shape");
  const std::string_view bytes = file->data(t);
  const DType kept = keep_quantized ? native_quantized_dtype(t.type, cols) : DType::kF32;
  if (kept != DType::kF32) {
    // Q8_0 / Q4_K / Q6_K rows are independent runs of blocks: used in place, or rows copied for a permutation.
    Matrix m;
    m.dtype = kept;
    m.rows = rows;
    m.cols = cols;
    const int64_t row_bytes = dtype_row_bytes(kept, cols);
    LOCR_CHECK(static_cast<int64_t>(bytes.size()) == rows * row_bytes, "bind_gguf_matrix: ", t.name, " ",
               dtype_name(kept), " size");
    if (!row_of) {
      m.data = bytes.data();
      m.holder = file;
      return m;
    }
    auto buf = std::make_shared<std::vector<char>>(bytes.size());
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(buf->data() + r * row_bytes, bytes.data() + (*row_of)[r] * row_bytes, static_cast<size_t>(row_bytes));
    io::release_pages(bytes.data(), bytes.size());
    m.data = buf->data();
    m.holder = std::shared_ptr<void>(buf, buf.get());
    return m;
  }
  DType native;
  const bool plain = t.type == static_cast<uint32_t>(io::GgmlType::kF32) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kF16) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kBF16);
  native = t.type == static_cast<uint32_t>(io::GgmlType::kF32)   ? DType::kF32
           : t.type == static_cast<uint32_t>(io::GgmlType::kF16) ? DType::kF16
                                                                  : DType::kBF16;
  const std::vector<int64_t> shape = rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
  if (plain && !row_of) {
    // Zero-copy: the file's map is the storage.
    return Matrix::from_tensor(Tensor(native, shape, const_cast<char*>(bytes.data()), file));
  }
  const DType out_type = plain ? native : dequantize_to;
  Tensor out = Tensor::empty(out_type, shape);
  const size_t row_bytes = bytes.size() / static_cast<size_t>(rows);
  const size_t out_row = static_cast<size_t>(cols) * dtype_size(out_type);
  std::vector<float> tmp(plain ? 0 : static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = row_of ? (*row_of)[r] : r;
    const char* in = bytes.data() + static_cast<size_t>(src) * row_bytes;
    char* dst = static_cast<char*>(out.raw()) + static_cast<size_t>(r) * out_row;
    if (plain) {
      std::memcpy(dst, in, row_bytes);
      continue;
    }
    io::dequantize_row(t.type, in, tmp.data(), cols);
    if (out_type == DType::kF32) {
      std::memcpy(dst, tmp.data(), out_row);
    } else {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t c = 0; c < cols; ++c) d[c] = f32_to_bf16(tmp[c]);
    }
  }
  // The file's pages of this tensor are not read again: hand them back (advisory).
  io::release_pages(bytes.data(), bytes.size());
  return Matrix::from_tensor(out);
}

GgufBinder::GgufBinder(std::shared_ptr<io::GgufFile> f, std::string family, DType dequantize_to, kernels::Ops* pack,
                       bool keep_quantized)
    : f_(std::move(f)), family_(std::move(family)), to_(dequantize_to), pack_(pack), keep_quantized_(keep_quantized) {}

const io::GgufTensor& GgufBinder::find_checked(const std::string& name, const std::vector<int64_t>& shape) {
  const io::GgufTensor* t = f_->find(name);
  if (!t)
    fail(ErrorKind::kNotFound, f_->name(), " is missing tensor '", name, "' (expected shape ", shape_to_string(shape),
         "); is this a ", family_, " GGUF made by llama.cpp's converter, complete and unmodified?");
  std::vector<int64_t> got = t->shape();
  // The conv kernel [out, c, p, p] for a flattened [out, c*p*p] expectation (row-major (c, ky, kx)).
  if (shape.size() == 2 && got.size() == 4 && got[0] == shape[0] && got[1] * got[2] * got[3] == shape[1]) got = shape;
  if (got != shape)
    fail(ErrorKind::kInvalidArgument, f_->name(), ": tensor '", name, "' has shape ", shape_to_string(t->shape()),
         ", expected ", shape_to_string(shape), " from the metadata; the file and its metadata do not match");
  const io::GgmlTypeInfo* ti = io::ggml_type_info(t->type);
  if (!ti || !ti->dequantize)
    fail(ErrorKind::kUnsupported, f_->name(), ": tensor '", name, "' is of type ", ti ? ti->name : "unknown",
         ", which locr does not read (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  used_.insert(name);
  return *t;
}

const io::GgufTensor& GgufBinder::tensor(const std::string& name, const std::vector<int64_t>& shape) {
  return find_checked(name, shape);
}

std::vector<float> GgufBinder::floats(const std::string& name, const std::vector<int64_t>& shape) {
  const io::GgufTensor& t = find_checked(name, shape);
  const bool plain = t.type == static_cast<uint32_t>(io::GgmlType::kF32) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kF16) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kBF16);
  if (!plain) ++quantized_[io::ggml_type_info(t.type)->name];
  return f_->dequantize(t);
}

Matrix GgufBinder::get(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>* row_of) {
  const io::GgufTensor& t = find_checked(name, shape);
  const bool plain = t.type == static_cast<uint32_t>(io::GgmlType::kF32) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kF16) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kBF16);
  const bool native = keep_quantized_ && shape.size() == 2 && native_quantized_dtype(t.type, shape[1]) != DType::kF32;
  if (!plain) ++(native ? native_ : quantized_)[io::ggml_type_info(t.type)->name];
  const int64_t rows = shape.size() == 1 ? 1 : shape[0];
  const int64_t cols = shape.size() == 1 ? shape[0] : shape[1];
  Matrix m = bind_gguf_matrix(f_, t, rows, cols, to_, row_of, native);
  // A buffer of our own (dequantized or permuted) feeding a matmul: packed now and dropped, so
  // that the load never holds all of them and all the packed copies at once. (The embedding
  // table is gathered from, not packed; mapped tensors are packed by the model afterwards.)
  if (pack_ && shape.size() == 2 && name != "token_embd.weight" && m.data != f_->data(t).data()) {
    pack_->prepare(m);
    if (m.packed) {
      m.data = nullptr;
      m.holder.reset();
    }
  }
  return m;
}

void GgufBinder::finish() const {
  std::vector<std::string> unused;
  for (const io::GgufTensor& t : f_->tensors())
    if (!used_.count(t.name)) unused.push_back(t.name);
  if (!unused.empty()) {
    std::sort(unused.begin(), unused.end());
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 8; ++i) list += (i ? ", '" : "'") + unused[i] + "'";
    if (unused.size() > 8) list += ", ...";
    fail(ErrorKind::kUnsupported, f_->name(), ": tensor", unused.size() > 1 ? "s " : " ", list, " (", unused.size(),
         " in all) ", unused.size() > 1 ? "are" : "is", " not read by locr: a ", family_,
         " GGUF has no such tensor, and ignoring it would compute something else than the file describes");
  }
  auto count = [](const std::map<std::string, int>& m, int* n) {
    std::string kinds;
    for (const auto& [k, c] : m) {
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(c) + " " + k;
      *n += c;
    }
    return kinds;
  };
  int n = 0, q = 0;
  const std::string native = count(native_, &n), kinds = count(quantized_, &q);
  if (n > 0)
    LOCR_INFO("gguf: ", f_->name(), ": ", native, " tensor", n > 1 ? "s" : "", " run by the quantized-weight kernels, never dequantized (repacked in groups of 16 rows)");
  if (q > 0)
    LOCR_INFO("gguf: ", f_->name(), ": ", kinds, " tensor", q > 1 ? "s" : "", " dequantized once at load to ",
              dtype_name(to_), keep_quantized_ ? " (native kernels exist for Q8_0, Q4_K and Q6_K only)"
                                               : " (this backend has no kernels for quantized weights)");
}

}  // namespace locr::model
