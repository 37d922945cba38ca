// Synthetic document pages for `locr eval` and `locr bench` (no image files needed): a white page
// with a heading bar, lines of "words" (dark rectangles of varying width), a ruled table and a
// coloured figure block, deterministic from the seed. And a minimal PNG encoder (8-bit RGB, zlib).
#pragma once

#include <cstdint>
#include <string>

#include "io/image.h"

namespace locr::tools {

io::Image synth_page(int width, int height, uint64_t seed);

// PNG bytes of an RGB image (filter 0 on every row, zlib level 6).
std::string encode_png(const io::Image& image);

// "data:image/png;base64,..." for `bytes`.
std::string png_data_url(const std::string& png_bytes);
std::string base64_encode(const std::string& bytes);

}  // namespace locr::tools
