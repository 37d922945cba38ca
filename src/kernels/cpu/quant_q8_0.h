// GGUF's Q8_0 weights on the CPU: blocks of 32 int8 values with an f16 scale (34 bytes, the layout
// of io/gguf.h), multiplied as llama.cpp does, by quantizing the activations to Q8_0 too and taking
// exact integer dot products per block (int8 x int8 -> int32), scaled and summed in float.
//
// Every ISA path (generic, avx2, avx512, avx512-bf16) returns the same bits for the same inputs
// (kernel_table.h dot_q8_0). The reference is io::dequantize_row: a Q8_0 dot product equals the
// float dot product of the two dequantized rows up to float rounding.
// Not wired to the model yet (issue 18): the loader, GEMM for prefill/vision and Q4_K come next.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace locr::kernels {

// llama.cpp's quantize_row_q8_0 (its scalar reference): per block of 32, d = max|x| / 127, q =
// round(x / d) (halves away from zero), d stored as f16. n is a multiple of 32.
void quantize_row_q8_0(const float* x, void* y, int64_t n);

// The dot product of two Q8_0 rows of n elements (n a multiple of 32).
float dot_q8_0(CpuIsa isa, const void* a, const void* b, int64_t n);

// y[r] = W[r] . x for the `rows` Q8_0 rows of W (each `cols` elements, 34 * cols / 32 bytes):
// x is quantized to Q8_0 once, then each row is one dot_q8_0.
void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y);

}  // namespace locr::kernels
