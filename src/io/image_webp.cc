// WebP decoding with libwebp, as Pillow does it (Pillow decodes every WebP with WebPAnimDecoder,
// default options: non-premultiplied RGBA, fancy upsampling, no dithering): the canvas starts
// transparent black and the first frame is decoded into its rectangle. The file's has_alpha flag
// decides whether Pillow reports RGBA (alpha kept here) or RGB. Only the first frame of an
// animation is decoded; ICC, EXIF and XMP chunks are ignored.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>

#include "core/error.h"
#include "io/image.h"

namespace locr::io::detail {

namespace {

struct DemuxHandle {
  WebPDemuxer* demux = nullptr;
  WebPIterator iter{};
  bool has_iter = false;
  ~DemuxHandle() {
    if (has_iter) WebPDemuxReleaseIterator(&iter);
    if (demux) WebPDemuxDelete(demux);
  }
};

const char* vp8_status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data";
  }
  return "unknown error";
}

}  // namespace

Image decode_webp(std::string_view bytes, const DecodeOptions& opts) {
  WebPData data{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  DemuxHandle h;
  WebPDemuxState state = WEBP_DEMUX_PARSE_ERROR;
  h.demux = WebPDemuxPartial(&data, &state);
  if (!h.demux || state == WEBP_DEMUX_PARSE_ERROR)
    fail(ErrorKind::kInvalidArgument, "the WebP is corrupt (its RIFF chunk structure cannot be parsed); "
         "re-export the file");
  if (state != WEBP_DEMUX_DONE)
    fail(ErrorKind::kInvalidArgument, "the WebP is truncated after ", bytes.size(),
         " bytes (its chunks end early); re-export or re-download the file");

  const int64_t canvas_w = WebPDemuxGetI(h.demux, WEBP_FF_CANVAS_WIDTH);
  const int64_t canvas_h = WebPDemuxGetI(h.demux, WEBP_FF_CANVAS_HEIGHT);
  check_dimensions("WebP", canvas_w, canvas_h, opts);

  if (!WebPDemuxGetFrame(h.demux, 1, &h.iter))
    fail(ErrorKind::kInvalidArgument, "the WebP has no image frame; re-export the file");
  h.has_iter = true;
  if (h.iter.x_offset < 0 || h.iter.y_offset < 0 || h.iter.width <= 0 || h.iter.height <= 0 ||
      h.iter.x_offset + h.iter.width > canvas_w || h.iter.y_offset + h.iter.height > canvas_h)
    fail(ErrorKind::kInvalidArgument, "the WebP's first frame lies outside its canvas; re-export the file");

  // Pillow's mode: RGBA when the file's features say it has alpha, else RGB.
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(data.bytes, data.size, &features) != VP8_STATUS_OK)
    fail(ErrorKind::kInvalidArgument, "the WebP header is corrupt; re-export the file");

  const size_t n_pixels = static_cast<size_t>(canvas_w) * canvas_h;
  std::vector<uint8_t> rgba(n_pixels * 4, 0);  // transparent black canvas

  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) fail(ErrorKind::kInternal, "libwebp: version mismatch");
  const size_t stride = static_cast<size_t>(canvas_w) * 4;
  const size_t offset = static_cast<size_t>(h.iter.y_offset) * stride + static_cast<size_t>(h.iter.x_offset) * 4;
  config.output.colorspace = MODE_RGBA;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = rgba.data() + offset;
  config.output.u.RGBA.stride = static_cast<int>(stride);
  config.output.u.RGBA.size = rgba.size() - offset;
  const VP8StatusCode st = WebPDecode(h.iter.fragment.bytes, h.iter.fragment.size, &config);
  WebPFreeDecBuffer(&config.output);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA)
    fail(ErrorKind::kInvalidArgument, "the WebP is truncated (its image data ends early); "
         "re-export or re-download the file");
  if (st == VP8_STATUS_UNSUPPORTED_FEATURE)
    fail(ErrorKind::kUnsupported, "the WebP uses a feature libwebp cannot decode; re-export it");
  if (st != VP8_STATUS_OK)
    fail(ErrorKind::kInvalidArgument, "the WebP is corrupt (libwebp: ", vp8_status_text(st), "); re-export the file");

  Image img;
  img.width = static_cast<int>(canvas_w);
  img.height = static_cast<int>(canvas_h);
  img.rgb.resize(n_pixels * 3);
  if (features.has_alpha) img.alpha.resize(n_pixels);
  for (size_t i = 0; i < n_pixels; ++i) {
    std::memcpy(&img.rgb[3 * i], &rgba[4 * i], 3);
    if (features.has_alpha) img.alpha[i] = rgba[4 * i + 3];
  }
  return img;
}

}  // namespace locr::io::detail
