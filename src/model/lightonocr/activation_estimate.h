// LightOnOCR-2's activation estimate, the term the KV cache sizing (model/memory_sizing.h) takes off
// for the forward pass's activations.
#pragma once

#include <cstdint>

#include "model/lightonocr/config.h"

namespace locr::model {

// Peak activation bytes of the forward pass (F32 on every backend): one decoder step of
// max_num_batched_tokens rows and max_num_seqs logits rows, or the largest page through one
// encoder layer plus one head's attention scores, whichever the engine runs (both counted: an
// engine step may hold a page's encoder state while it decodes).
int64_t activation_estimate(const ModelConfig& cfg, int64_t max_num_batched_tokens, int64_t max_num_seqs);

}  // namespace locr::model
