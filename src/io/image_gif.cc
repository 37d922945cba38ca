// GIF decoding (first frame only) with giflib, reproducing what Pillow's GifImagePlugin gives for
// frame 0: the canvas is the logical screen, grown to hold the frame if the frame sticks out; it
// is filled with the transparent index when the frame has one, else with index 0; the frame's
// pixels are written at its offset; the local colour table wins over the global one; indices past
// the table are black; a table that is exactly the grey ramp (or no table) means the indices are
// the grey values. The transparent index becomes alpha 0 (Pillow keeps it as "transparency").
//
// Unlike Pillow, a file cut off right after the last pixel (missing block terminator and trailer)
// is refused: giflib reads that terminator as part of the last line.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "io/image.h"

namespace locr::io::detail {

namespace {

struct GifSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  bool short_read = false;
};

int gif_read_mem(GifFileType* gif, GifByteType* out, int n) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  const size_t want = n > 0 ? static_cast<size_t>(n) : 0;
  const size_t got = std::min(want, src->size - src->pos);
  if (got < want) src->short_read = true;
  std::memcpy(out, src->data + src->pos, got);
  src->pos += got;
  return static_cast<int>(got);
}

struct GifHandle {
  GifFileType* gif = nullptr;
  ~GifHandle() {
    if (gif) {
      int err = 0;
      DGifCloseFile(gif, &err);
    }
  }
};

[[noreturn]] void fail_gif(const GifSource& src, int error_code) {
  if (src.short_read || error_code == D_GIF_ERR_READ_FAILED)
    fail(ErrorKind::kInvalidArgument, "the GIF is truncated after ", src.size,
         " bytes (the first frame ends early); re-export or re-download the file");
  const char* what = GifErrorString(error_code);
  fail(ErrorKind::kInvalidArgument, "the GIF is corrupt (giflib: ", what ? what : "unknown error",
       "); re-export the file");
}

}  // namespace

Image decode_gif(std::string_view bytes, const DecodeOptions& opts) {
  GifSource src;
  src.data = reinterpret_cast<const uint8_t*>(bytes.data());
  src.size = bytes.size();
  GifHandle h;
  int err = 0;
  h.gif = DGifOpen(&src, gif_read_mem, &err);
  if (!h.gif) fail_gif(src, err);
  GifFileType* gif = h.gif;
  check_dimensions("GIF", gif->SWidth, gif->SHeight, opts, /*final=*/false);

  int transparent = -1;
  bool have_image = false;
  while (!have_image) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) fail_gif(src, gif->Error);
    switch (type) {
      case EXTENSION_RECORD_TYPE: {
        int code = 0;
        GifByteType* ext = nullptr;
        if (DGifGetExtension(gif, &code, &ext) == GIF_ERROR) fail_gif(src, gif->Error);
        // Graphics control block: [len, flags, delay lo, delay hi, transparent index].
        if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4 && (ext[1] & 1)) transparent = ext[4];
        while (ext) {
          if (DGifGetExtensionNext(gif, &ext) == GIF_ERROR) fail_gif(src, gif->Error);
        }
        break;
      }
      case IMAGE_DESC_RECORD_TYPE:
        if (DGifGetImageDesc(gif) == GIF_ERROR) fail_gif(src, gif->Error);
        have_image = true;
        break;
      case TERMINATE_RECORD_TYPE:
        fail(ErrorKind::kInvalidArgument, "the GIF contains no image; re-export the file");
      default:
        break;
    }
  }

  const GifImageDesc& desc = gif->Image;
  const int64_t x0 = desc.Left, y0 = desc.Top;
  const int64_t fw = desc.Width, fh = desc.Height;
  const int64_t width = std::max<int64_t>(gif->SWidth, x0 + fw);
  const int64_t height = std::max<int64_t>(gif->SHeight, y0 + fh);
  check_dimensions("GIF", width, height, opts);

  // Colour table and Pillow's "is this just the grey ramp" test.
  const ColorMapObject* cmap = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
  uint8_t lut[256 * 3];
  bool grey_ramp = true;
  if (cmap) {
    std::memset(lut, 0, sizeof(lut));
    const int n = std::min(cmap->ColorCount, 256);
    for (int i = 0; i < n; ++i) {
      const GifColorType& c = cmap->Colors[i];
      lut[3 * i] = c.Red;
      lut[3 * i + 1] = c.Green;
      lut[3 * i + 2] = c.Blue;
      if (!(c.Red == i && c.Green == i && c.Blue == i)) grey_ramp = false;
    }
  }
  if (!cmap || grey_ramp) {
    for (int i = 0; i < 256; ++i) lut[3 * i] = lut[3 * i + 1] = lut[3 * i + 2] = static_cast<uint8_t>(i);
  }

  // Indices of the canvas, then the frame written into it.
  const size_t n_pixels = static_cast<size_t>(width) * height;
  std::vector<uint8_t> index(n_pixels, static_cast<uint8_t>(transparent >= 0 ? transparent : 0));
  if (fw > 0 && fh > 0) {
    std::vector<GifPixelType> line(fw);
    static const int kPassStart[4] = {0, 4, 2, 1};
    static const int kPassStep[4] = {8, 8, 4, 2};
    auto put_row = [&](int64_t fy) {
      if (DGifGetLine(gif, line.data(), static_cast<int>(fw)) == GIF_ERROR) fail_gif(src, gif->Error);
      std::memcpy(&index[(y0 + fy) * width + x0], line.data(), fw);
    };
    if (desc.Interlace) {
      for (int pass = 0; pass < 4; ++pass)
        for (int64_t fy = kPassStart[pass]; fy < fh; fy += kPassStep[pass]) put_row(fy);
    } else {
      for (int64_t fy = 0; fy < fh; ++fy) put_row(fy);
    }
  }

  Image img;
  img.width = static_cast<int>(width);
  img.height = static_cast<int>(height);
  img.rgb.resize(n_pixels * 3);
  for (size_t i = 0; i < n_pixels; ++i) std::memcpy(&img.rgb[3 * i], &lut[3 * index[i]], 3);
  if (transparent >= 0) {
    img.alpha.resize(n_pixels);
    for (size_t i = 0; i < n_pixels; ++i) img.alpha[i] = index[i] == transparent ? 0 : 255;
  }
  return img;
}

}  // namespace locr::io::detail
