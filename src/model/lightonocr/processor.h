// Image preprocessing for the Pixtral encoder, as transformers' PixtralImageProcessor (torchvision
// backend) computes it: longest edge <= 1540 (floor, never upscale), each side ceil-aligned to a
// multiple of `align` (28 = vLLM serving rule, the default; 14 = transformers' LightOnOcrProcessor),
// antialiased bicubic resize on uint8, rescale by 1/255 and CLIP mean/std normalisation.
//
// The resize and the normalisation are the ones both families share (model/image_input.h:
// resize_bicubic_aa, bit-exact with transformers' output on CPU; normalize). Images with
// transparency are first composited onto white, as transformers' convert_to_rgb does for PIL images.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "io/image.h"
#include "model/image_input.h"

namespace locr::model {

struct ProcessorConfig {
  int longest_edge = 1540;
  int patch_size = 14;
  int spatial_merge_size = 2;
  int align = 28;  // 28 or 14
  std::array<float, 3> image_mean = {0.48145466f, 0.4578275f, 0.40821073f};
  std::array<float, 3> image_std = {0.26862954f, 0.26130258f, 0.27577711f};
  double rescale_factor = 1.0 / 255.0;  // double, as in the JSON config: 1 / it must be exactly 255
  // transformers (v5) convert_to_rgb composites a PIL image with an alpha band or a transparency
  // key onto white before anything else; io::Image keeps that alpha so this can be reproduced.
  bool flatten_alpha_on_white = true;
};

// Target (H', W') for an input of (height, width): transformers' get_resize_output_image_size,
// in the same double arithmetic: floor(w / (h / 1540)) is sometimes one below the exact quotient
// (949 x 2044 gives 714 wide at align 14, where exact arithmetic would give 728), and we match it.
// Throws kInvalidArgument if a side would shrink to 0 (aspect ratio beyond 1540:1).
std::array<int, 2> target_size(int height, int width, const ProcessorConfig& cfg);
ProcessedImage preprocess(const io::Image& image, const ProcessorConfig& cfg);
// The first steps of preprocess() done early, so that only the model-sized copy of an image is
// kept: alpha composited onto white (when cfg says so), then the resize to target_size(). The
// full-resolution buffers are freed before this returns. preprocess() of the result equals
// preprocess() of the input bit for bit; when the target is not a fixed point of target_size()
// (a longest_edge that is not a multiple of align), the image is returned as it was.
io::Image shrink_for_model(io::Image image, const ProcessorConfig& cfg);
// Image tokens an image of (height, width) takes in the prompt: (H'/28) * (W'/28) after
// target_size(), computed from the size alone (e.g. from probe_image()).
int image_token_count(int height, int width, const ProcessorConfig& cfg, int merge = 2);
// Patches for the patch-conv-as-matmul: [grid_h*grid_w, 3*14*14], order (c, ky, kx), row-major grid.
std::vector<float> extract_patches(const ProcessedImage& img, int patch_size = 14);

}  // namespace locr::model
