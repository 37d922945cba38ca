#include "core/tensor.h"

#include <cstdlib>
#include <cstring>

#include "core/heap.h"

namespace locr {

namespace {
std::shared_ptr<void> aligned_alloc_bytes(size_t bytes) {
  void* p = alloc_aligned(bytes);
  if (!p) fail(ErrorKind::kLimit, "out of memory allocating ", bytes, " bytes");
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t(dtype, std::move(shape), nullptr);
  auto holder = aligned_alloc_bytes(t.nbytes());
  t.data_ = holder.get();
  t.holder_ = std::move(holder);
  return t;
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t = empty(dtype, std::move(shape));
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  Tensor t(dtype_, std::move(shape), data_, holder_);
  LOCR_CHECK(t.numel() == numel(), "reshape ", shape_str(), " -> ", t.shape_str());
  return t;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  LOCR_CHECK(ndim() >= 1 && begin >= 0 && begin <= end && end <= shape_[0]);
  std::vector<int64_t> s = shape_;
  s[0] = end - begin;
  const size_t row_bytes = shape_[0] == 0 ? 0 : nbytes() / static_cast<size_t>(shape_[0]);
  return Tensor(dtype_, std::move(s), static_cast<char*>(data_) + begin * row_bytes, holder_);
}

Tensor Tensor::to_f32() const {
  Tensor t = empty(DType::kF32, shape_);
  convert_to_f32(dtype_, data_, t.data<float>(), static_cast<size_t>(numel()));
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string Tensor::shape_str() const { return shape_to_string(shape_); }

}  // namespace locr
