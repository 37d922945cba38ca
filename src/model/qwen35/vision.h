// The Qwen3.5 vision tower (transformers' Qwen3_5VisionModel; no DeepStack):
//   x = patch_embed(patches) + bias + pos_embed resampled to the grid
//   per block: x += proj(attn(rope2d(qkv(LN1(x))))) ; x += fc2(gelu_tanh(fc1(LN2(x))))
//     (biased linears, full bidirectional attention within each image)
//   merger: LN(x) per patch, 2x2 blocks concatenated (patches are in merge-block order, so a block is
//   four consecutive rows), fc2(gelu(fc1(.))) -> [patches / 4, text hidden]
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"
#include "model/qwen35/config.h"
#include "model/qwen35/positions.h"
#include "model/qwen35/weights.h"

namespace locr::model {
class Taps;
}

namespace locr::model::qwen35 {

// A forward pass in progress (begin / run / finish): the images' grids, the residual stream and the
// blocks' buffers, in backend memory, so an engine can run a few blocks per step.
struct VisionState {
  std::vector<Grid> grids;
  int64_t n = 0;       // patches
  int next_layer = 0;  // blocks done
  Tensor cos, sin, x, h, qkv, attn, mlp;
};

class VisionTower {
 public:
  VisionTower(const VisionConfig& cfg, const VisionWeights& w, kernels::Ops& ops) : cfg_(cfg), w_(w), ops_(ops) {}

  // patches: [sum patches, patch_values()] host F32 (model/qwen35/processor.h patches(), images in
  // order). Returns the image embeddings [sum patches / 4, out_hidden_size] in backend memory;
  // `last_hidden`, when set, receives a host copy of the last block's output [sum patches, hidden].
  Tensor forward(const float* patches, const std::vector<Grid>& grids, Tensor* last_hidden = nullptr,
                 Taps* taps = nullptr) const;
  // forward() in parts, the same ops in the same order (the same bits): begin() embeds the patches
  // and adds the position embeddings, run() advances up to n_layers blocks, finish() runs the blocks
  // left and the merger (and frees the blocks' buffers).
  std::unique_ptr<VisionState> begin(const float* patches, const std::vector<Grid>& grids, Taps* taps = nullptr) const;
  void run(VisionState& st, int n_layers, Taps* taps = nullptr) const;
  Tensor finish(VisionState& st, Tensor* last_hidden = nullptr, Taps* taps = nullptr) const;
  int depth() const { return cfg_.depth; }

 private:
  const VisionConfig& cfg_;
  const VisionWeights& w_;
  kernels::Ops& ops_;
};

}  // namespace locr::model::qwen35
