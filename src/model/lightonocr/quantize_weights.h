// LightOnOCR-2's weights quantized at load (`--quantization`; model/quantize_matrix.h, what both
// families' quantize_weights are made of).
//
// Quantized: every linear layer of the text decoder, the vision encoder and the projector whose
// input width is a whole number of blocks (32 for Q8_0, 256 for Q4_K; with q4_k a layer whose
// width is not a multiple of 256 but of 32 becomes Q8_0 instead, and the log says how many), and
// the LM head. Kept as stored: the norms, the embedding table (gathered, not multiplied; a tied LM
// head gets its own quantized copy) and the patch convolution (3 * 14 * 14 = 588 inputs).
#pragma once

#include <string>

#include "model/lightonocr/weights.h"
#include "model/quantize_matrix.h"

namespace locr::model {

// q4_k_m: llama.cpp's Q4_K_M mix on the text decoder (as `locr quantize --type q4_k_m`: attn_v and
// ffn_down of llama-quantize's use_more_bits layers and the LM head Q6_K, the rest Q4_K), the vision
// tower and projector Q8_0 (that export's mmproj).
//
// "q8_0", "q4_k" or "q4_k_m" (case-insensitive). Any other value is a kInvalidArgument error naming the
// supported ones.
QuantizeCounts quantize_weights(ModelWeights& w, const std::string& method);

}  // namespace locr::model
