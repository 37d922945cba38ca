// View: what every op of kernels::Ops reads and writes — a 2-D strided window on elements in one
// backend's memory: `rows` rows of `cols` contiguous elements of `dtype`, row r + 1 starting
// `stride` elements after row r. A view owns nothing (the workspace, a Tensor or a KV pool does).
//
// 2-D is all the model needs: a buffer [rows, cols] (hidden states, a GEMM's output), a column
// range of one (q, k and v of a stacked qkv output: [T, q_width] with the stacked row stride), a
// per-head reading of one (an op takes the head size from its weight or table, as rms_norm over
// q_norm's head_dim). Deliberately not an N-d tensor library: no broadcasting, no views of views
// with arbitrary strides.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace locr::kernels {

// Where a view's elements live: host memory (ref, cpu backends) or a device's (cuda). An op of a
// backend accepts only views of its own kind (Ops::memory()).
enum class Memory : uint8_t { kHost, kDevice };

struct View {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Memory memory = Memory::kHost;
  int64_t rows = 0, cols = 0;
  int64_t stride = 0;  // elements between the starts of consecutive rows (>= cols)

  View() = default;
  // stride < 0: contiguous (stride = cols).
  View(void* data, DType dtype, Memory memory, int64_t rows, int64_t cols, int64_t stride = -1)
      : data(data), dtype(dtype), memory(memory), rows(rows), cols(cols), stride(stride < 0 ? cols : stride) {}

  bool contiguous() const { return rows <= 1 || stride == cols; }
  int64_t numel() const { return rows * cols; }
  // Elements from the first to one past the last (what a copy of the whole window spans).
  int64_t span() const { return rows <= 0 ? 0 : (rows - 1) * stride + cols; }

  float* f32() const { return static_cast<float*>(data); }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }

  // Columns [c0, c0 + n) of every row (same rows and stride).
  View cols_range(int64_t c0, int64_t n) const;
  // Rows [r0, r0 + n).
  View rows_range(int64_t r0, int64_t n) const;

  // "F32 [3, 64] stride 192, host" (for error messages).
  std::string describe() const;
};

}  // namespace locr::kernels
