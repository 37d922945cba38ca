// JPEG decoding with the system libjpeg(-turbo), set up as Pillow sets it up so the pixels are
// byte-identical to Image.open(...).convert("RGB"): ISLOW IDCT and fancy upsampling (libjpeg's
// defaults; Pillow changes them only in draft mode), 3-component files decoded to RGB by libjpeg,
// grey replicated, and 4-component files decoded to CMYK, inverted ("CMYK;I": Pillow always assumes
// Adobe polarity) and converted with Pillow's CMYK -> RGB formula. EXIF orientation is not applied
// and ICC profiles are ignored, as in Pillow. A file that ends before its EOI marker is an error,
// as in Pillow ("image file is truncated"); libjpeg's corrupt-data warnings are ignored, as in Pillow.
//
// libjpeg reports fatal errors through error_exit, which must not return. Ours longjmps back into
// small guarded functions that hold no C++ object with a destructor, so the jump crosses only
// libjpeg's C frames; the jpeg struct is destroyed by the C++ owner afterwards.
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <csetjmp>
#include <cstring>

#include "core/error.h"
#include "io/image.h"

namespace locr::io::detail {

namespace {

struct JpegContext {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  jpeg_source_mgr src;
  jmp_buf jump;
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool fed = false;       // the whole buffer has been handed to libjpeg
  bool truncated = false;  // libjpeg asked for more data than the file has
  bool created = false;
  char message[JMSG_LENGTH_MAX] = {0};
  ~JpegContext() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

JpegContext* context_of(j_common_ptr cinfo) { return static_cast<JpegContext*>(cinfo->client_data); }

void on_error_exit(j_common_ptr cinfo) {
  JpegContext* ctx = context_of(cinfo);
  (*cinfo->err->format_message)(cinfo, ctx->message);
  std::longjmp(ctx->jump, 1);
}

void on_output_message(j_common_ptr) {}  // warnings are ignored, as Pillow ignores them

void src_init(j_decompress_ptr) {}
void src_term(j_decompress_ptr) {}

boolean src_fill(j_decompress_ptr cinfo) {
  JpegContext* ctx = context_of(reinterpret_cast<j_common_ptr>(cinfo));
  if (ctx->fed) {
    // libjpeg wants bytes past the end: the file is truncated (Pillow refuses these too).
    ctx->truncated = true;
    std::longjmp(ctx->jump, 1);
  }
  ctx->fed = true;
  ctx->src.next_input_byte = ctx->data;
  ctx->src.bytes_in_buffer = ctx->size;
  return TRUE;
}

void src_skip(j_decompress_ptr cinfo, long n) {
  if (n <= 0) return;
  JpegContext* ctx = context_of(reinterpret_cast<j_common_ptr>(cinfo));
  while (static_cast<size_t>(n) > ctx->src.bytes_in_buffer) {
    n -= static_cast<long>(ctx->src.bytes_in_buffer);
    ctx->src.bytes_in_buffer = 0;
    src_fill(cinfo);
  }
  ctx->src.next_input_byte += n;
  ctx->src.bytes_in_buffer -= static_cast<size_t>(n);
}

// --- the only functions that call setjmp; they hold no objects with destructors ---

bool guarded_create(JpegContext* ctx) {
  if (setjmp(ctx->jump)) return false;
  jpeg_create_decompress(&ctx->cinfo);
  ctx->cinfo.client_data = ctx;
  ctx->created = true;
  return true;
}

bool guarded_read_header(JpegContext* ctx) {
  if (setjmp(ctx->jump)) return false;
  jpeg_read_header(&ctx->cinfo, TRUE);
  return true;
}

bool guarded_start(JpegContext* ctx) {
  if (setjmp(ctx->jump)) return false;
  jpeg_start_decompress(&ctx->cinfo);
  return true;
}

bool guarded_read_row(JpegContext* ctx, JSAMPROW row) {
  if (setjmp(ctx->jump)) return false;
  // Our source never suspends, so libjpeg returns one row or fails through error_exit; zero rows
  // would mean it ran out of data anyway.
  if (jpeg_read_scanlines(&ctx->cinfo, &row, 1) != 1) {
    ctx->truncated = true;
    return false;
  }
  return true;
}

bool guarded_finish(JpegContext* ctx) {
  if (setjmp(ctx->jump)) return false;
  jpeg_finish_decompress(&ctx->cinfo);
  return true;
}

// ---

[[noreturn]] void fail_jpeg(const JpegContext& ctx) {
  if (ctx.truncated)
    fail(ErrorKind::kInvalidArgument, "the JPEG is truncated after ", ctx.size,
         " bytes (it ends before its end-of-image marker); re-export or re-download the file");
  if (ctx.err.msg_code == JERR_BAD_PRECISION)
    fail(ErrorKind::kUnsupported, "the JPEG uses ", ctx.cinfo.data_precision,
         "-bit samples; only 8-bit JPEGs are supported, re-export it as 8-bit");
  fail(ErrorKind::kInvalidArgument, "the JPEG is corrupt (libjpeg: ", ctx.message, "); re-export the file");
}

}  // namespace

Image decode_jpeg(std::string_view bytes, const DecodeOptions& opts) {
  JpegContext ctx;
  ctx.data = reinterpret_cast<const uint8_t*>(bytes.data());
  ctx.size = bytes.size();
  ctx.cinfo.err = jpeg_std_error(&ctx.err);
  ctx.err.error_exit = on_error_exit;
  ctx.err.output_message = on_output_message;
  ctx.cinfo.client_data = &ctx;  // jpeg_create_decompress keeps err and client_data
  if (!guarded_create(&ctx)) fail(ErrorKind::kInternal, "libjpeg: cannot create a decompressor: ", ctx.message);
  ctx.src.init_source = src_init;
  ctx.src.fill_input_buffer = src_fill;
  ctx.src.skip_input_data = src_skip;
  ctx.src.resync_to_restart = jpeg_resync_to_restart;
  ctx.src.term_source = src_term;
  ctx.src.next_input_byte = nullptr;
  ctx.src.bytes_in_buffer = 0;
  ctx.cinfo.src = &ctx.src;

  if (!guarded_read_header(&ctx)) fail_jpeg(ctx);
  const int width = static_cast<int>(ctx.cinfo.image_width);
  const int height = static_cast<int>(ctx.cinfo.image_height);
  check_dimensions("JPEG", ctx.cinfo.image_width, ctx.cinfo.image_height, opts);
  const int comps = ctx.cinfo.num_components;
  switch (comps) {
    case 1: ctx.cinfo.out_color_space = JCS_GRAYSCALE; break;
    case 3: ctx.cinfo.out_color_space = JCS_RGB; break;
    case 4: ctx.cinfo.out_color_space = JCS_CMYK; break;
    default:
      fail(ErrorKind::kUnsupported, "the JPEG has ", comps,
           " colour components; only 1 (grey), 3 (colour) and 4 (CMYK) are supported");
  }
  ctx.cinfo.dct_method = JDCT_ISLOW;
  ctx.cinfo.do_fancy_upsampling = TRUE;
  if (!guarded_start(&ctx)) fail_jpeg(ctx);

  Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<size_t>(width) * height * 3);
  std::vector<uint8_t> row(comps == 3 ? 0 : static_cast<size_t>(width) * comps);
  for (int y = 0; y < height; ++y) {
    uint8_t* out = img.rgb.data() + static_cast<size_t>(y) * width * 3;
    if (!guarded_read_row(&ctx, comps == 3 ? out : row.data())) fail_jpeg(ctx);
    if (comps == 1) {
      for (int x = 0; x < width; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = row[x];
    } else if (comps == 4) {
      for (uint8_t& v : row) v = static_cast<uint8_t>(255 - v);  // "CMYK;I"
      cmyk_to_rgb(row.data(), out, width);
    }
  }
  if (!guarded_finish(&ctx)) fail_jpeg(ctx);
  return img;
}

}  // namespace locr::io::detail
