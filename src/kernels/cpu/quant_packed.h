// A quantized weight matrix in a CPU kernel's own layout (q8_0_block.h, q4_k_block.h, q6_k_block.h:
// groups of 16 rows), made once at load by pack_q8_0 / pack_q4_k / pack_q6_k from GGUF rows: its
// dtype, its shape and its 64-byte aligned bytes (huge pages when large: core/heap.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "core/dtype.h"
#include "core/heap.h"

namespace locr::kernels {

class QuantPacked {
 public:
  QuantPacked(DType dtype, int64_t rows, int64_t cols, size_t bytes)
      : dtype_(dtype),
        rows_(rows),
        cols_(cols),
        data_(static_cast<uint8_t*>(alloc_aligned(bytes))) {
    if (!data_) throw std::bad_alloc();
  }
  DType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const uint8_t* data() const { return data_.get(); }
  uint8_t* data() { return data_.get(); }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  DType dtype_;
  int64_t rows_, cols_;
  std::unique_ptr<uint8_t, Free> data_;
};

// Groups of 16 rows for `rows` rows (the last one padded).
inline int64_t quant_groups_of(int64_t rows) { return (rows + 15) / 16; }

}  // namespace locr::kernels
