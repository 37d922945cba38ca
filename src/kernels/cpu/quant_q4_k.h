// GGUF's Q4_K weights on the CPU: super-blocks of 256 weights (144 bytes, q4_k_block.h), multiplied
// as llama.cpp does, by quantizing the activations per 256 to Q8_K (a float scale, int8 values and
// the sums of each 16, for the min term) and taking exact integer dot products per sub-block.
//
// The weights are repacked once (pack_q4_k: the same values, in groups of 16 rows, q4_k_block.h) so
// that one vector holds 16 rows. Every ISA path (generic, avx2, avx2-vnni, avx512, avx512-vnni)
// returns the same bits for the same inputs, whatever the batch (kernel_table.h gemm_q4_k). The
// reference is io::dequantize_row: a Q4_K dot product equals the double dot product of the dequantized weight
// row and the quantized-dequantized activation row up to float rounding.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/quant_packed.h"

namespace locr::kernels {

// llama.cpp's quantize_row_q4_K_ref (no importance matrix): per sub-block of 32, the scale and min
// that make_qkx2_quants finds (weights |x| + rms, 20 steps of the scale search), quantized to 6
// bits against the super-block's largest (d, dmin as f16), then the 4-bit quants. n is a multiple
// of 256; y receives n / 256 * 144 bytes.
void quantize_row_q4_K(const float* x, void* y, int64_t n);

// llama.cpp's quantize_row_q8_K_ref: per 256, d = max|x| / 127 with the sign of the extreme value,
// q = nearest_int(x / d) (never -128), and the sums of each 16 q. n / 256 * 292 bytes.
void quantize_row_q8_K(const float* x, void* y, int64_t n);

// The canonical dot product of a Q4_K weight row w and a Q8_K activation row x (GGUF's layouts), n
// elements.
float dot_q4_K(CpuIsa isa, const void* w, const void* x, int64_t n);

// The rows x cols Q4_K matrix w (GGUF rows of 144 * cols / 256 bytes) packed into the kernels'
// layout (q4_k_block.h), over the thread pool.
std::unique_ptr<QuantPacked> pack_q4_k(const void* w, int64_t rows, int64_t cols);

// y[i * rows + r] = W[r] . x[i] for m activation rows (each `cols` floats, quantized to Q8_K row by
// row) and the rows of W. A row of y depends neither on m nor on the ISA path. Split over
// ThreadPool::global() by groups of weight rows.
void gemm_q4_K(CpuIsa isa, const QuantPacked& w, const float* x, int64_t m, float* y);

// The same on GGUF rows, packed for this one call (tests and one-off products; a model packs its
// weights once, CpuOps::prepare).
void gemm_q4_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y);
void gemv_q4_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y);

}  // namespace locr::kernels
