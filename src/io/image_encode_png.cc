// PNG encoding: 8-bit RGB, filter 0 on every row, one zlib (level 6) IDAT chunk.
#include <zlib.h>

#include "core/error.h"
#include "io/image_encode.h"

namespace locr::io {

namespace {

void put_u32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  std::string td = std::string(type, 4) + data;
  out += td;
  put_u32(out, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(td.data()), static_cast<uInt>(td.size()))));
}

}  // namespace

std::string encode_png(const Image& im) {
  if (im.width <= 0 || im.height <= 0 || im.rgb.size() != static_cast<size_t>(im.width) * im.height * 3)
    fail(ErrorKind::kInvalidArgument, "encode_png: empty or inconsistent image");
  const size_t row = static_cast<size_t>(im.width) * 3;
  std::string raw;
  raw.reserve((row + 1) * im.height);
  for (int y = 0; y < im.height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(&im.rgb[y * row]), row);
  }
  uLongf cap = compressBound(static_cast<uLong>(raw.size()));
  std::string z(cap, '\0');
  if (compress2(reinterpret_cast<Bytef*>(z.data()), &cap, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK)
    fail(ErrorKind::kInternal, "zlib compress failed");
  z.resize(cap);
  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_u32(ihdr, static_cast<uint32_t>(im.width));
  put_u32(ihdr, static_cast<uint32_t>(im.height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit, RGB, deflate, filter 0, no interlace
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", "");
  return out;
}

}  // namespace locr::io
