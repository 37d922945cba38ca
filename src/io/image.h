// Image decoding (PNG, JPEG, WebP, BMP, GIF first frame, TIFF) to 8-bit RGB, converting modes as
// Pillow's Image.convert("RGB") does (grayscale, palette, alpha dropped without compositing, CMYK,
// 16-bit). A pixel limit refuses decompression bombs before any large allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace locr::io {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3], row-major
};

struct DecodeOptions {
  int64_t max_pixels = 178956970;  // Pillow's MAX_IMAGE_PIXELS * 2 (DecompressionBombError)
};

// Detects the format from the bytes. Throws locr::Error (kInvalidArgument for corrupt/truncated/
// unknown data, kLimit for too many pixels) with a message naming the format and the problem.
Image decode_image(std::string_view bytes, const DecodeOptions& opts = {});
Image load_image(const std::string& path, const DecodeOptions& opts = {});

}  // namespace locr::io
