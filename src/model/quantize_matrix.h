// On-the-fly weight quantization at load (`--quantization q8_0|q4_k`): the matmul weights of a
// loaded checkpoint (F32 / BF16 / F16) become GGUF Q8_0 (kernels/cpu/quant_q8_0.h: 1.06 bytes per
// weight instead of 2) or Q4_K (kernels/cpu/quant_q4_k.h: 0.56 bytes per weight), with llama.cpp's
// quantizers, run by the CPU backend's integer kernels or the CUDA backend's quantized-weight kernels.
// Here: what both families' quantize_weights are made of (LightOnOCR-2's:
// model/lightonocr/quantize_weights.h; Qwen3.5's: model/qwen35/weights.h).
#pragma once

#include <string>

#include "core/dtype.h"
#include "kernels/ops.h"

namespace locr::model {

using kernels::Matrix;

struct QuantizeCounts {
  int q8_0 = 0, q4_k = 0, q6_k = 0;  // matrices quantized to each type
  int total() const { return q8_0 + q4_k + q6_k; }
};

// What both families' quantize_weights are made of.
// The method lower-cased, vLLM's "fp8" as "q8_0" (with a note); anything but q8_0, q4_k, q4_k_m is
// a kInvalidArgument error naming the supported ones.
std::string quantization_method(const std::string& method);
// Replaces m by its quantization to `to` (Q8_0, Q4_K or Q6_K; a new buffer; the checkpoint's pages of
// m are released to the kernel, io::release_pages). False (m unchanged) when m is not a float matrix or its rows are not whole blocks.
bool quantize_matrix(Matrix& m, DType to);
// Quantizes m to `to`, or to Q8_0 when its rows are not whole super-blocks of `to`; counts it.
void quantize_counted(Matrix& m, DType to, QuantizeCounts* n);

}  // namespace locr::model
