// io::Document over the three kinds of input: a PDF (pages rendered at 1540 px on the longest
// edge, or at a dpi), a multi-page TIFF (every directory a page, as Pillow's ImageSequence; fixture
// from tools/reference/make_pdf_fixtures.py) and single images (one page, decoded as decode_image
// does). Also format detection errors and the page limit.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "io/document.h"
#include "io/file.h"
#include "io/image.h"
#include "pdf_writer.h"

namespace locr::io {
namespace {

const std::string kFixtures = LOCR_FIXTURES_DIR;

ErrorKind kind_of(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "expected a locr::Error";
  return ErrorKind::kInternal;
}

TEST(Document, MultiPageTiff) {
  const std::string bytes = read_file(kFixtures + "/documents/multipage.tif");
  auto doc = open_document(bytes);
  EXPECT_EQ(doc.kind(), DocumentKind::kTiff);
  EXPECT_EQ(doc.format_name(), "TIFF");
  ASSERT_EQ(doc.page_count(), 3);
  const Image a = doc.render_page(0), b = doc.render_page(1), c = doc.render_page(2);
  EXPECT_EQ(a.width, 40);
  EXPECT_EQ(a.height, 30);
  EXPECT_EQ(a.rgb[0], 255);
  EXPECT_EQ(a.rgb[1], 0);
  EXPECT_EQ(b.width, 20);
  EXPECT_EQ(b.height, 50);
  EXPECT_EQ(b.rgb[0], 128);
  EXPECT_EQ(b.rgb[2], 128);
  EXPECT_EQ(c.width, 16);
  EXPECT_EQ(c.height, 8);
  EXPECT_EQ(c.rgb[0], 0);
  EXPECT_EQ(c.rgb[2], 255);
  // Page 1 is what decode_image gives (existing single-image behaviour unchanged).
  const Image first = decode_image(bytes);
  EXPECT_EQ(first.rgb, a.rgb);
  EXPECT_EQ(tiff_page_count(bytes), 3);
  std::string msg;
  EXPECT_EQ(kind_of([&] { doc.render_page(3); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_EQ(msg, "page 4 is out of range: the document has 3 pages");
  EXPECT_EQ(kind_of([&] { decode_tiff_page(bytes, 5); }), ErrorKind::kInvalidArgument);
}

// page_size() is the size render_page() gives, read without rendering or decoding.
TEST(Document, PageSizeWithoutRendering) {
  auto tiff = open_document(read_file(kFixtures + "/documents/multipage.tif"));
  for (int i = 0; i < 3; ++i) {
    const ImageSize s = tiff.page_size(i);
    const Image img = tiff.render_page(i);
    EXPECT_EQ(s.width, img.width) << i;
    EXPECT_EQ(s.height, img.height) << i;
  }
  EXPECT_EQ(kind_of([&] { tiff.page_size(3); }), ErrorKind::kInvalidArgument);
  auto png = load_document(kFixtures + "/images/page_small.png");
  const Image img = png.render_page(0);
  EXPECT_EQ(png.page_size(0).width, img.width);
  EXPECT_EQ(png.page_size(0).height, img.height);
  if (pdf_supported()) {
    auto pdf = open_document(test::make_pdf({{612, 792}, {200, 100, 0, "0 0 0 rg 0 50 100 50 re f\n"}}));
    EXPECT_EQ(pdf.page_size(0).width, 1190);
    EXPECT_EQ(pdf.page_size(0).height, 1540);
    EXPECT_EQ(pdf.page_size(1).width, 1540);
    EXPECT_EQ(pdf.page_size(1).height, 770);
    DocumentOptions small;
    small.decode.max_pixels = 1000;
    auto limited = open_document(test::make_pdf({{612, 792}}), small);
    EXPECT_EQ(kind_of([&] { limited.page_size(0); }), ErrorKind::kLimit);
  }
}

TEST(Document, TiffPageLimit) {
  DocumentOptions opts;
  opts.pdf.max_pages = 2;
  EXPECT_EQ(kind_of([&] { open_document(read_file(kFixtures + "/documents/multipage.tif"), opts); }),
            ErrorKind::kLimit);
}

TEST(Document, SingleImage) {
  const std::string path = kFixtures + "/images/page_small.png";
  auto doc = load_document(path);
  EXPECT_EQ(doc.kind(), DocumentKind::kImage);
  EXPECT_EQ(doc.format_name(), "PNG");
  ASSERT_EQ(doc.page_count(), 1);
  const Image img = doc.render_page(0);
  const Image want = load_image(path);
  EXPECT_EQ(img.width, want.width);
  EXPECT_EQ(img.height, want.height);
  EXPECT_EQ(img.rgb, want.rgb);
  EXPECT_EQ(kind_of([&] { doc.render_page(1); }), ErrorKind::kInvalidArgument);
}

TEST(Document, ImagePixelLimit) {
  DocumentOptions opts;
  opts.decode.max_pixels = 10;
  auto doc = load_document(kFixtures + "/images/page_small.png", opts);
  EXPECT_EQ(kind_of([&] { doc.render_page(0); }), ErrorKind::kLimit);
}

TEST(Document, UnknownAndEmpty) {
  std::string msg;
  EXPECT_EQ(kind_of([] { open_document("just some text"); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("neither a PDF nor"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([] { open_document(""); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([] { load_document("/nonexistent/file.pdf"); }), ErrorKind::kNotFound);
}

#ifdef LOCR_HAVE_POPPLER

TEST(Document, Pdf) {
  auto doc = open_document(test::make_pdf({{612, 792}, {200, 100, 0, "0 0 0 rg 0 50 100 50 re f\n"}}));
  EXPECT_EQ(doc.kind(), DocumentKind::kPdf);
  EXPECT_EQ(doc.format_name(), "PDF");
  ASSERT_EQ(doc.page_count(), 2);
  const Image a = doc.render_page(0);
  EXPECT_EQ(a.width, 1190);
  EXPECT_EQ(a.height, 1540);
  const Image b = doc.render_page(1);
  EXPECT_EQ(b.width, 1540);
  EXPECT_EQ(b.height, 770);
  EXPECT_EQ(b.rgb[0], 0);
  EXPECT_EQ(b.rgb.back(), 255);
}

TEST(Document, PdfOptionsApply) {
  DocumentOptions opts;
  opts.pdf.dpi = 72;
  auto doc = open_document(test::make_pdf({{612, 792}}), opts);
  const Image a = doc.render_page(0);
  EXPECT_EQ(a.width, 612);
  EXPECT_EQ(a.height, 792);
  opts.pdf.dpi = 0;
  opts.decode.max_pixels = 1000;  // one limit for every kind of page
  auto small = open_document(test::make_pdf({{612, 792}}), opts);
  EXPECT_EQ(kind_of([&] { small.render_page(0); }), ErrorKind::kLimit);
  opts = {};
  opts.pdf.max_pages = 1;
  EXPECT_EQ(kind_of([&] { open_document(test::make_pdf({{9, 9}, {9, 9}}), opts); }), ErrorKind::kLimit);
}

#else

TEST(Document, PdfWithoutPoppler) {
  std::string msg;
  EXPECT_EQ(kind_of([] { open_document(test::make_pdf({{612, 792}})); }, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("built without PDF support"), std::string::npos) << msg;
}

#endif

}  // namespace
}  // namespace locr::io
