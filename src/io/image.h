// Image decoding (PNG, JPEG, WebP, BMP, GIF first frame, TIFF first or any page) to 8-bit RGB, converting
// modes as Pillow's Image.convert("RGB") does (grayscale, palette, alpha dropped without compositing,
// CMYK, 16-bit). A pixel limit refuses decompression bombs before any large allocation.
//
// Where the source carries transparency (an alpha band, or a tRNS / GIF transparent index), the
// alpha that Pillow's convert("RGBA") would give is kept next to the RGB: transformers' PIL path
// (image_transforms.convert_to_rgb, v5) composites such images onto white before preprocessing,
// which flatten_alpha_on_white() reproduces bit for bit. This file does not resize or manage colour
// (ICC profiles and gAMA are ignored); EXIF orientation is applied only on request, since
// Image.open does not apply it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace locr::io {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3], row-major
  // [height, width] alpha as Pillow's convert("RGBA") gives it, or empty when the source has no
  // transparency (Pillow: no "A" band and no "transparency" info).
  std::vector<uint8_t> alpha;
  bool has_alpha() const { return !alpha.empty(); }
};

struct DecodeOptions {
  int64_t max_pixels = 178956970;  // Pillow's MAX_IMAGE_PIXELS * 2 (DecompressionBombError)
  // Rotate/flip JPEG, PNG and WebP images by their EXIF Orientation tag, as PIL.ImageOps.
  // exif_transpose does. Off by default because Image.open does not (so a PIL image handed to
  // the processor is not rotated), but transformers' own loaders (load_image, and the processor
  // when given a URL/path) do apply it. TIFF orientation is always applied: Pillow's TIFF loader
  // does that itself.
  bool apply_exif_orientation = false;
  // Stop at the size check: the decoder parses the header as usual and check_dimensions() (with
  // `final` set) throws detail::HeaderOnly carrying the size instead of going on. probe_image()
  // sets this; callers do not.
  bool header_only = false;
};

// The size an image will decode to, from its header (no pixel buffer is allocated).
struct ImageSize {
  int width = 0;
  int height = 0;
};

enum class ImageFormat { kUnknown, kPng, kJpeg, kWebp, kGif, kBmp, kTiff };

// Sniffs the format from the leading bytes (magic numbers only; nothing is decoded).
ImageFormat detect_image_format(std::string_view bytes);
const char* image_format_name(ImageFormat format);  // "PNG", "JPEG", ...; "unknown"

// Detects the format from the bytes. Throws locr::Error (kInvalidArgument for corrupt/truncated/
// unknown data, kLimit for too many pixels, kUnsupported for valid but unsupported variants such
// as 12-bit JPEG) with a message naming the format and the problem.
// This file otherwise does not apply EXIF orientation (see DecodeOptions::apply_exif_orientation).
Image decode_image(std::string_view bytes, const DecodeOptions& opts = {});
Image load_image(const std::string& path, const DecodeOptions& opts = {});
// The decoded size of an image (before EXIF orientation, which only swaps the sides) from the
// format's own header parser, stopped at the point where decode_image() checks the pixel limit:
// cheap (no pixels are decoded) and the same limit errors as decode_image(). Data damaged past
// what the header parser reads still probes (a PNG needs only its IHDR); decode_image() reports it.
ImageSize probe_image(std::string_view bytes, const DecodeOptions& opts = {});

// Multi-page TIFF: each directory (IFD) of the main chain is a page, as Pillow's
// ImageSequence.Iterator / n_frames see them (SubIFDs such as thumbnails are not pages).
// tiff_page_count() reads only the directory chain; decode_tiff_page(bytes, 0, opts) decodes the
// same image as decode_image(). Both throw kInvalidArgument for data that is not a valid TIFF, and
// decode_tiff_page() for an index past the last page.
int tiff_page_count(std::string_view bytes);
Image decode_tiff_page(std::string_view bytes, int index, const DecodeOptions& opts = {});
// probe_image() for one TIFF page.
ImageSize probe_tiff_page(std::string_view bytes, int index, const DecodeOptions& opts = {});

// What transformers' convert_to_rgb does to a PIL image with transparency: convert("RGBA"), then
// Image.alpha_composite over opaque white, then RGB (Pillow's integer formula, exact). A no-op
// when the image has no alpha; clears `alpha` afterwards.
void flatten_alpha_on_white(Image& image);

namespace detail {

// Throws kLimit if width * height exceeds opts.max_pixels, kInvalidArgument if a side is <= 0.
// Called by every decoder with the header's size before the pixel buffer is allocated; `final`
// is false for an early check whose size may still grow (a GIF's screen before its first
// frame). With opts.header_only a final check throws HeaderOnly.
void check_dimensions(const char* format, int64_t width, int64_t height, const DecodeOptions& opts,
                      bool final = true);
struct HeaderOnly {
  ImageSize size;
};

// Per-format decoders; `bytes` is known to start with the format's magic number.
Image decode_png(std::string_view bytes, const DecodeOptions& opts);
Image decode_jpeg(std::string_view bytes, const DecodeOptions& opts);
Image decode_webp(std::string_view bytes, const DecodeOptions& opts);
Image decode_gif(std::string_view bytes, const DecodeOptions& opts);
Image decode_bmp(std::string_view bytes, const DecodeOptions& opts);
Image decode_tiff(std::string_view bytes, const DecodeOptions& opts);

// The EXIF Orientation (1..8; 1 when absent or unreadable) of a JPEG, PNG or WebP file.
int exif_orientation(ImageFormat format, std::string_view bytes);
// Pillow's ImageOps.exif_transpose for orientations 2..8 (others: no-op), alpha included.
void apply_orientation(Image& img, int orientation);

// Pillow's CMYK -> RGB (Convert.c cmyk2rgb): nk = 255 - k; r = nk - round(c * nk / 255), ...
void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, int64_t n_pixels);

}  // namespace detail

}  // namespace locr::io
