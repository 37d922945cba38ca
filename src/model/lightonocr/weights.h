// Typed weight structs for LightOnOCR, bound by name from a safetensors checkpoint and
// shape-checked against the config. Weights stay in their checkpoint dtype (memory-mapped);
// backends may attach packed copies via Ops::prepare.
//
// Tensor names (model-spec §9): model.vision_encoder.*, model.vision_projection.*,
// model.language_model.* (or the re-saved variant model.language_model.model.*), lm_head.weight
// (optional when word embeddings are tied; used when present).
#pragma once

#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/lightonocr/config.h"

namespace locr::model {

using kernels::Matrix;

struct TextLayerWeights {
  Matrix input_layernorm;           // [1, hidden]
  Matrix q_proj, k_proj, v_proj;    // [heads*hd, hidden], [kv*hd, hidden], [kv*hd, hidden]
  Matrix o_proj;                    // [hidden, heads*hd]
  Matrix q_norm, k_norm;            // [1, hd]
  Matrix post_attention_layernorm;  // [1, hidden]
  Matrix gate_proj, up_proj;        // [intermediate, hidden]
  Matrix down_proj;                 // [hidden, intermediate]
  // What the forward pass multiplies by: q/k/v and gate/up stacked, laid out by the backend at
  // load (Ops::prepare_stack, in LightOnOcr::make_parts): [q; k; v] and [gate; up].
  kernels::StackedMatrix qkv, gate_up;
};

struct TextWeights {
  Matrix embed_tokens;  // [vocab, hidden]
  std::vector<TextLayerWeights> layers;
  Matrix norm;     // [1, hidden]
  Matrix lm_head;  // [vocab, hidden]; the embedding table when tied
};

struct VisionLayerWeights {
  Matrix attention_norm;          // [1, hidden]
  Matrix q_proj, k_proj, v_proj;  // [hidden, hidden]
  Matrix o_proj;                  // [hidden, hidden]
  Matrix ffn_norm;                // [1, hidden]
  Matrix gate_proj, up_proj;      // [intermediate, hidden]
  Matrix down_proj;               // [hidden, intermediate]
  kernels::StackedMatrix qkv, gate_up;  // as in TextLayerWeights
};

struct VisionWeights {
  Matrix patch_conv;  // [hidden, 3*p*p]: the conv kernel flattened in (c, ky, kx) order
  Matrix ln_pre;      // [1, hidden]
  std::vector<VisionLayerWeights> layers;
};

struct ProjectorWeights {
  Matrix norm;           // [1, vision hidden]
  Matrix merging_layer;  // [vision hidden, 4 * vision hidden]
  Matrix linear_1;       // [text hidden, vision hidden]
  Matrix linear_2;       // [text hidden, text hidden]
};

struct ModelWeights {
  TextWeights text;
  VisionWeights vision;
  ProjectorWeights projector;
  bool has_vision = true;
};

// Binds and shape-checks every tensor. Throws Error(kNotFound) naming a missing tensor and
// Error(kInvalidArgument) naming a wrong shape, with the expected shape in both cases, and
// Error(kUnsupported) naming every checkpoint tensor that no code reads (never ignored).
ModelWeights load_weights(const io::SafetensorsSet& st, const ModelConfig& cfg);

// Lets `ops` lay out every matmul weight once, before the model runs on it: the q/k/v and gate/up
// stacks of each layer (Ops::prepare_stack), the other matmul weights (Ops::prepare). Checkpoint
// pages of weights the backend copied are handed back to the kernel.
void prepare_weights(ModelWeights& w, kernels::Ops& ops);

}  // namespace locr::model
