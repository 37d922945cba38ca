// GGUF's Q8_0 weights on the CPU: blocks of 32 int8 values with an f16 scale (34 bytes, the layout
// of io/gguf.h), multiplied as llama.cpp does, by quantizing the activations to Q8_0 too and taking
// exact integer dot products per block (int8 x int8 -> int32), scaled and summed in float.
//
// The weights are repacked once (pack_q8_0: the same bytes, in groups of 16 rows, q8_0_block.h) so
// that one vector holds 16 rows and the float work is one FMA per block for 16 rows. Every ISA path
// (generic, avx2, avx2-vnni, avx512, avx512-vnni) returns the same bits for the same inputs
// (q8_0_block.h's canonical order). The reference is io::dequantize_row: a Q8_0 dot product equals
// the float dot product of the two dequantized rows up to float rounding.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/quant_packed.h"

namespace locr::kernels {

// llama.cpp's quantize_row_q8_0 (its scalar reference): per block of 32, d = max|x| / 127, q =
// round(x / d) (halves away from zero), d stored as f16. n is a multiple of 32. GGUF's layout.
void quantize_row_q8_0(const float* x, void* y, int64_t n);

// The rows x cols Q8_0 matrix w (GGUF rows of 34 * cols / 32 bytes) packed into the kernels' layout
// (q8_0_block.h), over the thread pool.
std::unique_ptr<QuantPacked> pack_q8_0(const void* w, int64_t rows, int64_t cols);

// y[i * rows + r] = W[r] . x[i] for the m activation rows x (each `cols` floats): x is quantized
// to Q8_0 row by row (quantize_row_q8_0's values), then every element is one canonical dot
// product, so a row of y does not depend on m (batch invariance) nor on the ISA path. Split over
// ThreadPool::global() by groups of weight rows.
void gemm_q8_0(CpuIsa isa, const QuantPacked& w, const float* x, int64_t m, float* y);

// The same on GGUF rows, packed for this one call (tests and one-off products; a model packs its
// weights once, CpuOps::prepare).
void gemm_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y);
void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y);

// The canonical dot product of a GGUF Q8_0 weight row w (any int8) and an activation row x written
// by quantize_row_q8_0 (never -128), n elements (a multiple of 32).
float dot_q8_0(CpuIsa isa, const void* w, const void* x, int64_t n);

}  // namespace locr::kernels
