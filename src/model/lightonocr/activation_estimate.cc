#include "model/lightonocr/activation_estimate.h"

#include <algorithm>

#include "model/lightonocr/vision_encoder.h"

namespace locr::model {

int64_t activation_estimate(const ModelConfig& cfg, int64_t max_num_batched_tokens, int64_t max_num_seqs) {
  const auto& t = cfg.text;
  const auto& v = cfg.vision;
  const int64_t f = sizeof(float);
  // Text step: hidden, q/k/v/o, gate/up/down for every batched token row, logits per sequence.
  const int64_t text_row = 6LL * t.hidden_size + 2LL * t.num_attention_heads * t.head_dim + 3LL * t.intermediate_size;
  const int64_t text = max_num_batched_tokens * text_row * f + max_num_seqs * t.vocab_size * f;
  // Vision: the largest page's patches through one encoder layer (its MLP in chunks of rows), plus
  // one head's attention scores.
  const int64_t side = v.image_size / std::max(1, v.patch_size);
  const int64_t patches = side * side;
  const int64_t mlp_rows = std::min(patches, VisionEncoder::kMlpChunkRows);
  const int64_t vision = patches * 6LL * v.hidden_size * f + mlp_rows * 3LL * v.intermediate_size * f + patches * patches * f;
  return text + vision;
}

}  // namespace locr::model
