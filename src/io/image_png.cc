// PNG decoding with libpng, converted to RGB the way Pillow opens and converts PNGs:
// 1/2/4-bit grey scaled to 0..255, 16-bit grey ("I;16") clipped to 255 (not scaled!), 16-bit
// colour and grey+alpha reduced to their high byte, palette looked up (indices past the palette
// are black), alpha dropped from the RGB and kept separately, tRNS turned into alpha as Pillow's
// convert("RGBA") does. APNG files give their default image. Gamma, sBIT and ICC are ignored.
//
// libpng reports errors by longjmp. Every libpng call that can fail runs inside a small function
// that owns the setjmp and holds no C++ object with a destructor, so the jump never crosses a
// C++ frame; the owning C++ code keeps buffers and the png_struct alive outside those functions.
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "core/error.h"
#include "io/image.h"

namespace locr::io::detail {

namespace {

struct PngSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  bool truncated = false;
  char message[200] = {0};
};

void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) {
    src->truncated = true;
    png_error(png, "unexpected end of data");
  }
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", msg ? msg : "unknown error");
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

// --- the only functions that call setjmp; they hold no objects with destructors ---

bool guarded_read_info(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  return true;
}

bool guarded_setup(png_structp png, png_infop info, int* passes) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_packing(png);  // 1/2/4-bit samples to one byte each, values unscaled
  *passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

// Reads all rows of an interlaced image into `rows` (the full image).
bool guarded_read_image(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

// Reads one row of a non-interlaced image.
bool guarded_read_row(png_structp png, png_bytep row) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_row(png, row, nullptr);
  return true;
}

// ---

struct PngLayout {
  int width = 0, height = 0;
  int color_type = 0, bit_depth = 0;
  // palette (PLTE) and its per-index alpha (tRNS), padded to 256 entries: black, alpha 255
  uint8_t pal_rgb[256 * 3] = {0};
  uint8_t pal_alpha[256];
  bool has_trns = false;
  png_color_16 trns_color{};
};

// Converts one decoded row (after png_set_packing) to RGB + optional alpha.
void convert_row(const PngLayout& L, const uint8_t* in, uint8_t* rgb, uint8_t* alpha) {
  const int w = L.width;
  switch (L.color_type) {
    case PNG_COLOR_TYPE_GRAY: {
      if (L.bit_depth == 16) {
        // Pillow "I;16" -> RGB clips: values above 255 become 255.
        for (int x = 0; x < w; ++x) {
          const int v16 = (in[2 * x] << 8) | in[2 * x + 1];
          const uint8_t v = v16 > 255 ? 255 : static_cast<uint8_t>(v16);
          rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = v;
          if (alpha) alpha[x] = (v16 == L.trns_color.gray) ? 0 : 255;
        }
        break;
      }
      const int scale = L.bit_depth == 1 ? 255 : L.bit_depth == 2 ? 85 : L.bit_depth == 4 ? 17 : 1;
      // Pillow keeps tRNS as the raw sample for L;2/L;4/L but as 0/255 for mode "1".
      const int key = L.bit_depth == 1 ? (L.trns_color.gray ? 255 : 0) : L.trns_color.gray;
      for (int x = 0; x < w; ++x) {
        const int v = in[x] * scale;
        rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = static_cast<uint8_t>(v);
        if (alpha) alpha[x] = (v == key) ? 0 : 255;
      }
      break;
    }
    case PNG_COLOR_TYPE_GRAY_ALPHA: {
      const int step = L.bit_depth == 16 ? 2 : 1;  // 16-bit: high bytes ("LA;16B")
      for (int x = 0; x < w; ++x) {
        const uint8_t v = in[(2 * x) * step];
        rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = v;
        alpha[x] = in[(2 * x + 1) * step];
      }
      break;
    }
    case PNG_COLOR_TYPE_RGB: {
      const int step = L.bit_depth == 16 ? 2 : 1;  // 16-bit: high bytes ("RGB;16B")
      for (int x = 0; x < w; ++x) {
        for (int c = 0; c < 3; ++c) rgb[3 * x + c] = in[(3 * x + c) * step];
        if (alpha) {
          // Pillow compares the 8-bit pixel with the tRNS samples as stored (16-bit values).
          const bool key = rgb[3 * x] == L.trns_color.red && rgb[3 * x + 1] == L.trns_color.green &&
                           rgb[3 * x + 2] == L.trns_color.blue;
          alpha[x] = key ? 0 : 255;
        }
      }
      break;
    }
    case PNG_COLOR_TYPE_RGB_ALPHA: {
      const int step = L.bit_depth == 16 ? 2 : 1;
      for (int x = 0; x < w; ++x) {
        for (int c = 0; c < 3; ++c) rgb[3 * x + c] = in[(4 * x + c) * step];
        alpha[x] = in[(4 * x + 3) * step];
      }
      break;
    }
    case PNG_COLOR_TYPE_PALETTE: {
      for (int x = 0; x < w; ++x) {
        const uint8_t idx = in[x];
        std::memcpy(&rgb[3 * x], &L.pal_rgb[3 * idx], 3);
        if (alpha) alpha[x] = L.pal_alpha[idx];
      }
      break;
    }
  }
}

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The PNG chunk CRC (ISO 3309 / zlib crc32), bitwise: only used on the 17 bytes of IHDR.
uint32_t crc32_of(const uint8_t* data, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

struct PngHandles {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngHandles() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

[[noreturn]] void fail_png(const PngSource& src) {
  if (src.truncated)
    fail(ErrorKind::kInvalidArgument, "the PNG is truncated after ", src.size,
         " bytes (the image data ends early); re-export or re-download the file");
  fail(ErrorKind::kInvalidArgument, "the PNG is corrupt (libpng: ", src.message, "); re-export the file");
}

}  // namespace

Image decode_png(std::string_view bytes, const DecodeOptions& opts) {
  // The size is checked from IHDR (always the first chunk) before libpng runs, as Pillow checks
  // it on open: a bomb is refused as such even when the rest of the file is missing.
  // A damaged IHDR (bad CRC) is left to libpng, which reports it as corruption.
  if (bytes.size() >= 33 && std::memcmp(bytes.data() + 12, "IHDR", 4) == 0 &&
      crc32_of(reinterpret_cast<const uint8_t*>(bytes.data()) + 12, 17) ==
          read_be32(reinterpret_cast<const uint8_t*>(bytes.data()) + 29)) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + 16;
    const int64_t w = read_be32(p), h = read_be32(p + 4);
    if (w > 0 && h > 0) check_dimensions("PNG", w, h, opts);  // the size libpng will read too
  }

  PngSource src;
  src.data = reinterpret_cast<const uint8_t*>(bytes.data());
  src.size = bytes.size();

  PngHandles h;
  h.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
  if (!h.png) fail(ErrorKind::kInternal, "libpng: cannot create a read struct");
  h.info = png_create_info_struct(h.png);
  if (!h.info) fail(ErrorKind::kInternal, "libpng: cannot create an info struct");
  png_set_read_fn(h.png, &src, png_read_mem);
  // Our own pixel limit applies below; lift libpng's 1e6-per-side default to its maximum.
  png_set_user_limits(h.png, 0x7fffffff, 0x7fffffff);

  if (!guarded_read_info(h.png, h.info)) fail_png(src);

  PngLayout L;
  const png_uint_32 width = png_get_image_width(h.png, h.info);
  const png_uint_32 height = png_get_image_height(h.png, h.info);
  check_dimensions("PNG", width, height, opts);
  L.width = static_cast<int>(width);
  L.height = static_cast<int>(height);
  L.color_type = png_get_color_type(h.png, h.info);
  L.bit_depth = png_get_bit_depth(h.png, h.info);

  std::memset(L.pal_alpha, 255, sizeof(L.pal_alpha));
  if (L.color_type == PNG_COLOR_TYPE_PALETTE) {
    png_colorp palette = nullptr;
    int n_palette = 0;
    if (png_get_PLTE(h.png, h.info, &palette, &n_palette) == 0 || !palette)
      fail(ErrorKind::kInvalidArgument, "the PNG is palette-based but has no PLTE chunk; re-export the file");
    for (int i = 0; i < n_palette && i < 256; ++i) {
      L.pal_rgb[3 * i] = palette[i].red;
      L.pal_rgb[3 * i + 1] = palette[i].green;
      L.pal_rgb[3 * i + 2] = palette[i].blue;
    }
  }
  {
    png_bytep trans_alpha = nullptr;
    int num_trans = 0;
    png_color_16p trans_color = nullptr;
    if (png_get_tRNS(h.png, h.info, &trans_alpha, &num_trans, &trans_color) != 0) {
      if (L.color_type == PNG_COLOR_TYPE_PALETTE) {
        if (trans_alpha && num_trans > 0) {
          L.has_trns = true;
          for (int i = 0; i < num_trans && i < 256; ++i) L.pal_alpha[i] = trans_alpha[i];
        }
      } else if (trans_color && (L.color_type == PNG_COLOR_TYPE_GRAY || L.color_type == PNG_COLOR_TYPE_RGB)) {
        L.has_trns = true;
        L.trns_color = *trans_color;
      }
    }
  }

  int passes = 1;
  if (!guarded_setup(h.png, h.info, &passes)) fail_png(src);
  const size_t rowbytes = png_get_rowbytes(h.png, h.info);

  Image img;
  img.width = L.width;
  img.height = L.height;
  const size_t n_pixels = static_cast<size_t>(L.width) * L.height;
  img.rgb.resize(n_pixels * 3);
  const bool want_alpha = L.has_trns || L.color_type == PNG_COLOR_TYPE_GRAY_ALPHA ||
                          L.color_type == PNG_COLOR_TYPE_RGB_ALPHA;
  if (want_alpha) img.alpha.resize(n_pixels);

  auto alpha_row = [&](int y) { return want_alpha ? img.alpha.data() + static_cast<size_t>(y) * L.width : nullptr; };
  if (passes > 1) {
    std::vector<uint8_t> buf(rowbytes * L.height);
    std::vector<png_bytep> rows(L.height);
    for (int y = 0; y < L.height; ++y) rows[y] = buf.data() + rowbytes * y;
    if (!guarded_read_image(h.png, rows.data())) fail_png(src);
    for (int y = 0; y < L.height; ++y)
      convert_row(L, rows[y], img.rgb.data() + static_cast<size_t>(y) * L.width * 3, alpha_row(y));
  } else {
    std::vector<uint8_t> row(rowbytes);
    for (int y = 0; y < L.height; ++y) {
      if (!guarded_read_row(h.png, row.data())) fail_png(src);
      convert_row(L, row.data(), img.rgb.data() + static_cast<size_t>(y) * L.width * 3, alpha_row(y));
    }
  }
  // The chunks after the image data (up to IEND) are not read: Pillow ignores a missing IEND too.
  return img;
}

}  // namespace locr::io::detail
