// GGUF's Q6_K weights on the CPU: super-blocks of 256 weights (210 bytes, q6_k_block.h), multiplied
// as llama.cpp does, against the activations quantized per 256 to Q8_K (quant_q4_k.h's
// quantize_row_q8_K), with exact integer dot products per super-block.
//
// The weights are repacked once (pack_q6_k: the same values and size, in groups of 16 rows,
// q6_k_block.h) so that one vector holds 16 rows. Every ISA path (generic, avx2, avx2-vnni, avx512,
// avx512-vnni) returns the same bits for the same inputs, whatever the batch (kernel_table.h
// gemm_q6_k). The reference is io::dequantize_row: a Q6_K dot product equals the double dot product
// of the dequantized weight row and the quantized-dequantized activation row up to float rounding.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/quant_packed.h"

namespace locr::kernels {

// llama.cpp's quantize_row_q6_K_ref (no importance matrix): per group of 16, the scale that
// make_qx_quants(16, 32, x, L, 1, NULL) finds (weights x^2, 18 trial scales), quantized to int8
// against the super-block's largest (d = max / -128 as f16), then the 6-bit quants. n is a multiple
// of 256; y receives n / 256 * 210 bytes.
void quantize_row_q6_K(const float* x, void* y, int64_t n);

// The canonical dot product of a Q6_K weight row w and a Q8_K activation row x (GGUF's layouts), n
// elements.
float dot_q6_K(CpuIsa isa, const void* w, const void* x, int64_t n);

// The rows x cols Q6_K matrix w (GGUF rows of 210 * cols / 256 bytes) packed into the kernels'
// layout (q6_k_block.h), over the thread pool.
std::unique_ptr<QuantPacked> pack_q6_k(const void* w, int64_t rows, int64_t cols);

// y[i * rows + r] = W[r] . x[i] for m activation rows (each `cols` floats, quantized to Q8_K row by
// row) and the rows of W. A row of y depends neither on m nor on the ISA path. Split over
// ThreadPool::global() by groups of weight rows.
void gemm_q6_K(CpuIsa isa, const QuantPacked& w, const float* x, int64_t m, float* y);

// The same on GGUF rows, packed for this one call (tests and one-off products; a model packs its
// weights once, CpuOps::prepare).
void gemm_q6_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y);
void gemv_q6_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y);

}  // namespace locr::kernels
