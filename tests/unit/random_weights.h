// Random inputs and weight matrices for the kernel tests (cpu_ops_test.cc, op_table_test.cc), and
// host views of test buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"
#include "kernels/ops.h"

namespace locr::kernels::testing_util {

inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A host weight matrix of dtype F32, BF16 or F16 with values uniform in [-scale, scale]; its
// holder keeps the bytes alive.
inline Matrix make_matrix(DType dt, int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
  const auto f = random_vec(static_cast<size_t>(rows * cols), seed, -scale, scale);
  Matrix m;
  m.dtype = dt;
  m.rows = rows;
  m.cols = cols;
  if (dt == DType::kF32) {
    auto buf = std::make_shared<std::vector<float>>(f);
    m.data = buf->data();
    m.holder = buf;
  } else {
    auto buf = std::make_shared<std::vector<uint16_t>>(f.size());
    for (size_t i = 0; i < f.size(); ++i) (*buf)[i] = dt == DType::kBF16 ? f32_to_bf16(f[i]) : f32_to_f16(f[i]);
    m.data = buf->data();
    m.holder = buf;
  }
  return m;
}

// Host views of test buffers (kernels/view.h): F32 [rows, cols] with row stride `stride` (< 0:
// cols), int32 vectors, and KV rows of any dtype.
inline View hv(const float* p, int64_t rows, int64_t cols, int64_t stride = -1) {
  return View(const_cast<float*>(p), DType::kF32, Memory::kHost, rows, cols, stride);
}
inline View hv(const std::vector<float>& v, int64_t rows, int64_t cols, int64_t stride = -1) {
  return hv(v.data(), rows, cols, stride);
}
inline View hv_i32(const std::vector<int32_t>& ids) {
  return View(const_cast<int32_t*>(ids.data()), DType::kI32, Memory::kHost, 1, static_cast<int64_t>(ids.size()));
}
inline View hv_kv(const void* p, DType dt, int64_t rows, int64_t cols, int64_t stride = -1) {
  return View(const_cast<void*>(p), dt, Memory::kHost, rows, cols, stride);
}

// The F32 matmul bound of docs/numerics.md for y[m, n] of y = x W^T (x rows of w.cols):
// 8 sqrt(K) u32 sum_k |x[m, k] W[n, k]|, for kernels whose only rounding is their F32 sums.
inline double f32_matmul_tolerance(const Matrix& w, const float* x, int64_t m, int64_t n) {
  const int64_t K = w.cols;
  double abs_sum = 0;
  for (int64_t k = 0; k < K; ++k) abs_sum += std::fabs(static_cast<double>(x[m * K + k]) * w.at(n, k));
  return 8 * std::sqrt(static_cast<double>(K)) * std::ldexp(1.0, -24) * abs_sum;
}

// A host weight matrix of GGUF Q8_0, Q4_K or Q6_K blocks: uniform values in [-scale, scale]
// quantized row by row by llama.cpp's quantizers (kernels/cpu/quant_*.h); cols a whole number of
// blocks (32 for Q8_0, 256 for the K types).
inline Matrix make_quantized_matrix(DType dt, int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
  const auto f = random_vec(static_cast<size_t>(rows * cols), seed, -scale, scale);
  const int64_t row_bytes = dtype_row_bytes(dt, cols);
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(rows * row_bytes));
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = buf->data() + r * row_bytes;
    if (dt == DType::kQ8_0) quantize_row_q8_0(f.data() + r * cols, dst, cols);
    else if (dt == DType::kQ4_K) quantize_row_q4_K(f.data() + r * cols, dst, cols);
    else quantize_row_q6_K(f.data() + r * cols, dst, cols);
  }
  Matrix m;
  m.dtype = dt;
  m.rows = rows;
  m.cols = cols;
  m.data = buf->data();
  m.holder = buf;
  return m;
}

}  // namespace locr::kernels::testing_util
