// Image decoders (PNG, JPEG, WebP, GIF, BMP, TIFF incl. multi-page, EXIF orientation) through the
// from-bytes entry points: any input decodes to a well-formed image or throws locr::Error with a
// message; nothing else may escape, and nothing may crash.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/image.h"

namespace {

void check_image(const locr::io::Image& img, int64_t max_pixels) {
  LOCR_FUZZ_CHECK(img.width > 0 && img.height > 0);
  const int64_t n = static_cast<int64_t>(img.width) * img.height;
  LOCR_FUZZ_CHECK(n <= max_pixels);
  LOCR_FUZZ_CHECK(img.rgb.size() == static_cast<size_t>(n) * 3);
  LOCR_FUZZ_CHECK(img.alpha.empty() || img.alpha.size() == static_cast<size_t>(n));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  io::DecodeOptions opts;
  opts.max_pixels = 1 << 22;  // bounded memory per input; the limit itself is part of what is tested
  opts.apply_exif_orientation = true;
  try {
    io::Image img = io::decode_image(bytes, opts);
    check_image(img, opts.max_pixels);
    io::flatten_alpha_on_white(img);
    check_image(img, opts.max_pixels);
    LOCR_FUZZ_CHECK(!img.has_alpha());
  } catch (const Error& e) {
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
  }
  if (io::detect_image_format(bytes) == io::ImageFormat::kTiff) {
    try {
      const int pages = io::tiff_page_count(bytes);
      LOCR_FUZZ_CHECK(pages >= 1);
      for (int i = 1; i < pages && i < 4; ++i) check_image(io::decode_tiff_page(bytes, i, opts), opts.max_pixels);
    } catch (const Error& e) {
      LOCR_FUZZ_CHECK(e.what()[0] != '\0');
    }
  }
  return 0;
}
