// RoPE angle tables, computed in float32 exactly as transformers does (inv_freq in f32, angle =
// position * inv_freq as one f32 product, cos/sin in f32).
//   text (Qwen3): 1-D, angle[t][d] = t * theta^(-2d/head_dim), d < head_dim/2
//   vision (Pixtral): 2-D, for the patch at grid (row r, col c), with w = theta^(-2j/head_dim):
//     angle[d] = r * w[2d] for d < head_dim/4 (even frequencies -> rows),
//     angle[head_dim/4 + d] = c * w[2d+1] (odd frequencies -> columns).
// Both feed Ops::rope, which rotates pairs (d, d + head_dim/2).
#pragma once

#include <cstdint>
#include <vector>

namespace locr::model {

struct RopeTable {
  std::vector<float> cos, sin;  // [rows, head_dim/2]
};

std::vector<float> rope_inv_freq(double theta, int head_dim);
RopeTable text_rope(double theta, int head_dim, int64_t pos0, int64_t n);
RopeTable vision_rope(double theta, int head_dim, int grid_h, int grid_w);

}  // namespace locr::model
