// Image preprocessing for the Pixtral encoder, as transformers' PixtralImageProcessor (torchvision
// backend) computes it: longest edge <= 1540 (floor, never upscale), each side ceil-aligned to a
// multiple of `align` (28 = vLLM serving rule, the default; 14 = transformers' LightOnOcrProcessor),
// antialiased bicubic resize on uint8, rescale by 1/255 and CLIP mean/std normalisation.
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
  float rescale_factor = 1.0f / 255.0f;
};

struct ProcessedImage {
  int height = 0, width = 0;       // after resize (H', W')
  int grid_h = 0, grid_w = 0;      // patch grid (H'/14, W'/14)
  std::vector<float> pixels;       // [3, H', W'] normalised
  // Number of image tokens this image takes in the prompt: (grid_h/2) * (grid_w/2).
  int n_image_tokens(int merge = 2) const { return (grid_h / merge) * (grid_w / merge); }
};

// Target (H', W') for an input of (height, width).
std::array<int, 2> target_size(int height, int width, const ProcessorConfig& cfg);
// Resize (uint8 RGB HWC -> uint8 RGB HWC), antialiased bicubic as torchvision on uint8.
std::vector<uint8_t> resize_bicubic_aa(const uint8_t* rgb, int height, int width, int out_h, int out_w);
ProcessedImage preprocess(const io::Image& image, const ProcessorConfig& cfg);
// Patches for the patch-conv-as-matmul: [grid_h*grid_w, 3*14*14], order (c, ky, kx), row-major grid.
std::vector<float> extract_patches(const ProcessedImage& img, int patch_size = 14);

}  // namespace locr::model
