// On-the-fly weight quantization at load (`--quantization q8_0|q4_k`): the matmul weights of a
// loaded checkpoint (F32 / BF16 / F16) become GGUF Q8_0 (kernels/cpu/quant_q8_0.h: 1.06 bytes per
// weight instead of 2) or Q4_K (kernels/cpu/quant_q4_k.h: 0.56 bytes per weight), with llama.cpp's
// quantizers, run by the CPU backend's integer kernels or the CUDA backend's quantized-weight kernels.
//
// Quantized: every linear layer of the text decoder, the vision encoder and the projector whose
// input width is a whole number of blocks (32 for Q8_0, 256 for Q4_K; with q4_k a layer whose
// width is not a multiple of 256 but of 32 becomes Q8_0 instead, and the log says how many), and
// the LM head. Kept as stored: the norms, the embedding table (gathered, not multiplied; a tied LM
// head gets its own quantized copy) and the patch convolution (3 * 14 * 14 = 588 inputs).
#pragma once

#include <string>

#include "model/weights.h"

namespace locr::model {

struct QuantizeCounts {
  int q8_0 = 0, q4_k = 0, q6_k = 0;  // matrices quantized to each type
  int total() const { return q8_0 + q4_k + q6_k; }
};

// q4_k_m: llama.cpp's Q4_K_M mix on the text decoder (as `locr quantize --type q4_k_m`: attn_v and
// ffn_down of llama-quantize's use_more_bits layers and the LM head Q6_K, the rest Q4_K), the vision
// tower and projector Q8_0 (that export's mmproj).
//
// "q8_0", "q4_k" or "q4_k_m" (case-insensitive). Any other value is a kInvalidArgument error naming the
// supported ones.
QuantizeCounts quantize_weights(ModelWeights& w, const std::string& method);

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
