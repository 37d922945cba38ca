#include "server/request_log.h"

namespace locr::server {

std::string clip_for_log(const std::string& text, int max_len) {
  if (max_len < 0) return text;
  size_t bytes = 0;
  int64_t chars = 0;
  while (bytes < text.size() && chars < max_len) {
    const unsigned char c = static_cast<unsigned char>(text[bytes]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    bytes = std::min(text.size(), bytes + n);
    ++chars;
  }
  if (bytes >= text.size()) return text;
  int64_t rest = 0;
  for (size_t i = bytes; i < text.size(); ++i) rest += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
  return text.substr(0, bytes) + "... (" + std::to_string(rest) + " more characters)";
}

}  // namespace locr::server
