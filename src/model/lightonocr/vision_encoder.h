// LightOnOCR-2's image side: the Pixtral vision encoder (mirrors transformers'
// models/pixtral/modeling_pixtral.py) and the LightOnOCR projector
// (models/lighton_ocr/modeling_lighton_ocr.py), with their ImageGrid and VisionState. What Qwen3.5's
// tower shares with the encoder (backend_tensor, attention_per_image) is model/vision_common.h.
//
// Encoder: patch conv (as a matmul over (c, ky, kx) patches) -> RMSNorm ln_pre -> N blocks of
// [RMSNorm, 2-D RoPE multi-head attention, RMSNorm, SwiGLU], no final norm. Several images run in
// one pass: linear layers over all rows at once, attention within each image only (transformers'
// block-diagonal mask).
// Projector: RMSNorm -> channel-major 2x2 patch merger (torch unfold order c*4 + row*2 + col) ->
// Linear -> exact GELU -> Linear.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/weights.h"

namespace locr::model {

class Taps;  // model/taps.h: "vision.*" and "projector.*" intermediates when set

struct ImageGrid {
  int grid_h = 0, grid_w = 0;  // patches per column / row
  int64_t n_patches() const { return static_cast<int64_t>(grid_h) * grid_w; }
};

// An encoding in progress: the residual stream after `next_layer` blocks. Lets the serving engine
// spread one large page over several steps (a few layers per step) so decodes are not starved.
// x, cos and sin live in the encoder's backend memory (kernels::Ops::alloc; host for ref/cpu).
struct VisionState {
  std::vector<ImageGrid> grids;
  Tensor x;         // [sum n_patches, hidden]
  Tensor cos, sin;  // RoPE tables [sum n_patches, head_dim/2]
  // The blocks' buffers (normed input, [q | k | v], attention output, a chunk's [gate | up]), made
  // by the first run_layers call and kept until the last block: a page encoded a few blocks per
  // engine step would otherwise map and fault in a fresh ~250 MB at every step.
  Tensor h, qkv, attn, gate_up;
  int next_layer = 0;
  int64_t n_patches() const { return x.empty_tensor() ? 0 : x.dim(0); }
};

class VisionEncoder {
 public:
  // The MLP runs over chunks of about this many patches (equal chunks, none smaller than half of
  // it): its [gate | up] rows would otherwise be the encoder's largest buffer.
  // model/lightonocr/activation_estimate counts it.
  static constexpr int64_t kMlpChunkRows = 2048;

  VisionEncoder(const VisionConfig& cfg, const VisionWeights& w, kernels::Ops& ops) : cfg_(cfg), w_(w), ops_(ops) {}
  // The only implementation of the encoder, on every backend. patches: host [sum n_patches, 3*p*p]
  // for the images in `grids`, in order. Returns [sum n_patches, hidden] in backend memory.
  Tensor forward(const float* patches, const std::vector<ImageGrid>& grids, Taps* taps = nullptr) const;

  // Incremental form: begin() runs the patch conv and ln_pre; run_layers() advances up to n blocks.
  VisionState begin(const float* patches, const std::vector<ImageGrid>& grids, Taps* taps = nullptr) const;
  void run_layers(VisionState& s, int n, Taps* taps = nullptr) const;
  bool done(const VisionState& s) const { return s.next_layer >= cfg_.num_hidden_layers; }
  int num_layers() const { return cfg_.num_hidden_layers; }

 private:
  const VisionConfig& cfg_;
  const VisionWeights& w_;
  kernels::Ops& ops_;
};

class Projector {
 public:
  Projector(const ModelConfig& cfg, const ProjectorWeights& w, kernels::Ops& ops) : cfg_(cfg), w_(w), ops_(ops) {}
  // features: [sum n_patches, vision hidden] -> [sum (grid_h/2)*(grid_w/2), text hidden], both in
  // the backend's memory.
  Tensor forward(const Tensor& features, const std::vector<ImageGrid>& grids, Taps* taps = nullptr) const;

 private:
  const ModelConfig& cfg_;
  const ProjectorWeights& w_;
  kernels::Ops& ops_;
};

// The channel-major 2x2 merge alone (host; exposed for tests): in [grid_h*grid_w, d] row-major grid ->
// out [(grid_h/m)*(grid_w/m), d*m*m] with out[i*(gw/m)+j][c*m*m + a*m + b] = in[(m*i+a)*gw + (m*j+b)][c].
// Odd trailing rows/columns are dropped, as torch's unfold does.
void patch_merge(const float* in, int grid_h, int grid_w, int64_t d, int m, float* out);

}  // namespace locr::model
