// Reading llama.cpp GGUF files into locr's weight structs, shared by both model families
// (model/lightonocr/gguf_checkpoint.h for LightOnOCR's `qwen3` + `mmproj`, model/qwen35/gguf.h for
// Qwen3.5's `qwen35` + `mmproj`): typed metadata getters that name the file and key when a value is
// missing or of the wrong type, bind_gguf_matrix (a tensor -> Matrix), and GgufBinder, which binds
// tensors by name with shape checks and refuses a file with tensors no code reads.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf.h"
#include "kernels/ops.h"

namespace locr::model {

using kernels::Matrix;

// The value of `key`, or null when absent.
const nlohmann::json* gguf_meta(const io::GgufFile& f, const std::string& key);
// An integer value; `def` when absent unless `required` (then absent or <= 0 is an error).
int64_t gguf_meta_int(const io::GgufFile& f, const std::string& key, int64_t def, bool required = false);
// As gguf_meta_int, checked to fit an int (at most 2^30).
int gguf_meta_i32(const io::GgufFile& f, const std::string& key, int64_t def, bool required = false);
double gguf_meta_float(const io::GgufFile& f, const std::string& key, double def);
// Empty when absent or not a string.
std::string gguf_meta_string(const io::GgufFile& f, const std::string& key);
bool gguf_meta_bool(const io::GgufFile& f, const std::string& key, bool def);

// clip.vision.image_mean / image_std into mean / std (each left as it is when its key is absent).
void gguf_mean_std(const io::GgufFile& mmproj, std::array<float, 3>* mean, std::array<float, 3>* std);

// Opens an mmproj GGUF (--mmproj) and checks it is one: arch 'clip', clip.has_vision_encoder, and
// clip.projector_type `projector` (else an error of `kind` ending with `why`).
std::shared_ptr<io::GgufFile> open_mmproj(const std::string& path, const std::string& projector, ErrorKind kind,
                                          const std::string& why);

// The one place a GGUF tensor becomes a Matrix [rows, cols]: F32, F16 and BF16 point into the
// mapped file, and so do Q8_0, Q4_K and Q6_K with `keep_quantized` (DType::kQ8_0 / kQ4_K / kQ6_K, run natively,
// when the rows are whole blocks: native_quantized_dtype); any other type is
// dequantized to `dequantize_to` into a buffer the Matrix owns. `row_of` (may be null) gives, for
// each output row, the file row it comes from (a copy then, in the same type).
Matrix bind_gguf_matrix(const std::shared_ptr<io::GgufFile>& file, const io::GgufTensor& t, int64_t rows,
                        int64_t cols, DType dequantize_to, const std::vector<int64_t>* row_of = nullptr,
                        bool keep_quantized = false);

// The DType a GGUF tensor of ggml type `type` with rows of `cols` runs as natively: kQ8_0, kQ4_K, kQ6_K, or
// kF32 meaning "not natively" (other types, or rows that are not a whole number of blocks).
DType native_quantized_dtype(uint32_t type, int64_t cols);

// Binds the tensors of one GGUF by name, as model/weight_binder.h does for safetensors.
class GgufBinder {
 public:
  // `family` names the model family in errors ("LightOnOCR", "Qwen3.5"). dequantize_to, pack and
  // keep_quantized: as load_gguf_weights (model/lightonocr/gguf_checkpoint.h).
  GgufBinder(std::shared_ptr<io::GgufFile> f, std::string family, DType dequantize_to, kernels::Ops* pack,
             bool keep_quantized);

  // The tensor `name` as a Matrix of `shape` ([n] or [rows, cols]; a 4-D conv kernel [out, c, p, p]
  // binds as [out, c*p*p]); `row_of`: bind_gguf_matrix's row permutation.
  Matrix get(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>* row_of = nullptr);
  Matrix vec(const std::string& name, int64_t n) { return get(name, {n}); }
  // The tensor `name` as F32 values in row-major order, checked to have `shape` (any rank) and marked read.
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& shape);
  // The tensor info of `name`, checked to have `shape` and marked read (for callers that rebuild it).
  const io::GgufTensor& tensor(const std::string& name, const std::vector<int64_t>& shape);
  bool has(const std::string& name) const { return f_->find(name) != nullptr; }
  const std::shared_ptr<io::GgufFile>& file() const { return f_; }
  DType dequantize_to() const { return to_; }
  bool keep_quantized() const { return keep_quantized_; }

  // Every tensor of the file is read: one that no code reads would compute something else than
  // the file describes. Then the one notice about dequantized tensors.
  void finish() const;

 private:
  const io::GgufTensor& find_checked(const std::string& name, const std::vector<int64_t>& shape);
  std::shared_ptr<io::GgufFile> f_;
  std::string family_;
  DType to_;
  kernels::Ops* pack_;
  bool keep_quantized_;
  std::unordered_set<std::string> used_;
  std::map<std::string, int> quantized_, native_;
};

}  // namespace locr::model
