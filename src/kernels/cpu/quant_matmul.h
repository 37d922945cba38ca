// The CPU backend's matmuls on GGUF-quantized weights (Q8_0, Q4_K, Q6_K): what CpuOps does to them
// at load and the product itself (quant_q8_0.h, quant_q4_k.h, quant_q6_k.h).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/ops.h"

namespace locr::kernels {

// Q8_0, Q4_K or Q6_K: the dtypes these matmuls take.
bool is_quantized_weight(DType t);

// Each is repacked once into Matrix::packed (quant_q8_0.h, quant_q4_k.h, quant_q6_k.h: groups of 16
// rows) unless it already holds that layout.
void prepare_quantized_weight(Matrix& w);

// y[M, w.rows] = x[M, w.cols] . W^T for contiguous x and y. An unprepared weight is packed for
// this call alone.
void quantized_matmul(CpuIsa isa, const Matrix& w, const float* x, int64_t M, float* y);

}  // namespace locr::kernels
