// Synthetic document pages for `locr eval` and `locr bench` (no image files needed): a white page
// with a heading bar, lines of "words" (dark rectangles of varying width), a ruled table and a
// coloured figure block, deterministic from the seed. And PNG bytes (io::encode_png), data: URLs.
#pragma once

#include <cstdint>
#include <string>

#include "io/image.h"

namespace locr::toolkit {

io::Image synth_page(int width, int height, uint64_t seed);

// PNG bytes of an RGB image: io::encode_png.
std::string encode_png(const io::Image& image);

// "data:image/png;base64,..." for `bytes`.
std::string png_data_url(const std::string& png_bytes);
std::string base64_encode(const std::string& bytes);

}  // namespace locr::toolkit
