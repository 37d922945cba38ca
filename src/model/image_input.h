// What a model takes as image input, shared by both families: the preprocessed image (ProcessedImage,
// what a request holds until the encoder runs) and the steps of preprocessing both families' image
// processors share, the resize and the normalisation. The rest of each family's preprocessing is in
// its folder (LightOnOCR-2's Pixtral: model/lightonocr/processor.h; Qwen3.5:
// model/qwen35/processor.h).
//
// The resize reproduces torch's CPU uint8 path for `_upsample_bicubic2d_aa` (what torchvision's
// resize runs for a uint8 image with BICUBIC + antialias on CPU): separable, horizontal pass then
// vertical, weights from Keys' cubic (a = -0.5) with the support widened by the downscale factor,
// normalised in double and quantised to int16 with a per-pass precision, integer accumulation,
// uint8 intermediate. It is bit-exact with transformers' output on CPU (torch on CUDA takes a float
// path instead).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace locr::model {

struct ProcessedImage {
  int height = 0, width = 0;       // after resize (H', W')
  int grid_h = 0, grid_w = 0;      // patch grid (H'/14, W'/14)
  // The resized image, 8-bit RGB [H', W', 3]: what a request holds until the encoder runs (a
  // quarter of the normalised floats); normalized_pixels() or the family's patch extraction (e.g.
  // extract_patches(), model/lightonocr/processor.h) normalises it.
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

// One normalised value, as transformers computes it: (x - mean) / std, two float32 roundings.
inline float normalize(uint8_t x, float mean, float sd) {
  const float centred = static_cast<float>(x) - mean;
  return centred / sd;
}

// Resize (uint8 RGB HWC -> uint8 RGB HWC), antialiased bicubic as torchvision on uint8.
std::vector<uint8_t> resize_bicubic_aa(const uint8_t* rgb, int height, int width, int out_h, int out_w);

}  // namespace locr::model
