// The EXIF Orientation tag of JPEG (APP1 "Exif"), PNG (eXIf) and WebP (EXIF chunk) files, read the
// way Pillow's getexif() finds it, and the transposition ImageOps.exif_transpose applies for it.
// Only IFD0 tag 274 is read; no other metadata is parsed. Pillow's XMP fallback
// (tiff:Orientation inside an XMP packet when EXIF has none) is not reproduced. Malformed EXIF
// is ignored (orientation 1), as Pillow ignores it with a warning.
#include <cstring>

#include "io/image.h"

namespace locr::io::detail {

namespace {

uint32_t be16(const uint8_t* p) { return (p[0] << 8) | p[1]; }
uint32_t be32(const uint8_t* p) { return (uint32_t{p[0]} << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }
uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24); }

// A TIFF-structured EXIF block (optionally prefixed "Exif\0\0"): IFD0 tag 274.
int tiff_orientation(const uint8_t* p, size_t n) {
  if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) {
    p += 6;
    n -= 6;
  }
  if (n < 8) return 1;
  bool le;
  if (std::memcmp(p, "II*\0", 4) == 0) le = true;
  else if (std::memcmp(p, "MM\0*", 4) == 0) le = false;
  else return 1;
  auto u16 = [&](size_t at) -> uint32_t { return le ? (p[at] | (p[at + 1] << 8)) : be16(p + at); };
  auto u32 = [&](size_t at) -> uint32_t { return le ? le32(p + at) : be32(p + at); };
  const uint32_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return 1;
  const uint32_t count = u16(ifd);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t e = ifd + 2 + static_cast<size_t>(i) * 12;
    if (e + 12 > n) return 1;
    if (u16(e) != 274) continue;
    const uint32_t type = u16(e + 2);
    if (u32(e + 4) < 1) return 1;
    if (type == 3) return static_cast<int>(u16(e + 8));  // SHORT
    if (type == 4) return static_cast<int>(u32(e + 8));  // LONG
    return 1;
  }
  return 1;
}

int jpeg_orientation(const uint8_t* p, size_t n) {
  size_t pos = 2;
  while (pos + 4 <= n) {
    if (p[pos] != 0xff) return 1;
    while (pos < n && p[pos] == 0xff) ++pos;  // fill bytes
    if (pos >= n) return 1;
    const uint8_t marker = p[pos++];
    if (marker == 0xd8 || marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    if (marker == 0xda || marker == 0xd9 || pos + 2 > n) return 1;  // scan data: no more metadata
    const size_t len = be16(p + pos);
    if (len < 2 || pos + len > n) return 1;
    if (marker == 0xe1 && len - 2 >= 6 && std::memcmp(p + pos + 2, "Exif\0\0", 6) == 0)
      return tiff_orientation(p + pos + 2, len - 2);  // the first Exif APP1 wins, as in Pillow
    pos += len;
  }
  return 1;
}

int png_orientation(const uint8_t* p, size_t n) {
  size_t pos = 8;
  while (pos + 12 <= n) {
    const size_t len = be32(p + pos);
    if (len > n - pos - 12) return 1;
    if (std::memcmp(p + pos + 4, "eXIf", 4) == 0) return tiff_orientation(p + pos + 8, len);
    if (std::memcmp(p + pos + 4, "IEND", 4) == 0) return 1;
    pos += 12 + len;
  }
  return 1;
}

int webp_orientation(const uint8_t* p, size_t n) {
  size_t pos = 12;
  while (pos + 8 <= n) {
    const size_t len = le32(p + pos + 4);
    if (len > n - pos - 8) return 1;
    if (std::memcmp(p + pos, "EXIF", 4) == 0) return tiff_orientation(p + pos + 8, len);
    pos += 8 + len + (len & 1);
  }
  return 1;
}

}  // namespace

int exif_orientation(ImageFormat format, std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  switch (format) {
    case ImageFormat::kJpeg: return jpeg_orientation(p, bytes.size());
    case ImageFormat::kPng: return png_orientation(p, bytes.size());
    case ImageFormat::kWebp: return webp_orientation(p, bytes.size());
    default: return 1;  // TIFF orientation is applied on load; GIF and BMP carry none
  }
}

}  // namespace locr::io::detail
