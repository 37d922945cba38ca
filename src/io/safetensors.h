// safetensors: memory-mapped reader (single file or sharded via model.safetensors.index.json)
// and a writer (used by `locr dump`, `locr make-model` and tests).
//
// Format: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets},
// "__metadata__": {...}}, then the raw data. Every offset and size is validated against the file so a
// truncated or corrupt file gives an error naming the tensor, never a read past the map.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "io/file.h"

namespace locr::io {

struct TensorInfo {
  DType dtype;
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte range relative to the data section
  std::string file;           // which file holds it
};

class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // A view into the map (no copy). Throws kNotFound naming the tensor and file.
  Tensor get(const std::string& name) const;
  const std::string& path() const { return map_->path(); }

 private:
  std::shared_ptr<MappedFile> map_;
  size_t data_start_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model directory: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json`.
class SafetensorsSet {
 public:
  static SafetensorsSet open_dir(const std::string& dir);
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  Tensor get(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  std::vector<std::string> names() const;
  // The names file by file, the files in path order (as shards sort) and each file's names in
  // order: the order in which llama.cpp's converter reads a checkpoint.
  std::vector<std::string> names_by_file() const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // name -> index in files_
  std::string dir_;
};

// Writes tensors (in the given order) to `path` atomically.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace locr::io
