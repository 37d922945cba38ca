// TIFF decoding (first page) with libtiff, reproducing Pillow's TiffImagePlugin: the raw samples
// are read strip by strip (or tile by tile) and converted with Pillow's rules rather than with
// TIFFReadRGBAImage, which would differ from Pillow (it premultiplies unassociated alpha, scales
// 16-bit palettes with rounding, and rescales 16-bit grey). Per Pillow: MinIsWhite 1/2/4/8-bit is
// inverted, 16-bit grey is clipped to 255 (not scaled, and not inverted even for MinIsWhite),
// 16-bit colour keeps its high byte, palettes keep the high byte of each 16-bit entry,
// associated alpha is un-premultiplied, CMYK uses Pillow's formula, and - unlike JPEG - the
// Orientation tag IS applied (Pillow's TIFF loader calls exif_transpose).
//
// JPEG-compressed YCbCr is decoded to RGB by libtiff (JPEGCOLORMODE_RGB, as Pillow asks). Other
// YCbCr files go through TIFFReadRGBAImage, which is not guaranteed to match Pillow bit for bit.
// Not supported: LAB, float and 32-bit integer samples, 12-bit, "La" and other modes Pillow lacks.
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "io/image.h"

namespace locr::io::detail {

namespace {

struct TiffSource {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t pos = 0;
  bool short_read = false;
  char message[256] = {0};
};

tmsize_t tiff_read(thandle_t h, void* buf, tmsize_t n) {
  auto* s = static_cast<TiffSource*>(h);
  if (n <= 0) return 0;
  const uint64_t avail = s->pos < s->size ? s->size - s->pos : 0;
  const uint64_t got = static_cast<uint64_t>(n) < avail ? static_cast<uint64_t>(n) : avail;
  if (got < static_cast<uint64_t>(n)) s->short_read = true;
  std::memcpy(buf, s->data + s->pos, got);
  s->pos += got;
  return static_cast<tmsize_t>(got);
}
tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return -1; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  uint64_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0;
  s->pos = base + off;
  return s->pos;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffSource*>(h)->size; }
int tiff_map(thandle_t, void**, toff_t*) { return 0; }
void tiff_unmap(thandle_t, void*, toff_t) {}

int tiff_on_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<TiffSource*>(user);
  if (s->message[0] == 0) {
    char text[200];
    std::vsnprintf(text, sizeof(text), fmt, ap);
    std::snprintf(s->message, sizeof(s->message), "%s%s%s", module ? module : "", module ? ": " : "", text);
  }
  return 1;  // handled: do not call libtiff's global (stderr) handler
}
int tiff_on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffHandle {
  TIFF* tif = nullptr;
  TIFFOpenOptions* opts = nullptr;
  ~TiffHandle() {
    if (tif) TIFFClose(tif);
    if (opts) TIFFOpenOptionsFree(opts);
  }
};

[[noreturn]] void fail_tiff(const TiffSource& src, const char* what) {
  if (src.short_read)
    fail(ErrorKind::kInvalidArgument, "the TIFF is truncated after ", src.size, " bytes (", what,
         " ends early); re-export or re-download the file");
  fail(ErrorKind::kInvalidArgument, "the TIFF is corrupt (", what, ": libtiff: ",
       src.message[0] ? src.message : "read failed", "); re-export the file");
}

[[noreturn]] void unsupported(const char* what) {
  fail(ErrorKind::kUnsupported, "the TIFF uses ", what, ", which is not supported; re-export it as 8-bit RGB or grey");
}

// How the samples of one pixel become RGB (+ alpha), after Pillow's OPEN_INFO table.
enum class Kind { kGrey, kGreyAlpha, kRgb, kPalette, kCmyk, kViaRgba };
enum class Alpha { kNone, kStraight, kPremultiplied };

struct Plan {
  Kind kind = Kind::kGrey;
  Alpha alpha = Alpha::kNone;
  bool invert = false;      // MinIsWhite at 1..8 bits
  bool signed16 = false;    // SampleFormat 2, 16-bit grey ("I;16S" -> "I": clipped at 0 and 255)
};

uint32_t sample_at(const uint8_t* row, uint64_t k, int bps) {
  switch (bps) {
    case 8: return row[k];
    case 16: {
      uint16_t v;
      std::memcpy(&v, row + 2 * k, 2);  // libtiff has already swapped to native order
      return v;
    }
    default: {
      const uint64_t bit = k * bps;
      return (row[bit >> 3] >> (8 - bps - (bit & 7))) & ((1u << bps) - 1);
    }
  }
}

// Reads every sample of the first page into `out` ([h, w, spp] interleaved, one T per sample).
template <typename T>
void read_samples(TIFF* tif, const TiffSource& src, int64_t w, int64_t h, int spp, int bps, bool separate,
                  std::vector<T>& out) {
  out.assign(static_cast<size_t>(w * h * spp), 0);
  const int planes = separate ? spp : 1;
  const int per_plane = separate ? 1 : spp;
  if (TIFFIsTiled(tif)) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    const tmsize_t tile_size = TIFFTileSize(tif);
    const tmsize_t row_size = TIFFTileRowSize(tif);
    if (tw == 0 || th == 0 || tile_size <= 0 || row_size <= 0) fail_tiff(src, "the tile layout");
    // Tiles may overhang the image, but not by orders of magnitude: refuse before allocating.
    const int64_t image_bytes = w * h * spp * ((bps + 7) / 8);
    if (tile_size > std::max<int64_t>(int64_t{16} << 20, 2 * image_bytes))
      fail(ErrorKind::kInvalidArgument, "the TIFF's ", tw, "x", th, " tiles are implausibly large for a ", w, "x", h,
           " image; the file is corrupt, re-export it");
    std::vector<uint8_t> buf(static_cast<size_t>(tile_size));
    for (int p = 0; p < planes; ++p)
      for (int64_t ty = 0; ty < h; ty += th)
        for (int64_t tx = 0; tx < w; tx += tw) {
          const uint32_t tile = TIFFComputeTile(tif, static_cast<uint32_t>(tx), static_cast<uint32_t>(ty), 0,
                                                static_cast<uint16_t>(p));
          if (TIFFReadEncodedTile(tif, tile, buf.data(), tile_size) < 0) fail_tiff(src, "a tile");
          for (int64_t r = 0; r < th && ty + r < h; ++r) {
            const uint8_t* row = buf.data() + r * row_size;
            for (int64_t x = 0; x < tw && tx + x < w; ++x)
              for (int s = 0; s < per_plane; ++s)
                out[static_cast<size_t>(((ty + r) * w + tx + x) * spp + p + s)] =
                    static_cast<T>(sample_at(row, static_cast<uint64_t>(x * per_plane + s), bps));
          }
        }
    return;
  }
  uint32_t rps = 0;
  if (!TIFFGetField(tif, TIFFTAG_ROWSPERSTRIP, &rps) || rps == 0 || rps > h) rps = static_cast<uint32_t>(h);
  const tmsize_t row_size = TIFFScanlineSize(tif);
  const tmsize_t strip_size = TIFFStripSize(tif);
  if (row_size <= 0 || strip_size <= 0) fail_tiff(src, "the strip layout");
  std::vector<uint8_t> buf(static_cast<size_t>(strip_size));
  for (int p = 0; p < planes; ++p)
    for (int64_t y0 = 0; y0 < h; y0 += rps) {
      const uint32_t strip = TIFFComputeStrip(tif, static_cast<uint32_t>(y0), static_cast<uint16_t>(p));
      const int64_t rows = std::min<int64_t>(rps, h - y0);
      const tmsize_t got = TIFFReadEncodedStrip(tif, strip, buf.data(), strip_size);
      if (got < 0 || got < rows * row_size) fail_tiff(src, "a strip");
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = buf.data() + r * row_size;
        T* dst = &out[static_cast<size_t>((y0 + r) * w * spp)];
        for (int64_t x = 0; x < w; ++x)
          for (int s = 0; s < per_plane; ++s)
            dst[x * spp + p + s] = static_cast<T>(sample_at(row, static_cast<uint64_t>(x * per_plane + s), bps));
      }
    }
}

uint8_t clip8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

template <typename T>
void convert(const Plan& plan, const std::vector<T>& S, int spp, int bps, const uint8_t* lut, Image& img) {
  const size_t n = static_cast<size_t>(img.width) * img.height;
  const int scale = bps == 1 ? 255 : bps == 2 ? 85 : bps == 4 ? 17 : 1;
  const int maxv = (1 << (bps > 8 ? 8 : bps)) - 1;
  auto hi = [&](uint32_t v) -> uint8_t { return bps == 16 ? static_cast<uint8_t>(v >> 8) : static_cast<uint8_t>(v); };
  for (size_t i = 0; i < n; ++i) {
    const T* s = &S[i * spp];
    uint8_t* px = &img.rgb[i * 3];
    switch (plan.kind) {
      case Kind::kGrey:
      case Kind::kGreyAlpha: {
        uint8_t v;
        if (bps == 16) {
          const int raw = plan.signed16 ? static_cast<int16_t>(s[0]) : static_cast<int>(s[0]);
          v = clip8(raw);
        } else {
          const int raw = plan.invert ? maxv - static_cast<int>(s[0]) : static_cast<int>(s[0]);
          v = static_cast<uint8_t>(raw * scale);
        }
        px[0] = px[1] = px[2] = v;
        if (plan.kind == Kind::kGreyAlpha) img.alpha[i] = static_cast<uint8_t>(s[1]);
        break;
      }
      case Kind::kRgb: {
        for (int c = 0; c < 3; ++c) px[c] = hi(s[c]);
        if (plan.alpha != Alpha::kNone) {
          const uint8_t a = hi(s[3]);
          img.alpha[i] = a;
          if (plan.alpha == Alpha::kPremultiplied) {  // Pillow's "RGBa" unpacker
            if (a == 0) {
              px[0] = px[1] = px[2] = 0;
            } else if (a != 255) {
              for (int c = 0; c < 3; ++c) px[c] = clip8(px[c] * 255 / a);
            }
          }
        }
        break;
      }
      case Kind::kPalette:
        std::memcpy(px, &lut[3 * s[0]], 3);
        if (plan.alpha != Alpha::kNone) img.alpha[i] = static_cast<uint8_t>(s[1]);
        break;
      case Kind::kCmyk: {
        uint8_t cmyk[4];
        for (int c = 0; c < 4; ++c) cmyk[c] = hi(s[c]);
        cmyk_to_rgb(cmyk, px, 1);
        break;
      }
      case Kind::kViaRgba:
        break;
    }
  }
}

// Opens the TIFF in `bytes` on the first directory (page); `src` must outlive `h`.
void open_tiff(std::string_view bytes, TiffSource& src, TiffHandle& h) {
  src.data = reinterpret_cast<const uint8_t*>(bytes.data());
  src.size = bytes.size();
  h.opts = TIFFOpenOptionsAlloc();
  if (!h.opts) fail(ErrorKind::kInternal, "libtiff: cannot allocate open options");
  TIFFOpenOptionsSetErrorHandlerExtR(h.opts, tiff_on_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(h.opts, tiff_on_warning, &src);
  TIFFOpenOptionsSetMaxSingleMemAlloc(h.opts, tmsize_t{1} << 30);
  h.tif = TIFFClientOpenExt("image.tiff", "rm", &src, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                            tiff_map, tiff_unmap, h.opts);
  if (!h.tif) fail_tiff(src, "the header");
}

// Decodes the directory (page) libtiff is positioned on.
Image decode_current(TIFF* tif, const TiffSource& src, const DecodeOptions& opts) {
  uint32_t w32 = 0, h32 = 0;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w32) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h32))
    fail(ErrorKind::kInvalidArgument, "the TIFF has no image size tags; re-export the file");
  check_dimensions("TIFF", w32, h32, opts);
  const int64_t W = w32, H = h32;

  uint16_t bps = 1, spp = 1, photometric = 0, planar = PLANARCONFIG_CONTIG, sample_format = SAMPLEFORMAT_UINT;
  uint16_t compression = COMPRESSION_NONE, orientation = 1;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &sample_format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  TIFFGetField(tif, TIFFTAG_ORIENTATION, &orientation);
  uint16_t n_extra = 0;
  uint16_t* extra = nullptr;
  TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &n_extra, &extra);
  const bool separate = planar == PLANARCONFIG_SEPARATE;
  if (compression == COMPRESSION_OJPEG) photometric = PHOTOMETRIC_YCBCR;

  Plan plan;
  const int first_extra = n_extra > 0 && extra ? extra[0] : -1;
  bool extras_unspecified = true;
  for (int i = 0; i < n_extra && extra; ++i) extras_unspecified = extras_unspecified && extra[i] == 0;
  if (sample_format != SAMPLEFORMAT_UINT && !(sample_format == SAMPLEFORMAT_INT && photometric == PHOTOMETRIC_MINISBLACK &&
                                              spp == 1 && (bps == 8 || bps == 16)))
    unsupported("signed or floating-point samples");
  if (!(bps == 1 || bps == 2 || bps == 4 || bps == 8 || bps == 16)) unsupported("an unusual bit depth");

  switch (photometric) {
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_MINISBLACK:
      if (spp == 1) {
        plan.kind = Kind::kGrey;
        plan.invert = photometric == PHOTOMETRIC_MINISWHITE && bps <= 8;
        plan.signed16 = sample_format == SAMPLEFORMAT_INT && bps == 16;
        if (photometric == PHOTOMETRIC_MINISWHITE && sample_format == SAMPLEFORMAT_INT) unsupported("signed samples");
      } else if (spp == 2 && bps == 8 && photometric == PHOTOMETRIC_MINISBLACK && first_extra == 0) {
        plan.kind = Kind::kGrey;  // "LX": the extra sample is ignored
      } else if (spp == 2 && bps == 8 && photometric == PHOTOMETRIC_MINISBLACK && first_extra == 2) {
        plan.kind = Kind::kGreyAlpha;
      } else {
        unsupported("a grey layout Pillow does not read (premultiplied or extra samples)");
      }
      break;
    case PHOTOMETRIC_RGB:
      if (bps != 8 && bps != 16) unsupported("RGB with fewer than 8 bits per sample");
      if (spp == 3) {
        plan.kind = Kind::kRgb;
      } else if (spp >= 4 && spp <= 6 && (bps == 8 || spp == 4)) {
        plan.kind = Kind::kRgb;
        if (separate && n_extra > 0 && extras_unspecified) {
          // Pillow drops unspecified extras of planar files; they are read but not used.
        } else if (n_extra == 0 && spp == 4) {
          plan.alpha = Alpha::kStraight;  // missing ExtraSamples: Pillow reads RGBA
        } else if (n_extra != spp - 3) {
          unsupported("an RGB layout whose extra samples do not add up");
        } else {
          for (int i = 1; i < n_extra; ++i)
            if (extra[i] != 0) unsupported("more than one alpha channel");
          if (first_extra == EXTRASAMPLE_ASSOCALPHA) plan.alpha = Alpha::kPremultiplied;
          else if (first_extra == EXTRASAMPLE_UNASSALPHA || first_extra == 999) plan.alpha = Alpha::kStraight;
          else if (first_extra != EXTRASAMPLE_UNSPECIFIED) unsupported("an unknown extra-sample type");
        }
      } else {
        unsupported("an RGB layout with an unusual number of samples");
      }
      break;
    case PHOTOMETRIC_PALETTE:
      if (spp == 1 && bps <= 8) {
        plan.kind = Kind::kPalette;
      } else if (spp == 2 && bps == 8 && (first_extra == 0 || first_extra == 2)) {
        plan.kind = Kind::kPalette;
        if (first_extra == 2) plan.alpha = Alpha::kStraight;
      } else {
        unsupported("a palette layout Pillow does not read");
      }
      break;
    case PHOTOMETRIC_SEPARATED:
      if ((bps == 8 && spp >= 4 && spp <= 6) || (bps == 16 && spp == 4)) plan.kind = Kind::kCmyk;
      else unsupported("a CMYK layout Pillow does not read");
      break;
    case PHOTOMETRIC_YCBCR:
      if (spp != 3 || bps != 8) unsupported("YCbCr with an unusual layout");
      if (compression == COMPRESSION_JPEG && !separate) {
        if (!TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB)) fail_tiff(src, "the JPEG setup");
        plan.kind = Kind::kRgb;
      } else {
        plan.kind = Kind::kViaRgba;
      }
      break;
    default:
      unsupported("a colour space (photometric interpretation) other than grey, RGB, palette, CMYK or YCbCr");
  }

  Image img;
  img.width = static_cast<int>(W);
  img.height = static_cast<int>(H);
  const size_t n_pixels = static_cast<size_t>(W * H);
  img.rgb.resize(n_pixels * 3);
  if (plan.alpha != Alpha::kNone || plan.kind == Kind::kGreyAlpha) img.alpha.resize(n_pixels);

  if (plan.kind == Kind::kViaRgba) {
    char emsg[1024] = {0};
    if (!TIFFRGBAImageOK(tif, emsg)) unsupported("a YCbCr layout libtiff cannot convert");
    std::vector<uint32_t> raster(n_pixels);
    if (!TIFFReadRGBAImageOriented(tif, w32, h32, raster.data(), ORIENTATION_TOPLEFT, 0))
      fail_tiff(src, "the YCbCr image data");
    for (size_t i = 0; i < n_pixels; ++i) {
      img.rgb[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
      img.rgb[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
      img.rgb[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
    }
  } else {
    uint8_t lut[256 * 3];
    std::memset(lut, 0, sizeof(lut));
    if (plan.kind == Kind::kPalette) {
      uint16_t *r = nullptr, *g = nullptr, *b = nullptr;
      if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &r, &g, &b) || !r || !g || !b)
        fail(ErrorKind::kInvalidArgument, "the TIFF is palette-based but has no colour map; re-export the file");
      for (int i = 0; i < (1 << bps); ++i) {  // Pillow: b // 256 for each 16-bit entry
        lut[3 * i] = static_cast<uint8_t>(r[i] >> 8);
        lut[3 * i + 1] = static_cast<uint8_t>(g[i] >> 8);
        lut[3 * i + 2] = static_cast<uint8_t>(b[i] >> 8);
      }
    }
    if (bps == 16) {
      std::vector<uint16_t> S;
      read_samples(tif, src, W, H, spp, bps, separate, S);
      convert(plan, S, spp, bps, lut, img);
    } else {
      std::vector<uint8_t> S;
      read_samples(tif, src, W, H, spp, bps, separate, S);
      convert(plan, S, spp, bps, lut, img);
    }
  }
  apply_orientation(img, orientation);
  return img;
}

}  // namespace

Image decode_tiff(std::string_view bytes, const DecodeOptions& opts) {
  TiffSource src;
  TiffHandle h;
  open_tiff(bytes, src, h);
  return decode_current(h.tif, src, opts);
}

}  // namespace locr::io::detail

namespace locr::io {

int tiff_page_count(std::string_view bytes) {
  if (detect_image_format(bytes) != ImageFormat::kTiff)
    fail(ErrorKind::kInvalidArgument, "the data is not a TIFF (no II*/MM* header)");
  detail::TiffSource src;
  detail::TiffHandle h;
  detail::open_tiff(bytes, src, h);
  // Walks the main IFD chain (as Pillow's seek does; SubIFDs are not pages). libtiff stops at a
  // loop in the chain, so a crafted file cannot make this spin.
  const tdir_t n = TIFFNumberOfDirectories(h.tif);
  if (n == 0) detail::fail_tiff(src, "the directory chain");
  return static_cast<int>(n);
}

Image decode_tiff_page(std::string_view bytes, int index, const DecodeOptions& opts) {
  if (detect_image_format(bytes) != ImageFormat::kTiff)
    fail(ErrorKind::kInvalidArgument, "the data is not a TIFF (no II*/MM* header)");
  detail::TiffSource src;
  detail::TiffHandle h;
  detail::open_tiff(bytes, src, h);
  if (index < 0) fail(ErrorKind::kInvalidArgument, "TIFF page index ", index, " is negative");
  if (index > 0 && !TIFFSetDirectory(h.tif, static_cast<tdir_t>(index))) {
    const tdir_t n = TIFFNumberOfDirectories(h.tif);
    if (static_cast<int64_t>(index) >= static_cast<int64_t>(n))
      fail(ErrorKind::kInvalidArgument, "page ", static_cast<int64_t>(index) + 1,
           " is out of range: the TIFF has ", n, n == 1 ? " page" : " pages");
    detail::fail_tiff(src, "a page directory");
  }
  return detail::decode_current(h.tif, src, opts);
}

}  // namespace locr::io

namespace locr::io {

ImageSize probe_tiff_page(std::string_view bytes, int index, const DecodeOptions& opts) {
  DecodeOptions o = opts;
  o.header_only = true;
  try {
    decode_tiff_page(bytes, index, o);
  } catch (const detail::HeaderOnly& h) {
    return h.size;
  }
  fail(ErrorKind::kInternal, "probe_tiff_page: the TIFF decoder did not check the image size");
}

}  // namespace locr::io
