// Image encoding, for showing a client the page the model read (the web UI's previews, /v1/ocr's
// `include_page_image`): baseline JPEG through the system libjpeg(-turbo); and lossless PNG (figure
// crops `locr ocr` writes, pages it sends to a server).
#pragma once

#include <string>

#include "io/image.h"

namespace locr::io {

// Baseline JPEG of `image`'s RGB (any alpha is ignored), 4:2:0, `quality` 1..100. Throws
// locr::Error kInvalidArgument for an empty image or a bad quality, kIo if libjpeg fails.
std::string encode_jpeg(const Image& image, int quality = 85);

// PNG (8-bit RGB, zlib) of `image`'s RGB; any alpha is ignored. Throws kInvalidArgument for an
// empty image.
std::string encode_png(const Image& image);

}  // namespace locr::io
