// Image format detection and dispatch to the per-format decoders (image_<format>.cc), the shared
// pixel-limit check, Pillow's CMYK -> RGB formula and the transformers-style alpha flattening.
// This file does not decode any pixels itself.
#include <cstring>

#include "core/error.h"
#include "io/file.h"
#include "io/image.h"

namespace locr::io {

namespace {

constexpr const char* kSupported = "PNG, JPEG, WebP, GIF, BMP, TIFF";

bool starts_with(std::string_view bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

std::string hex_prefix(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (i) out += ' ';
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// Pillow's MULDIV255: round(a * b / 255) for a, b in [0, 255], exact in integers.
inline int muldiv255(int a, int b) {
  const int tmp = a * b + 128;
  return ((tmp >> 8) + tmp) >> 8;
}

}  // namespace

ImageFormat detect_image_format(std::string_view bytes) {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (starts_with(bytes, "\xff\xd8\xff")) return ImageFormat::kJpeg;
  if (bytes.size() >= 12 && starts_with(bytes, "RIFF") && bytes.substr(8, 4) == "WEBP")
    return ImageFormat::kWebp;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::kGif;
  if (starts_with(bytes, "BM")) return ImageFormat::kBmp;
  if (starts_with(bytes, std::string_view("II*\0", 4)) || starts_with(bytes, std::string_view("MM\0*", 4)) ||
      starts_with(bytes, std::string_view("II+\0", 4)) || starts_with(bytes, std::string_view("MM\0+", 4)))
    return ImageFormat::kTiff;
  return ImageFormat::kUnknown;
}

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kGif: return "GIF";
    case ImageFormat::kBmp: return "BMP";
    case ImageFormat::kTiff: return "TIFF";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

Image decode_image(std::string_view bytes, const DecodeOptions& opts) {
  if (bytes.empty())
    fail(ErrorKind::kInvalidArgument, "the image data is empty; send the bytes of a ", kSupported, " file");
  const ImageFormat format = detect_image_format(bytes);
  Image img;
  switch (format) {
    case ImageFormat::kPng: img = detail::decode_png(bytes, opts); break;
    case ImageFormat::kJpeg: img = detail::decode_jpeg(bytes, opts); break;
    case ImageFormat::kWebp: img = detail::decode_webp(bytes, opts); break;
    case ImageFormat::kGif: return detail::decode_gif(bytes, opts);
    case ImageFormat::kBmp: return detail::decode_bmp(bytes, opts);
    case ImageFormat::kTiff: return detail::decode_tiff(bytes, opts);
    case ImageFormat::kUnknown: break;
  }
  if (format != ImageFormat::kUnknown) {
    if (opts.apply_exif_orientation) detail::apply_orientation(img, detail::exif_orientation(format, bytes));
    return img;
  }
  if (starts_with(bytes, "%PDF"))
    fail(ErrorKind::kUnsupported, "the data is a PDF document, not an image; render its pages to images (",
         kSupported, ") first");
  fail(ErrorKind::kInvalidArgument, "the data (", bytes.size(), " bytes, starting ", hex_prefix(bytes),
       ") is not a supported image format; supported formats are ", kSupported);
}

Image load_image(const std::string& path, const DecodeOptions& opts) {
  const std::string bytes = read_file(path);
  try {
    return decode_image(bytes, opts);
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
}

ImageSize probe_image(std::string_view bytes, const DecodeOptions& opts) {
  DecodeOptions o = opts;
  o.header_only = true;
  o.apply_exif_orientation = false;
  try {
    decode_image(bytes, o);
  } catch (const detail::HeaderOnly& h) {
    return h.size;
  }
  fail(ErrorKind::kInternal, "probe_image: the ", image_format_name(detect_image_format(bytes)),
       " decoder did not check the image size");
}

void flatten_alpha_on_white(Image& image) {
  if (image.alpha.empty()) return;
  // Pillow AlphaComposite.c with dst = opaque white: outa = 255 * 255, coef1 = a * 128,
  // coef2 = (255 - a) * 128, out = SHIFTFORDIV255(src * coef1 + 255 * coef2 + (0x80 << 7)) >> 7;
  // a == 0 returns dst (white) unchanged.
  const int64_t n = static_cast<int64_t>(image.width) * image.height;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = image.alpha[i];
    uint8_t* px = &image.rgb[i * 3];
    for (int c = 0; c < 3; ++c) {
      if (a == 0) {
        px[c] = 255;
        continue;
      }
      const uint32_t tmp = px[c] * a * 128u + 255u * (255u - a) * 128u + (0x80u << 7);
      px[c] = static_cast<uint8_t>(((((tmp >> 8) + tmp) >> 8)) >> 7);
    }
  }
  image.alpha.clear();
  image.alpha.shrink_to_fit();
}

namespace detail {

void check_dimensions(const char* format, int64_t width, int64_t height, const DecodeOptions& opts, bool final) {
  if (width <= 0 || height <= 0)
    fail(ErrorKind::kInvalidArgument, "the ", format, " header gives an empty or negative size (", width, "x",
         height, "); the file is corrupt, re-export it");
  constexpr int64_t kMaxSide = int64_t{1} << 30;  // keeps width * height far from overflow
  if (width > kMaxSide || height > kMaxSide || width * height > opts.max_pixels)
    fail(ErrorKind::kLimit, "the ", format, " image is ", width, "x", height, " pixels",
         (width > kMaxSide || height > kMaxSide) ? "" : str(" = ", width * height, " pixels"),
         ", over the limit of ", opts.max_pixels, " pixels; downscale it before sending");
  if (final && opts.header_only) throw HeaderOnly{{static_cast<int>(width), static_cast<int>(height)}};
}

// Pillow's ImageOps.exif_transpose for Orientation 2..8.
void apply_orientation(Image& img, int orientation) {
  if (orientation < 2 || orientation > 8) return;
  const int64_t W = img.width, H = img.height;
  const bool swap = orientation >= 5;
  const int64_t ow = swap ? H : W, oh = swap ? W : H;
  std::vector<uint8_t> rgb(img.rgb.size());
  std::vector<uint8_t> alpha(img.alpha.size());
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x) {
      int64_t sx = x, sy = y;
      switch (orientation) {
        case 2: sx = W - 1 - x; sy = y; break;          // FLIP_LEFT_RIGHT
        case 3: sx = W - 1 - x; sy = H - 1 - y; break;  // ROTATE_180
        case 4: sx = x; sy = H - 1 - y; break;          // FLIP_TOP_BOTTOM
        case 5: sx = y; sy = x; break;                  // TRANSPOSE
        case 6: sx = y; sy = H - 1 - x; break;          // ROTATE_270 (clockwise)
        case 7: sx = W - 1 - y; sy = H - 1 - x; break;  // TRANSVERSE
        case 8: sx = W - 1 - y; sy = x; break;          // ROTATE_90 (counter-clockwise)
      }
      const size_t d = static_cast<size_t>(y * ow + x), s = static_cast<size_t>(sy * W + sx);
      std::memcpy(&rgb[d * 3], &img.rgb[s * 3], 3);
      if (!alpha.empty()) alpha[d] = img.alpha[s];
    }
  img.rgb.swap(rgb);
  img.alpha.swap(alpha);
  img.width = static_cast<int>(ow);
  img.height = static_cast<int>(oh);
}

void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, int64_t n_pixels) {
  for (int64_t i = 0; i < n_pixels; ++i) {
    const int nk = 255 - cmyk[4 * i + 3];
    for (int c = 0; c < 3; ++c) {
      const int v = nk - muldiv255(cmyk[4 * i + c], nk);
      rgb[3 * i + c] = static_cast<uint8_t>(v < 0 ? 0 : v);
    }
  }
}

}  // namespace detail

}  // namespace locr::io
