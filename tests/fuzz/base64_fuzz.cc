// base64 and data: URL decoding (server/media.cc): base64_decode() of any bytes, and the image
// URL reader over `data:` URLs (and, with default options, the refusal of every other scheme).
// A decoded result is never longer than 3/4 of the input, and re-encoding it canonically decodes
// to the same bytes; failures are ApiError 400 with a message.
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "server/errors.h"
#include "server/media.h"

namespace {

std::string encode(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr::server;
  const std::string in(reinterpret_cast<const char*>(data), size);
  if (auto out = base64_decode(in)) {
    LOCR_FUZZ_CHECK(out->size() <= in.size() / 4 * 3 + 2);
    auto again = base64_decode(encode(*out));
    LOCR_FUZZ_CHECK(again && *again == *out);
  }
  static const ServerOptions opts;  // no local media, no remote domains
  for (const std::string& url : {in, "data:image/png;base64," + in}) {
    try {
      const std::string bytes = fetch_image_bytes(url, opts);
      LOCR_FUZZ_CHECK(!bytes.empty());
      std::string scheme = url.substr(0, 5);
      for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      LOCR_FUZZ_CHECK(scheme == "data:");  // file:// and http(s):// are refused by default
    } catch (const ApiError& e) {
      LOCR_FUZZ_CHECK(e.status() >= 400 && e.status() < 500);
      LOCR_FUZZ_CHECK(e.what()[0] != '\0');
    }
  }
  return 0;
}
