// LightOnOCR's weights on the device, BF16, laid out for the CUDA executor: q/k/v stacked into one
// [q + 2 kv, in] matrix, gate/up into one [2 inter, in] matrix (gate rows first, as silu_mul
// expects), the conv kernel as a [hidden, 3*p*p] matrix. A tied LM head shares the embedding.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_api.h"
#include "model/weights.h"

namespace locr::model::cuda {

namespace kc = locr::kernels::cuda;

struct DevTextLayer {
  kc::DeviceBuffer input_layernorm, qkv, q_norm, k_norm, o_proj, post_attention_layernorm, gate_up, down_proj;
};

struct DevVisionLayer {
  kc::DeviceBuffer attention_norm, qkv, o_proj, ffn_norm, gate_up, down_proj;
};

struct DeviceWeights {
  // Text.
  kc::DeviceBuffer embed_tokens;  // [vocab, hidden]
  std::vector<DevTextLayer> text;
  kc::DeviceBuffer norm;
  kc::DeviceBuffer lm_head_own;   // empty when tied
  const kc::bf16* lm_head = nullptr;
  // Vision + projector (empty when the model has no vision tower).
  kc::DeviceBuffer patch_conv, ln_pre;
  std::vector<DevVisionLayer> vision;
  kc::DeviceBuffer proj_norm, merging, linear_1, linear_2;
  int64_t bytes = 0;
};

// Converts and uploads every weight (synchronously on `s`).
std::unique_ptr<DeviceWeights> upload_weights(const ModelWeights& w, kc::Stream s);

// Host conversion of one or more matrices stacked by rows into BF16 (exposed for tests).
std::vector<uint16_t> stack_bf16(const std::vector<const kernels::Matrix*>& parts);

}  // namespace locr::model::cuda
