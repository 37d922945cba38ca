// encode_png: lossless, byte for byte back through the decoder. encode_jpeg: what it writes decodes (with our Pillow-exact decoder) to the same size and close to
// the same pixels, and bad input is refused with a message.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "io/image.h"
#include "io/image_encode.h"

namespace locr::io {
namespace {

Image gradient(int w, int h) {
  Image im;
  im.width = w;
  im.height = h;
  im.rgb.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &im.rgb[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / (w - 1));
      p[1] = static_cast<uint8_t>(y * 255 / (h - 1));
      p[2] = static_cast<uint8_t>((x + y) % 256);
    }
  return im;
}

double psnr(const Image& a, const Image& b) {
  double se = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) {
    const double d = double(a.rgb[i]) - double(b.rgb[i]);
    se += d * d;
  }
  const double mse = se / static_cast<double>(a.rgb.size());
  return 10 * std::log10(255.0 * 255.0 / mse);
}

TEST(ImageEncode, JpegRoundTripsThroughTheDecoder) {
  const Image src = gradient(123, 77);  // odd sizes: partial MCUs on both axes
  const std::string jpeg = encode_jpeg(src, 92);
  ASSERT_GT(jpeg.size(), 100u);
  EXPECT_EQ(detect_image_format(jpeg), ImageFormat::kJpeg);
  const Image back = decode_image(jpeg);
  ASSERT_EQ(back.width, 123);
  ASSERT_EQ(back.height, 77);
  EXPECT_GT(psnr(src, back), 30.0);
}

TEST(ImageEncode, LowerQualityIsSmaller) {
  const Image src = gradient(200, 150);
  EXPECT_LT(encode_jpeg(src, 20).size(), encode_jpeg(src, 95).size());
}

TEST(ImageEncode, RefusesEmptyOrMismatchedImagesAndBadQuality) {
  Image empty;
  EXPECT_THROW(encode_jpeg(empty), Error);
  Image short_pixels = gradient(10, 10);
  short_pixels.rgb.resize(10);
  EXPECT_THROW(encode_jpeg(short_pixels), Error);
  EXPECT_THROW(encode_jpeg(gradient(10, 10), 0), Error);
  EXPECT_THROW(encode_jpeg(gradient(10, 10), 101), Error);
}

TEST(ImageEncode, PngRoundTripsExactly) {
  Image src = gradient(37, 19);
  src.alpha.assign(static_cast<size_t>(37) * 19, 7);  // ignored: the PNG is RGB
  const std::string png = encode_png(src);
  EXPECT_EQ(detect_image_format(png), ImageFormat::kPng);
  const Image back = decode_image(png);
  EXPECT_EQ(back.width, 37);
  EXPECT_EQ(back.height, 19);
  EXPECT_EQ(back.rgb, src.rgb);
  EXPECT_FALSE(back.has_alpha());
  EXPECT_THROW(encode_png(Image{}), locr::Error);
}

}  // namespace
}  // namespace locr::io
