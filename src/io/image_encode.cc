// JPEG encoding into memory with libjpeg's jpeg_mem_dest. libjpeg reports fatal errors through
// error_exit, which must not return: ours longjmps back into the one guarded function below, which
// holds no C++ object with a destructor (as in image_jpeg.cc).
#include "io/image_encode.h"

#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <csetjmp>
#include <cstdlib>

#include "core/error.h"

namespace locr::io {

namespace {

struct EncodeContext {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  jmp_buf jump;
  unsigned char* out = nullptr;
  unsigned long out_size = 0;  // NOLINT(google-runtime-int): libjpeg's type
  bool created = false;
  char message[JMSG_LENGTH_MAX] = {0};
  ~EncodeContext() {
    if (created) jpeg_destroy_compress(&cinfo);
    std::free(out);  // jpeg_mem_dest allocates with malloc; the caller frees
  }
};

void on_error_exit(j_common_ptr cinfo) {
  auto* ctx = static_cast<EncodeContext*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, ctx->message);
  std::longjmp(ctx->jump, 1);
}

void on_output_message(j_common_ptr) {}

bool guarded_encode(EncodeContext* ctx, const Image* image, int quality) {
  if (setjmp(ctx->jump)) return false;
  jpeg_create_compress(&ctx->cinfo);
  ctx->created = true;
  ctx->cinfo.client_data = ctx;
  jpeg_mem_dest(&ctx->cinfo, &ctx->out, &ctx->out_size);
  ctx->cinfo.image_width = static_cast<JDIMENSION>(image->width);
  ctx->cinfo.image_height = static_cast<JDIMENSION>(image->height);
  ctx->cinfo.input_components = 3;
  ctx->cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&ctx->cinfo);
  jpeg_set_quality(&ctx->cinfo, quality, TRUE);
  jpeg_start_compress(&ctx->cinfo, TRUE);
  const size_t stride = static_cast<size_t>(image->width) * 3;
  while (ctx->cinfo.next_scanline < ctx->cinfo.image_height) {
    // libjpeg takes non-const rows but only reads them.
    auto* row = const_cast<JSAMPLE*>(image->rgb.data() + ctx->cinfo.next_scanline * stride);
    jpeg_write_scanlines(&ctx->cinfo, &row, 1);
  }
  jpeg_finish_compress(&ctx->cinfo);
  return true;
}

}  // namespace

std::string encode_jpeg(const Image& image, int quality) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3)
    fail(ErrorKind::kInvalidArgument, "encode_jpeg: the image is empty or its pixels do not match ", image.width, "x",
         image.height);
  if (quality < 1 || quality > 100) fail(ErrorKind::kInvalidArgument, "encode_jpeg: quality must be in 1..100, got ", quality);
  if (image.width > JPEG_MAX_DIMENSION || image.height > JPEG_MAX_DIMENSION)
    fail(ErrorKind::kInvalidArgument, "encode_jpeg: ", image.width, "x", image.height, " is larger than JPEG allows (",
         JPEG_MAX_DIMENSION, " px a side)");
  EncodeContext ctx;
  ctx.cinfo.err = jpeg_std_error(&ctx.err);
  ctx.err.error_exit = on_error_exit;
  ctx.err.output_message = on_output_message;
  ctx.cinfo.client_data = &ctx;
  if (!guarded_encode(&ctx, &image, quality)) fail(ErrorKind::kIo, "JPEG encoding failed: ", ctx.message);
  return std::string(reinterpret_cast<const char*>(ctx.out), ctx.out_size);
}

}  // namespace locr::io
