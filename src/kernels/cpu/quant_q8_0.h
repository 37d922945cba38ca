// GGUF's Q8_0 weights on the CPU: blocks of 32 int8 values with an f16 scale (34 bytes, the layout
// of io/gguf.h), multiplied as llama.cpp does, by quantizing the activations to Q8_0 too and taking
// exact integer dot products per block (int8 x int8 -> int32), scaled and summed in float.
//
// Every ISA path (generic, avx2, avx512, avx512-bf16) returns the same bits for the same inputs
// (kernel_table.h gemm_q8_0, q8_0_block.h). The reference is io::dequantize_row: a Q8_0 dot product equals the
// float dot product of the two dequantized rows up to float rounding.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace locr::kernels {

// llama.cpp's quantize_row_q8_0 (its scalar reference): per block of 32, d = max|x| / 127, q =
// round(x / d) (halves away from zero), d stored as f16. n is a multiple of 32.
void quantize_row_q8_0(const float* x, void* y, int64_t n);

// The dot product of a Q8_0 weight row w (any int8) and an activation row x written by
// quantize_row_q8_0 (never -128), n elements (a multiple of 32), in q8_0_block.h's canonical order.
float dot_q8_0(CpuIsa isa, const void* w, const void* x, int64_t n);

// y[i * rows + r] = W[r] . x[i] for the m activation rows x (each `cols` floats) and the `rows`
// Q8_0 rows of W (each 34 * cols / 32 bytes): x is quantized to Q8_0 row by row, then every
// element is one canonical dot product, so a row of y does not depend on m (batch invariance) nor
// on the ISA path. Split over ThreadPool::global() by blocks of weight rows.
void gemm_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y);

// gemm_q8_0 with one activation row.
void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y);

}  // namespace locr::kernels
