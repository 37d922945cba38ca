// Image inputs of chat requests: `data:` URLs (base64), `file://` URLs under
// --allowed-local-media-path, and http(s) URLs from --allowed-media-domains only (off by default).
// Images are first only fetched and sized from their headers (so the prompt length and the
// per-request pixel budget are checked before any pixel is decoded), then decoded one at a time
// under the server-wide decode budget and shrunk to the model's size at once, so only the
// model-sized copy of each image is kept. Every failure is an ApiError 400 naming the image and
// the cause. Not here: the rest of preprocessing (the model's, inside build_prompt).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/image.h"
#include "server/server_context.h"

namespace locr::server {

// Standard or URL-safe base64, padding optional, no whitespace inside; nullopt if invalid.
std::optional<std::string> base64_decode(std::string_view in);
// Standard base64 with padding (RFC 4648 section 4).
std::string base64_encode(std::string_view in);

// The encoded bytes an image URL points to (400 if refused, unreadable or too large).
std::string fetch_image_bytes(const std::string& url, const ServerOptions& opts);

// An image's encoded bytes and its size from the header.
struct ImageSource {
  std::string bytes;
  io::ImageSize size;
};

// Fetches every URL and reads each image's size from its header (400 naming the image's
// position on any failure, or when the images have more pixels in all than
// --max-request-image-pixels, or more encoded bytes in all than --max-body-bytes). No pixels are
// decoded.
std::vector<ImageSource> fetch_images(const std::vector<std::string>& urls, const ServerOptions& opts);

// Decodes the images one at a time, each under a lease of the server's decode budget, and keeps
// only the model-sized version of each (model::shrink_for_model). The bytes are released as they
// are decoded. 400 naming the image on a decoding error.
std::vector<io::Image> decode_images(std::vector<ImageSource> sources, ServerContext& ctx);

}  // namespace locr::server
