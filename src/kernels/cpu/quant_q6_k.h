// GGUF's Q6_K weights on the CPU: super-blocks of 256 weights (210 bytes, q6_k_block.h), multiplied
// as llama.cpp does, against the activations quantized per 256 to Q8_K (quant_q4_k.h's
// quantize_row_q8_K), with exact integer dot products per super-block.
//
// Every ISA path (generic, avx2, avx512, avx512-bf16; the AVX-512 tables run the AVX2 code) returns
// the same bits for the same inputs, whatever the batch (kernel_table.h gemm_q6_k). The reference is
// io::dequantize_row: a Q6_K dot product equals the double dot product of the dequantized weight
// row and the quantized-dequantized activation row up to float rounding.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_ops.h"

namespace locr::kernels {

// llama.cpp's quantize_row_q6_K_ref (no importance matrix): per group of 16, the scale that
// make_qx_quants(16, 32, x, L, 1, NULL) finds (weights x^2, 18 trial scales), quantized to int8
// against the super-block's largest (d = max / -128 as f16), then the 6-bit quants. n is a multiple
// of 256; y receives n / 256 * 210 bytes.
void quantize_row_q6_K(const float* x, void* y, int64_t n);

// The canonical dot product of a Q6_K weight row w and a Q8_K activation row x, n elements.
float dot_q6_K(CpuIsa isa, const void* w, const void* x, int64_t n);

// y[i * rows + r] = W[r] . x[i] for m activation rows (each `cols` floats, quantized to Q8_K row by
// row) and the `rows` Q6_K rows of W (210 * cols / 256 bytes each). A row of y depends neither on m
// nor on the ISA path. Split over ThreadPool::global() by blocks of weight rows.
void gemm_q6_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y);

// gemm_q6_K with one activation row.
void gemv_q6_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y);

}  // namespace locr::kernels
