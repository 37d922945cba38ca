// What both families' vision encoders share (LightOnOCR-2's Pixtral, model/lightonocr/
// vision_encoder.h, and Qwen3.5's tower, model/qwen35/vision.h): activation buffers in the kernel
// backend's memory and the attention of a batch of images, each attending to its own patches only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"

namespace locr::model {

// A [rows, cols] F32 tensor in `ops`' backend memory.
Tensor backend_tensor(kernels::Ops& ops, int64_t rows, int64_t cols);

// The vision encoders' attention (Pixtral's and Qwen3.5's): bidirectional within each image of a
// batch, whose rows are the images' patches in order, `patches[i]` of image i; n_heads heads of
// head_dim, scaled by 1 / sqrt(head_dim).
void attention_per_image(kernels::Ops& ops, const kernels::View& q, const kernels::View& k, const kernels::View& v,
                         const kernels::View& out, const std::vector<int64_t>& patches, int64_t n_heads,
                         int64_t head_dim);

}  // namespace locr::model
