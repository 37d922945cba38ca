// BMP decoding, written here (no library), following Pillow's BmpImagePlugin so the result equals
// Image.open(...).convert("RGB"): OS/2 (12-byte) and Windows (40..124-byte) headers; 1/4/8-bit
// palette (indices past the palette are black), 16-bit 5-5-5 and 5-6-5 (Pillow's v * 255 / 31
// expansion), 24-bit, 32-bit BI_RGB (4th byte ignored, as Pillow does) and the BI_BITFIELDS layouts
// Pillow accepts (an alpha mask gives RGBA: alpha kept separately); bottom-up and top-down rows;
// RLE8 and RLE4 decoded exactly as Pillow's BmpRleDecoder (including its quirks: a run past the
// end of a row is cut, data ending before the last pixel is an error).
//
// Not handled: JPEG/PNG-compressed BMPs, 2-bit and 64-bit BMPs (Pillow refuses them too). One
// Pillow quirk is not copied: for a 4-bit (or 8-bit 2-colour) file whose palette is exactly the
// grey ramp Pillow reads the rows with the wrong bit depth; we look the palette up properly.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "io/image.h"

namespace locr::io::detail {

namespace {

uint32_t rd16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t rd32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

[[noreturn]] void truncated(size_t size, const char* where) {
  fail(ErrorKind::kInvalidArgument, "the BMP is truncated after ", size, " bytes (", where,
       " ends early); re-export or re-download the file");
}

enum class Layout { kPalette, kBit1, kBgr15, kBgr16, kBgr24, kMask32 };

struct BmpInfo {
  int64_t width = 0, height = 0;
  bool top_down = false;
  int bits = 0;
  uint32_t compression = 0;
  uint32_t masks[4] = {0, 0, 0, 0};  // r, g, b, a for 32-bit bitfields
  bool has_alpha = false;
  Layout layout = Layout::kBgr24;
};

int mask_shift(uint32_t mask) {
  if (mask == 0) return 0;
  int s = 0;
  while (s < 32 && !((mask >> s) & 1)) ++s;
  return s;
}

// Pillow's BmpRleDecoder, step for step: returns the index bytes in file order (bottom row first).
std::vector<uint8_t> decode_rle(const uint8_t* file, size_t file_size, size_t pos, int64_t xsize,
                                int64_t ysize, bool rle4) {
  const size_t dest_length = static_cast<size_t>(xsize * ysize);
  std::vector<uint8_t> data;
  data.reserve(dest_length);
  int64_t x = 0;
  auto read_byte = [&](uint8_t* out) {
    if (pos >= file_size) return false;
    *out = file[pos++];
    return true;
  };
  while (data.size() < dest_length) {
    uint8_t num_pixels_b, byte;
    if (!read_byte(&num_pixels_b) || !read_byte(&byte)) break;
    int64_t num_pixels = num_pixels_b;
    if (num_pixels) {
      if (x + num_pixels > xsize) num_pixels = std::max<int64_t>(0, xsize - x);  // too much data for row
      if (rle4) {
        const uint8_t first = byte >> 4, second = byte & 0x0f;
        for (int64_t i = 0; i < num_pixels; ++i) data.push_back(i % 2 == 0 ? first : second);
      } else {
        data.insert(data.end(), static_cast<size_t>(num_pixels), byte);
      }
      x += num_pixels;
    } else if (byte == 0) {  // end of line
      while (data.size() % xsize != 0) data.push_back(0);
      x = 0;
    } else if (byte == 1) {  // end of bitmap
      break;
    } else if (byte == 2) {  // delta
      uint8_t right, up;
      if (!read_byte(&right) || !read_byte(&up)) break;
      const size_t n = std::min<size_t>(dest_length - data.size(), right + static_cast<size_t>(up) * xsize);
      data.insert(data.end(), n, 0);
      x = static_cast<int64_t>(data.size() % xsize);
    } else {  // absolute mode
      const size_t data_count = std::min<size_t>(dest_length - data.size(), byte);
      const size_t byte_count = rle4 ? (data_count + 1) / 2 : data_count;
      const size_t avail = std::min(byte_count, file_size - pos);
      if (rle4) {
        for (size_t i = 0; i < avail; ++i) {
          data.push_back(file[pos + i] >> 4);
          if (i * 2 + 1 < data_count) data.push_back(file[pos + i] & 0x0f);
        }
      } else {
        data.insert(data.end(), file + pos, file + pos + avail);
      }
      pos += avail;
      if (avail < byte_count || data.size() == dest_length) break;
      x += byte;
      if (pos % 2 != 0) ++pos;  // align to a 16-bit word (file offset, as Pillow's fd.tell())
    }
  }
  return data;
}

}  // namespace

Image decode_bmp(std::string_view bytes, const DecodeOptions& opts) {
  const auto* f = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  if (size < 18) truncated(size, "the file header");
  size_t offset = rd32(f + 10);
  const uint32_t header_size = rd32(f + 14);
  size_t pos = 14 + header_size;  // where the palette (or the bitfield masks) starts
  BmpInfo info;
  int palette_padding = 4;
  int64_t colors = 0;
  if (header_size == 12) {
    if (size < 14 + 12) truncated(size, "the bitmap header");
    info.width = rd16(f + 18);
    info.height = rd16(f + 20);
    info.bits = static_cast<int>(rd16(f + 24));
    palette_padding = 3;
  } else if (header_size == 40 || header_size == 52 || header_size == 56 || header_size == 64 ||
             header_size == 108 || header_size == 124) {
    if (size < 14 + header_size) truncated(size, "the bitmap header");
    const uint8_t* hd = f + 18;  // header data after the size field
    info.top_down = hd[7] == 0xff;
    info.width = rd32(hd);  // unsigned, as Pillow reads it
    info.height = info.top_down ? (int64_t{1} << 32) - rd32(hd + 4) : rd32(hd + 4);
    info.bits = static_cast<int>(rd16(hd + 10));
    info.compression = rd32(hd + 12);
    colors = rd32(hd + 28);
    if (info.compression == 3) {  // BI_BITFIELDS
      if (header_size - 4 >= 48) {
        for (int i = 0; i < 3; ++i) info.masks[i] = rd32(hd + 36 + 4 * i);
        info.masks[3] = header_size - 4 >= 52 ? rd32(hd + 48) : 0;
      } else {
        if (size < 14 + header_size + 12) truncated(size, "the bitfield masks");
        for (int i = 0; i < 3; ++i) info.masks[i] = rd32(f + 14 + header_size + 4 * i);
        pos += 12;
      }
    }
  } else {
    fail(ErrorKind::kInvalidArgument, "the BMP has an unknown or corrupt header (header size ", header_size,
         " bytes); re-export it as a standard Windows BMP");
  }
  check_dimensions("BMP", info.width, info.height, opts);

  if (colors == 0) colors = int64_t{1} << std::min(info.bits, 32);
  if (offset == 14 + header_size && info.bits <= 8) offset += static_cast<size_t>(palette_padding * colors);

  switch (info.bits) {
    case 1: case 4: case 8: info.layout = Layout::kPalette; break;
    case 16: info.layout = Layout::kBgr15; break;
    case 24: info.layout = Layout::kBgr24; break;
    case 32:
      info.layout = Layout::kMask32;
      if (info.compression != 3) {  // BI_RGB: "BGRX", the 4th byte is ignored
        info.masks[0] = 0xff0000; info.masks[1] = 0xff00; info.masks[2] = 0xff; info.masks[3] = 0;
      }
      break;
    default:
      fail(ErrorKind::kUnsupported, "the BMP has an unsupported pixel depth (", info.bits,
           " bits); re-export it as 8-, 24- or 32-bit");
  }
  bool rle = false;
  if (info.compression == 3) {
    const uint32_t* m = info.masks;
    bool ok = false;
    if (info.bits == 32) {
      static const uint32_t kOk[8][4] = {
          {0xff0000, 0xff00, 0xff, 0x0},       {0xff000000, 0xff0000, 0xff00, 0x0},
          {0xff000000, 0xff00, 0xff, 0x0},     {0xff000000, 0xff0000, 0xff00, 0xff},
          {0xff, 0xff00, 0xff0000, 0xff000000}, {0xff0000, 0xff00, 0xff, 0xff000000},
          {0xff000000, 0xff00, 0xff, 0xff0000}, {0x0, 0x0, 0x0, 0x0}};
      for (const auto& k : kOk) ok = ok || std::equal(k, k + 4, m);
      info.has_alpha = ok && (m[3] != 0 || (m[0] | m[1] | m[2]) == 0);
      if (ok && (m[0] | m[1] | m[2] | m[3]) == 0) {  // all-zero masks: Pillow reads BGRA
        info.masks[0] = 0xff0000; info.masks[1] = 0xff00; info.masks[2] = 0xff; info.masks[3] = 0xff000000;
      }
    } else if (info.bits == 24) {
      ok = m[0] == 0xff0000 && m[1] == 0xff00 && m[2] == 0xff;
    } else if (info.bits == 16) {
      if (m[0] == 0xf800 && m[1] == 0x7e0 && m[2] == 0x1f) { ok = true; info.layout = Layout::kBgr16; }
      if (m[0] == 0x7c00 && m[1] == 0x3e0 && m[2] == 0x1f) { ok = true; info.layout = Layout::kBgr15; }
    }
    if (!ok)
      fail(ErrorKind::kUnsupported, "the BMP uses an unsupported bitfields layout; re-export it as 24- or 32-bit");
  } else if (info.compression == 1 || info.compression == 2) {
    rle = true;
  } else if (info.compression != 0) {
    fail(ErrorKind::kUnsupported, "the BMP uses unsupported compression (type ", info.compression,
         "); re-export it uncompressed");
  }

  // Palette (read right after the header, as Pillow does), BGR(X) -> RGB, padded with black.
  uint8_t lut[256 * 3];
  std::memset(lut, 0, sizeof(lut));
  if (info.layout == Layout::kPalette) {
    if (!(colors > 0 && colors <= 65536))
      fail(ErrorKind::kInvalidArgument, "the BMP has an invalid palette size (", colors, " colours); re-export it");
    const size_t pal_bytes = static_cast<size_t>(palette_padding * colors);
    const size_t have = pos < size ? std::min(pal_bytes, size - pos) : 0;
    const uint8_t* pal = f + pos;
    bool grey = true;
    for (int64_t i = 0; i < colors && grey; ++i) {
      const int val = colors == 2 ? (i == 0 ? 0 : 255) : static_cast<int>(i);
      const size_t at = static_cast<size_t>(i) * palette_padding;
      if (at + 3 > have || val > 255 || pal[at] != val || pal[at + 1] != val || pal[at + 2] != val) grey = false;
    }
    for (int64_t i = 0; i < colors && i < 256; ++i) {
      const size_t at = static_cast<size_t>(i) * palette_padding;
      if (at + 3 > have) break;
      lut[3 * i] = pal[at + 2];
      lut[3 * i + 1] = pal[at + 1];
      lut[3 * i + 2] = pal[at];
    }
    if (grey && colors <= 2 && info.bits == 1 && !rle) info.layout = Layout::kBit1;  // Pillow mode "1"
  }

  const int64_t w = info.width, h = info.height;
  Image img;
  img.width = static_cast<int>(w);
  img.height = static_cast<int>(h);
  const size_t n_pixels = static_cast<size_t>(w * h);

  if (rle) {
    if (info.layout != Layout::kPalette)
      fail(ErrorKind::kUnsupported, "the BMP is RLE-compressed with ", info.bits, " bits per pixel; re-export it");
    if (offset > size) truncated(size, "the pixel data");
    const std::vector<uint8_t> idx = decode_rle(f, size, offset, w, h, info.compression == 2);
    if (idx.size() < n_pixels)
      fail(ErrorKind::kInvalidArgument, "the BMP's RLE data ends before the last pixel (", idx.size(), " of ",
           n_pixels, " pixels); re-export the file");
    img.rgb.resize(n_pixels * 3);
    for (int64_t y = 0; y < h; ++y) {
      const int64_t out_y = info.top_down ? y : h - 1 - y;
      for (int64_t x = 0; x < w; ++x)
        std::memcpy(&img.rgb[static_cast<size_t>(out_y * w + x) * 3], &lut[3 * idx[y * w + x]], 3);
    }
    return img;
  }

  const size_t stride = static_cast<size_t>(((w * info.bits + 31) >> 3) & ~int64_t{3});
  if (offset > size || (size - offset) / stride < static_cast<size_t>(h)) truncated(size, "the pixel data");
  img.rgb.resize(n_pixels * 3);
  if (info.has_alpha) img.alpha.resize(n_pixels);
  int shifts[4];
  for (int c = 0; c < 4; ++c) shifts[c] = mask_shift(info.masks[c]);

  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = f + offset + static_cast<size_t>(y) * stride;
    const int64_t out_y = info.top_down ? y : h - 1 - y;
    uint8_t* out = &img.rgb[static_cast<size_t>(out_y * w) * 3];
    for (int64_t x = 0; x < w; ++x) {
      uint8_t* px = out + 3 * x;
      switch (info.layout) {
        case Layout::kPalette: {
          int idx;
          if (info.bits == 8) idx = row[x];
          else if (info.bits == 4) idx = (row[x >> 1] >> ((x & 1) ? 0 : 4)) & 0x0f;
          else idx = (row[x >> 3] >> (7 - (x & 7))) & 1;
          std::memcpy(px, &lut[3 * idx], 3);
          break;
        }
        case Layout::kBit1:
          px[0] = px[1] = px[2] = ((row[x >> 3] >> (7 - (x & 7))) & 1) ? 255 : 0;
          break;
        case Layout::kBgr15: {
          const uint32_t p = rd16(row + 2 * x);
          px[2] = static_cast<uint8_t>((p & 31) * 255 / 31);
          px[1] = static_cast<uint8_t>(((p >> 5) & 31) * 255 / 31);
          px[0] = static_cast<uint8_t>(((p >> 10) & 31) * 255 / 31);
          break;
        }
        case Layout::kBgr16: {
          const uint32_t p = rd16(row + 2 * x);
          px[2] = static_cast<uint8_t>((p & 31) * 255 / 31);
          px[1] = static_cast<uint8_t>(((p >> 5) & 63) * 255 / 63);
          px[0] = static_cast<uint8_t>(((p >> 11) & 31) * 255 / 31);
          break;
        }
        case Layout::kBgr24:
          px[0] = row[3 * x + 2];
          px[1] = row[3 * x + 1];
          px[2] = row[3 * x];
          break;
        case Layout::kMask32: {
          const uint32_t p = rd32(row + 4 * x);
          for (int c = 0; c < 3; ++c) px[c] = static_cast<uint8_t>((p & info.masks[c]) >> shifts[c]);
          if (info.has_alpha) img.alpha[static_cast<size_t>(out_y * w + x)] =
              static_cast<uint8_t>((p & info.masks[3]) >> shifts[3]);
          break;
        }
      }
    }
  }
  return img;
}

}  // namespace locr::io::detail
