// On-the-fly weight quantization at load (`--quantization q8_0`): the matmul weights of a loaded
// checkpoint (F32 / BF16 / F16) become GGUF Q8_0 (kernels/cpu/quant_q8_0.h: llama.cpp's quantizer,
// 1.06 bytes per weight instead of 2), run by the CPU backend's int8 kernels.
//
// Quantized: every linear layer of the text decoder, the vision encoder and the projector whose
// input width is a whole number of 32-element blocks, and the LM head. Kept as stored: the norms,
// the embedding table (gathered, not multiplied; a tied LM head gets its own quantized copy) and the
// patch convolution (3 * 14 * 14 = 588 inputs, not a multiple of 32).
#pragma once

#include <string>

#include "model/weights.h"

namespace locr::model {

// "q8_0" (vLLM-style spellings accepted: case-insensitive). Any other value is a kInvalidArgument
// error naming the supported ones. Returns the number of matrices quantized.
int quantize_weights(ModelWeights& w, const std::string& method);

}  // namespace locr::model
