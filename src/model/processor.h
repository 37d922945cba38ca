// Image preprocessing for the Pixtral encoder, as transformers' PixtralImageProcessor (torchvision
// backend) computes it: longest edge <= 1540 (floor, never upscale), each side ceil-aligned to a
// multiple of `align` (28 = vLLM serving rule, the default; 14 = transformers' LightOnOcrProcessor),
// antialiased bicubic resize on uint8, rescale by 1/255 and CLIP mean/std normalisation.
//
// The resize reproduces torch's CPU uint8 path for `_upsample_bicubic2d_aa` (what torchvision's
// resize runs for a uint8 image with BICUBIC + antialias on CPU): separable, horizontal pass then
// vertical, weights from Keys' cubic (a = -0.5) with the support widened by the downscale factor,
// normalised in double and quantised to int16 with a per-pass precision, integer accumulation,
// uint8 intermediate. It is bit-exact with transformers' output on CPU (torch on CUDA takes a float
// path instead). Images with transparency are first composited onto white, as transformers'
// convert_to_rgb does for PIL images.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "io/image.h"

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

struct ProcessedImage {
  int height = 0, width = 0;       // after resize (H', W')
  int grid_h = 0, grid_w = 0;      // patch grid (H'/14, W'/14)
  // The resized image, 8-bit RGB [H', W', 3]: what a request holds until the encoder runs (a
  // quarter of the normalised floats); extract_patches() normalises it patch by patch.
  std::vector<uint8_t> rgb;
  // Normalisation: (x - mean) / std per channel, mean and std already multiplied by 1/rescale.
  std::array<float, 3> norm_mean = {0, 0, 0}, norm_std = {1, 1, 1};
  // [3, H', W'] normalised pixels given directly instead of `rgb` (e.g. transformers'
  // pixel_values in the golden tests); empty otherwise.
  std::vector<float> pixels;
  // Number of image tokens this image takes in the prompt: (grid_h/2) * (grid_w/2).
  int n_image_tokens(int merge = 2) const { return (grid_h / merge) * (grid_w / merge); }
};

// The normalised [3, H', W'] pixels (`pixels` when given, else computed from `rgb`).
std::vector<float> normalized_pixels(const ProcessedImage& img);

// Target (H', W') for an input of (height, width): transformers' get_resize_output_image_size,
// in the same double arithmetic: floor(w / (h / 1540)) is sometimes one below the exact quotient
// (949 x 2044 gives 714 wide at align 14, where exact arithmetic would give 728), and we match it.
// Throws kInvalidArgument if a side would shrink to 0 (aspect ratio beyond 1540:1).
std::array<int, 2> target_size(int height, int width, const ProcessorConfig& cfg);
// Resize (uint8 RGB HWC -> uint8 RGB HWC), antialiased bicubic as torchvision on uint8.
std::vector<uint8_t> resize_bicubic_aa(const uint8_t* rgb, int height, int width, int out_h, int out_w);
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
