// Image preprocessing of the Qwen3.5 family, as transformers' Qwen2VLImageProcessor (torchvision
// backend, the default in transformers 5) computes it: smart_resize to multiples of
// patch_size * merge_size (Python's round, half to even) within [min_pixels, max_pixels], the
// antialiased bicubic resize on uint8 that LightOnOCR-2 uses too (model/image_input.h), rescale and
// normalise, then patches of (channel, temporal copy, y, x) values in 2x2 merge-block order.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "io/image.h"
#include "model/image_input.h"

namespace locr::model::qwen35 {

struct ProcessorConfig {
  int64_t min_pixels = 65536;     // size.shortest_edge (a pixel count)
  int64_t max_pixels = 16777216;  // size.longest_edge
  int patch_size = 16;
  int merge_size = 2;
  int temporal_patch_size = 2;
  std::array<float, 3> image_mean = {0.5f, 0.5f, 0.5f};
  std::array<float, 3> image_std = {0.5f, 0.5f, 0.5f};
  double rescale_factor = 1.0 / 255.0;
  int factor() const { return patch_size * merge_size; }
};

// preprocessor_config.json of a model directory (defaults when absent).
ProcessorConfig load_processor_config(const std::string& dir);

// transformers' smart_resize: (height, width) after resizing. Throws kInvalidArgument for an aspect
// ratio above 200, as transformers does.
std::array<int, 2> smart_resize(int height, int width, const ProcessorConfig& cfg);

// Resize and normalisation parameters: grid_h / grid_w are the patch grid (H' / patch, W' / patch).
ProcessedImage preprocess(const io::Image& image, const ProcessorConfig& cfg);

// Image tokens one image of (height, width) takes: (H' / factor) * (W' / factor).
int image_tokens(int height, int width, const ProcessorConfig& cfg);

// The encoder's input rows: [grid_h * grid_w, 3 * temporal * p * p], each patch's values in
// (c, t, y, x) order (the image repeated over the temporal_patch_size frames), patches in merge-block
// order (block row, block col, row in block, col in block), as transformers' patchify.
std::vector<float> patches(const ProcessedImage& img, const ProcessorConfig& cfg);

}  // namespace locr::model::qwen35
