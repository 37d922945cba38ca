// Tensor: a typed, shaped, contiguous (row-major) block of memory, owning or borrowed.
//
// Deliberately not a graph or autograd type: the model calls ops on these as plain 2-D/3-D views.
// `holder_` keeps the storage alive (a heap buffer or a memory-mapped file); copies share it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace locr {

class Tensor {
 public:
  Tensor() = default;
  // Borrowed view: `holder` (may be null) keeps `data` alive.
  Tensor(DType dtype, std::vector<int64_t> shape, void* data, std::shared_ptr<void> holder = nullptr)
      : dtype_(dtype), shape_(std::move(shape)), data_(data), holder_(std::move(holder)) {}

  // Newly allocated, 64-byte aligned, uninitialised / zeroed.
  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + ndim() : i]; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool defined() const { return data_ != nullptr || numel() == 0; }
  bool empty_tensor() const { return data_ == nullptr; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() { return static_cast<T*>(data_); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }

  // Same storage, new shape with the same element count.
  Tensor reshape(std::vector<int64_t> shape) const;
  // Rows [begin, end) along the first dimension, sharing storage.
  Tensor slice_rows(int64_t begin, int64_t end) const;
  // Deep copy converted to F32 (any float dtype).
  Tensor to_f32() const;
  Tensor clone() const;

  std::string shape_str() const;

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> holder_;
};

std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace locr
