// Image inputs of chat requests: `data:` URLs (base64), `file://` URLs under
// --allowed-local-media-path, and http(s) URLs from --allowed-media-domains only (off by default).
// Returns decoded RGB images; every failure is an ApiError 400 naming the image and the cause.
// Not here: preprocessing (model/processor, inside LightOnOcr::build_prompt).
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

// The encoded bytes an image URL points to (400 if refused, unreadable or too large).
std::string fetch_image_bytes(const std::string& url, const ServerOptions& opts);

// Fetches and decodes every URL (400 on any failure, naming the image's position).
std::vector<io::Image> load_images(const std::vector<std::string>& urls, const ServerOptions& opts);

}  // namespace locr::server
