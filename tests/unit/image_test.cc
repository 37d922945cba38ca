// Image decoding against Pillow: every file in tests/fixtures/preprocess/decode/ (made by
// tools/reference/make_preprocess_fixtures.py) must decode byte-for-byte to
// Image.open(f).convert("RGB"), and, where Pillow sees transparency, flatten_alpha_on_white must
// give transformers' convert_to_rgb. Broken files must give a locr::Error of the right kind whose
// message names the format; truncations and byte flips of every fixture must never crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "io/image.h"
#include "io/safetensors.h"

namespace locr::io {
namespace {

const std::string kDir = std::string(LOCR_FIXTURES_DIR) + "/preprocess";
const std::string kDecodeDir = kDir + "/decode";

std::shared_ptr<SafetensorsFile> goldens() {
  static auto file = SafetensorsFile::open(kDir + "/decode_golden.safetensors");
  return file;
}

std::vector<std::string> good_fixtures() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kDecodeDir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("bad_", 0) != 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

ErrorKind kind_of(const std::string& bytes, const DecodeOptions& opts, std::string* message) {
  try {
    decode_image(bytes, opts);
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  *message = "";
  return ErrorKind::kInternal;  // no error: callers compare against an expected kind
}

class ImageDecode : public testing::TestWithParam<std::string> {};

TEST_P(ImageDecode, MatchesPillowConvertRgb) {
  const std::string name = GetParam();
  const Image img = load_image(kDecodeDir + "/" + name);
  const Tensor want = goldens()->get(name);
  ASSERT_EQ(want.ndim(), 3);
  ASSERT_EQ(img.height, want.dim(0));
  ASSERT_EQ(img.width, want.dim(1));
  ASSERT_EQ(img.rgb.size(), static_cast<size_t>(want.numel()));
  size_t diff = 0;
  int max_diff = 0;
  for (size_t i = 0; i < img.rgb.size(); ++i) {
    const int d = std::abs(int{img.rgb[i]} - int{want.data<uint8_t>()[i]});
    diff += d != 0;
    max_diff = std::max(max_diff, d);
  }
  EXPECT_EQ(diff, 0u) << name << ": " << diff << " of " << img.rgb.size() << " bytes differ, max " << max_diff;

  // Alpha is kept exactly when Pillow reports an alpha band or a transparency key.
  const bool hf_flattens = goldens()->has(name + ":hf");
  EXPECT_EQ(img.has_alpha(), hf_flattens) << name;
  if (hf_flattens) {
    Image flat = img;
    flatten_alpha_on_white(flat);
    EXPECT_FALSE(flat.has_alpha());
    const Tensor hf = goldens()->get(name + ":hf");
    ASSERT_EQ(flat.rgb.size(), static_cast<size_t>(hf.numel()));
    EXPECT_TRUE(std::equal(flat.rgb.begin(), flat.rgb.end(), hf.data<uint8_t>())) << name << " (transformers)";
  }
}

// With apply_exif_orientation, the result is ImageOps.exif_transpose(Image.open(f)).convert("RGB").
TEST_P(ImageDecode, ExifOrientationMatchesExifTranspose) {
  const std::string name = GetParam();
  DecodeOptions opts;
  opts.apply_exif_orientation = true;
  const Image img = load_image(kDecodeDir + "/" + name, opts);
  const std::string key = goldens()->has(name + ":exif") ? name + ":exif" : name;
  const Tensor want = goldens()->get(key);
  ASSERT_EQ(img.height, want.dim(0)) << key;
  ASSERT_EQ(img.width, want.dim(1)) << key;
  EXPECT_TRUE(std::equal(img.rgb.begin(), img.rgb.end(), want.data<uint8_t>())) << key;
  if (img.has_alpha()) {
    EXPECT_EQ(img.alpha.size(), static_cast<size_t>(img.width) * img.height);
  }
}

TEST_P(ImageDecode, PixelLimitIsCheckedFromTheHeader) {
  const std::string bytes = read_file(kDecodeDir + "/" + GetParam());
  DecodeOptions opts;
  opts.max_pixels = 50;  // below the smallest fixture (13 x 6)
  std::string msg;
  EXPECT_EQ(kind_of(bytes, opts, &msg), ErrorKind::kLimit) << msg;
  EXPECT_NE(msg.find(image_format_name(detect_image_format(bytes))), std::string::npos) << msg;
}

// probe_image() reads the size the decoder would produce without decoding (TIFF applies its
// orientation tag after decoding, which can only swap the sides), and refuses bombs the same way.
TEST_P(ImageDecode, ProbeGivesTheDecodedSize) {
  const std::string bytes = read_file(kDecodeDir + "/" + GetParam());
  const Image img = decode_image(bytes);
  const ImageSize size = probe_image(bytes);
  if (detect_image_format(bytes) == ImageFormat::kTiff && size.width != img.width) {
    EXPECT_EQ(size.width, img.height);
    EXPECT_EQ(size.height, img.width);
  } else {
    EXPECT_EQ(size.width, img.width);
    EXPECT_EQ(size.height, img.height);
  }
  DecodeOptions opts;
  opts.max_pixels = 50;
  EXPECT_THROW(probe_image(bytes, opts), Error);
}

// What a damaged file may give: a well-formed image (both sides > 0, within the pixel limit, RGB
// and alpha buffers of exactly that size) or a locr::Error of a decoding kind whose message is not
// empty. Returns false (with a failure recorded) otherwise; anything else thrown fails the test.
struct Outcome {
  bool decoded = false;
  int width = 0, height = 0;
  std::string message;
};

Outcome decode_damaged(std::string_view bytes, const DecodeOptions& opts, const std::string& what) {
  Outcome out;
  try {
    const Image img = decode_image(bytes, opts);
    out.decoded = true;
    out.width = img.width;
    out.height = img.height;
    EXPECT_GT(img.width, 0) << what;
    EXPECT_GT(img.height, 0) << what;
    const int64_t n = static_cast<int64_t>(img.width) * img.height;
    EXPECT_LE(n, opts.max_pixels) << what;
    EXPECT_EQ(img.rgb.size(), static_cast<size_t>(n) * 3) << what;
    EXPECT_TRUE(img.alpha.empty() || img.alpha.size() == static_cast<size_t>(n)) << what;
  } catch (const Error& e) {
    out.message = e.what();
    EXPECT_FALSE(out.message.empty()) << what;
    EXPECT_TRUE(e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kLimit ||
                e.kind() == ErrorKind::kUnsupported)
        << what << ": " << out.message;
  }
  return out;
}

// Every prefix (at a stride) and a few hundred random byte flips never crash (run under ASan to
// see overreads: scripts/test-sanitize.sh) and give decode_damaged()'s outcomes. A prefix that
// still decodes has the full file's size (the header is intact), and a prefix that fails names
// the format once its magic number is complete.
TEST_P(ImageDecode, SurvivesTruncationAndCorruption) {
  const std::string bytes = read_file(kDecodeDir + "/" + GetParam());
  DecodeOptions opts;
  opts.max_pixels = 1 << 22;  // flipped header bytes may ask for more; that must be kLimit, not an allocation
  const Image full = decode_image(bytes, opts);
  const std::string format = image_format_name(detect_image_format(bytes));
  const size_t stride = std::max<size_t>(1, bytes.size() / 97);
  int truncated_errors = 0;
  for (size_t n = 0; n < bytes.size(); n += stride) {
    const std::string_view prefix = std::string_view(bytes).substr(0, n);
    const std::string what = GetParam() + " cut to " + std::to_string(n) + " bytes";
    const Outcome o = decode_damaged(prefix, opts, what);
    if (o.decoded) {
      EXPECT_EQ(o.width, full.width) << what;
      EXPECT_EQ(o.height, full.height) << what;
    } else {
      ++truncated_errors;
      if (detect_image_format(prefix) != ImageFormat::kUnknown) {
        EXPECT_NE(o.message.find(format), std::string::npos) << what << ": " << o.message;
      }
    }
  }
  EXPECT_GT(truncated_errors, 0) << "no truncation of " << GetParam() << " was refused";
  std::mt19937 rng(1234);
  int decoded = 0;
  for (int iter = 0; iter < 150; ++iter) {
    std::string b = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<char>(rng() & 0xff);
    decoded += decode_damaged(b, opts, GetParam() + " flip " + std::to_string(iter)).decoded;
  }
  RecordProperty("flipped_inputs_decoded", decoded);
}

INSTANTIATE_TEST_SUITE_P(ImageGolden, ImageDecode, testing::ValuesIn(good_fixtures()), test_name);

TEST(ImageDecodeFixtures, EveryFormatAndModeIsCovered) {
  const auto names = good_fixtures();
  EXPECT_GE(names.size(), 80u);
  for (const char* prefix : {"png_", "jpeg_", "webp_", "bmp_", "gif_", "tiff_"})
    EXPECT_TRUE(std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; }))
        << prefix;
}

struct BadCase {
  const char* file;
  ErrorKind kind;
  const char* format;  // must appear in the message
};

TEST(ImageErrors, BrokenFilesGiveTheRightKindAndNameTheFormat) {
  const BadCase cases[] = {
      {"bad_png_truncated.png", ErrorKind::kInvalidArgument, "PNG"},
      {"bad_png_crc.png", ErrorKind::kInvalidArgument, "PNG"},
      {"bad_png_bomb.png", ErrorKind::kLimit, "PNG"},
      {"bad_jpeg_truncated.jpg", ErrorKind::kInvalidArgument, "JPEG"},
      {"bad_jpeg_no_eoi.jpg", ErrorKind::kInvalidArgument, "JPEG"},
      {"bad_jpeg_sof.jpg", ErrorKind::kInvalidArgument, "JPEG"},
      {"bad_gif_truncated.gif", ErrorKind::kInvalidArgument, "GIF"},
      {"bad_webp_truncated.webp", ErrorKind::kInvalidArgument, "WebP"},
      {"bad_webp_garbage.webp", ErrorKind::kInvalidArgument, "WebP"},
      {"bad_tiff_truncated.tif", ErrorKind::kInvalidArgument, "TIFF"},
      {"bad_tiff_lzw_truncated.tif", ErrorKind::kInvalidArgument, "TIFF"},
      {"bad_bmp_truncated.bmp", ErrorKind::kInvalidArgument, "BMP"},
      {"bad_bmp_header.bmp", ErrorKind::kInvalidArgument, "BMP"},
      {"bad_garbage.bin", ErrorKind::kInvalidArgument, "PNG, JPEG, WebP, GIF, BMP, TIFF"},
      {"bad_empty.bin", ErrorKind::kInvalidArgument, "PNG, JPEG, WebP, GIF, BMP, TIFF"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string bytes = read_file(kDecodeDir + "/" + c.file);
    std::string msg;
    EXPECT_EQ(kind_of(bytes, {}, &msg), c.kind) << msg;
    EXPECT_NE(msg.find(c.format), std::string::npos) << msg;
  }
}

TEST(ImageErrors, TruncationMessagesSayTruncated) {
  for (const char* f : {"bad_png_truncated.png", "bad_jpeg_truncated.jpg", "bad_gif_truncated.gif",
                        "bad_webp_truncated.webp", "bad_tiff_truncated.tif", "bad_bmp_truncated.bmp"}) {
    std::string msg;
    kind_of(read_file(kDecodeDir + "/" + f), {}, &msg);
    EXPECT_NE(msg.find("truncated"), std::string::npos) << f << ": " << msg;
  }
}

TEST(ImageErrors, PdfGetsAHint) {
  std::string msg;
  EXPECT_EQ(kind_of("%PDF-1.7\n...", {}, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("PDF"), std::string::npos) << msg;
}

TEST(ImageErrors, LoadImageNamesThePath) {
  try {
    load_image(kDecodeDir + "/bad_garbage.bin");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_garbage.bin"), std::string::npos) << e.what();
  }
  try {
    load_image(kDecodeDir + "/does_not_exist.png");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

// A 13000 x 13000 PNG of which only the header is present: the probe returns its size at once
// (nothing the size of the image is allocated), while decoding reports the truncation.
TEST(ImageProbe, PngHeaderAloneGivesTheSize) {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  const uint8_t ihdr[] = {0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0x32, 0xc8, 0, 0, 0x32, 0xc8, 8, 0, 0, 0, 0};
  png.append(reinterpret_cast<const char*>(ihdr), sizeof ihdr);
  uint32_t crc = 0xffffffffu;  // CRC-32 of the chunk type and data
  for (size_t i = 4; i < sizeof ihdr; ++i) {
    crc ^= ihdr[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  for (int k = 3; k >= 0; --k) png += static_cast<char>((crc >> (8 * k)) & 0xff);
  const ImageSize size = probe_image(png);
  EXPECT_EQ(size.width, 13000);
  EXPECT_EQ(size.height, 13000);
  EXPECT_THROW(decode_image(png), Error);
  DecodeOptions small;
  small.max_pixels = 100000000;
  std::string msg;
  EXPECT_EQ(kind_of(png, small, &msg), ErrorKind::kLimit) << msg;
  try {
    probe_image(png, small);
    FAIL() << "expected kLimit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  }
}

TEST(ImageFormat, DetectsMagicNumbers) {
  EXPECT_EQ(detect_image_format("\x89PNG\r\n\x1a\n...."), ImageFormat::kPng);
  EXPECT_EQ(detect_image_format("\xff\xd8\xff\xe0"), ImageFormat::kJpeg);
  EXPECT_EQ(detect_image_format(std::string_view("RIFF\0\0\0\0WEBPVP8 ", 16)), ImageFormat::kWebp);
  EXPECT_EQ(detect_image_format(std::string_view("RIFF\0\0\0\0WAVEfmt ", 16)), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format("GIF89a"), ImageFormat::kGif);
  EXPECT_EQ(detect_image_format("GIF87a"), ImageFormat::kGif);
  EXPECT_EQ(detect_image_format("BM"), ImageFormat::kBmp);
  EXPECT_EQ(detect_image_format(std::string_view("II*\0", 4)), ImageFormat::kTiff);
  EXPECT_EQ(detect_image_format(std::string_view("MM\0*", 4)), ImageFormat::kTiff);
  EXPECT_EQ(detect_image_format(""), ImageFormat::kUnknown);
  EXPECT_STREQ(image_format_name(ImageFormat::kWebp), "WebP");
}

TEST(ImageFlatten, MatchesPillowAlphaCompositeOverWhite) {
  // Spot values of Pillow's Image.alpha_composite(white, (v, v, v, a)).convert("RGB").
  Image img;
  img.width = 5;
  img.height = 1;
  img.rgb = {0, 0, 0, 10, 20, 30, 200, 100, 50, 255, 255, 255, 7, 7, 7};
  img.alpha = {0, 255, 128, 77, 1};
  flatten_alpha_on_white(img);
  const std::vector<uint8_t> want = {255, 255, 255, 10, 20, 30, 227, 177, 152, 255, 255, 255, 254, 254, 254};
  EXPECT_EQ(img.rgb, want);
  EXPECT_FALSE(img.has_alpha());
}

}  // namespace
}  // namespace locr::io
