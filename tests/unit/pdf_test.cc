// PDF rendering through Poppler against PDFs written by hand in this file (a tiny writer with a
// correct xref table), plus the encrypted fixture from tools/reference/make_pdf_fixtures.py.
// Checks: page counts, page sizes in points (with /Rotate), rendered sizes (exactly 1540 px on the
// long edge by default, round(pt * dpi / 72) with a dpi), where a black box lands (orientation),
// white paper, the error kinds and messages for damaged, empty, encrypted and bomb inputs.
// Without Poppler only the "built without PDF support" error is checked.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "io/pdf.h"
#include "pdf_writer.h"

namespace locr::io {
namespace {


const std::string kDocs = std::string(LOCR_FIXTURES_DIR) + "/documents";

template <typename F>
ErrorKind kind_of(F&& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "expected a locr::Error";
  return ErrorKind::kInternal;
}

#ifdef LOCR_HAVE_POPPLER

// Mean of the RGB samples in a w x h box whose top-left corner is (x, y).
double mean_in(const Image& img, int x, int y, int w, int h) {
  double sum = 0;
  for (int yy = y; yy < y + h; ++yy)
    for (int xx = x; xx < x + w; ++xx)
      for (int c = 0; c < 3; ++c) sum += img.rgb[(static_cast<size_t>(yy) * img.width + xx) * 3 + c];
  return sum / (3.0 * w * h);
}

TEST(Pdf, Supported) { EXPECT_TRUE(pdf_supported()); }

TEST(Pdf, PageCountAndSizes) {
  const std::string pdf = test::make_pdf({{612, 792}, {595, 842}, {200, 100}, {100, 200, 90}});
  auto doc = PdfDocument::open(pdf);
  ASSERT_EQ(doc.page_count(), 4);
  EXPECT_DOUBLE_EQ(doc.page_size(0).width_pt, 612);
  EXPECT_DOUBLE_EQ(doc.page_size(0).height_pt, 792);
  EXPECT_DOUBLE_EQ(doc.page_size(2).width_pt, 200);
  // /Rotate 90: the 100 x 200 MediaBox is displayed 200 wide and 100 high.
  EXPECT_DOUBLE_EQ(doc.page_size(3).width_pt, 200);
  EXPECT_DOUBLE_EQ(doc.page_size(3).height_pt, 100);
}

TEST(Pdf, RendersLongestEdge1540) {
  const std::string pdf = test::make_pdf({{612, 792}, {595, 842}, {842, 595}, {300, 300}});
  auto doc = PdfDocument::open(pdf);
  const int want[][2] = {{1190, 1540}, {1088, 1540}, {1540, 1088}, {1540, 1540}};
  for (int i = 0; i < 4; ++i) {
    const Image img = doc.render_page(i);
    EXPECT_EQ(img.width, want[i][0]) << "page " << i + 1;
    EXPECT_EQ(img.height, want[i][1]) << "page " << i + 1;
    EXPECT_EQ(img.rgb.size(), static_cast<size_t>(img.width) * img.height * 3);
    EXPECT_FALSE(img.has_alpha());
  }
}

TEST(Pdf, RendersAtDpi) {
  PdfOptions opts;
  opts.dpi = 100;
  auto doc = PdfDocument::open(test::make_pdf({{612, 792}, {200, 100, 90}}), opts);
  Image a = doc.render_page(0);
  EXPECT_EQ(a.width, 850);   // 8.5 in * 100
  EXPECT_EQ(a.height, 1100);
  Image b = doc.render_page(1);
  EXPECT_EQ(b.width, 139);   // rotated: 100 pt wide -> round(138.9)
  EXPECT_EQ(b.height, 278);
}

TEST(Pdf, BlackBoxTopLeftWhitePaper) {
  // 200 x 100 pt, black box over x 0..100, y 50..100 (PDF origin bottom-left) = top-left quarter.
  auto doc = PdfDocument::open(test::make_pdf({{200, 100, 0, "0 0 0 rg 0 50 100 50 re f\n"}}));
  const Image img = doc.render_page(0);
  ASSERT_EQ(img.width, 1540);
  ASSERT_EQ(img.height, 770);
  EXPECT_LT(mean_in(img, 20, 20, 700, 340), 5.0);      // inside the box
  EXPECT_GT(mean_in(img, 800, 20, 700, 340), 250.0);   // top right: paper
  EXPECT_GT(mean_in(img, 20, 420, 700, 330), 250.0);   // bottom left
  EXPECT_GT(mean_in(img, 800, 420, 700, 330), 250.0);  // bottom right
  EXPECT_EQ(img.rgb[0], 0);  // corner pixel covered
}

TEST(Pdf, RotatedPageRendersAsDisplayed) {
  // MediaBox 100 x 200 with /Rotate 90 (clockwise): the box in the unrotated bottom-left quarter
  // (x 0..50, y 0..100) shows in the top-left quarter of the displayed 200 x 100 page.
  auto doc = PdfDocument::open(test::make_pdf({{100, 200, 90, "0 0 0 rg 0 0 50 100 re f\n"}}));
  const Image img = doc.render_page(0);
  ASSERT_EQ(img.width, 1540);
  ASSERT_EQ(img.height, 770);
  EXPECT_LT(mean_in(img, 20, 20, 700, 340), 5.0);
  EXPECT_GT(mean_in(img, 800, 20, 700, 340), 250.0);
  EXPECT_GT(mean_in(img, 20, 420, 700, 330), 250.0);
}

TEST(Pdf, AntialiasedEdges) {
  // A diagonal edge (triangle below the line y = x / 2) gives grey pixels along it (antialiasing
  // on), not a hard black/white step.
  auto doc = PdfDocument::open(test::make_pdf({{200, 100, 0, "0 0 0 rg 0 0 m 200 100 l 200 0 l f\n"}}));
  const Image img = doc.render_page(0);
  int grey = 0;
  for (int x = 920; x < 960; ++x) {
    const int v = img.rgb[(static_cast<size_t>(300) * img.width + x) * 3];
    grey += v > 20 && v < 235;
  }
  EXPECT_GE(grey, 1);
  EXPECT_LT(mean_in(img, 1400, 700, 100, 60), 5.0);  // bottom right: inside the triangle
  EXPECT_GT(mean_in(img, 20, 20, 100, 60), 250.0);   // top left: paper
}

TEST(Pdf, FromFile) {
  const std::string path = testing::TempDir() + "/locr_pdf_test.pdf";
  write_file_atomic(path, test::make_pdf({{595, 842}, {595, 842}}));
  auto doc = PdfDocument::load(path);
  EXPECT_EQ(doc.page_count(), 2);
  EXPECT_EQ(doc.render_page(1).height, 1540);
  EXPECT_EQ(kind_of([] { PdfDocument::load("/nonexistent/x.pdf"); }), ErrorKind::kNotFound);
}

TEST(Pdf, PageOutOfRange) {
  auto doc = PdfDocument::open(test::make_pdf({{612, 792}, {612, 792}}));
  std::string msg;
  EXPECT_EQ(kind_of([&] { doc.render_page(2); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("page 3 is out of range: the document has 2 pages"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { doc.render_page(-1); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { doc.page_size(7); }), ErrorKind::kInvalidArgument);
}

TEST(Pdf, NotAPdfAndDamaged) {
  std::string msg;
  EXPECT_EQ(kind_of([] { PdfDocument::open(""); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([] { PdfDocument::open("hello world"); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("not a PDF"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([] { PdfDocument::open("%PDF-1.4\n%garbage garbage garbage\n"); }, &msg),
            ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("PDF"), std::string::npos) << msg;
}

TEST(Pdf, TruncatedNeverCrashes) {
  // Poppler repairs what it can; every prefix must either open (and render) or throw locr::Error.
  const std::string pdf = test::make_pdf({{200, 100, 0, "0 0 0 rg 0 50 100 50 re f\n"}, {300, 300}});
  int opened = 0, refused = 0;
  for (size_t n = 0; n < pdf.size(); n += 37) {
    try {
      auto doc = PdfDocument::open(pdf.substr(0, n));
      for (int i = 0; i < doc.page_count(); ++i) {
        try {
          doc.render_page(i);
        } catch (const Error&) {
        }
      }
      ++opened;
    } catch (const Error& e) {
      EXPECT_TRUE(e.kind() == ErrorKind::kInvalidArgument) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(Pdf, EmptyPdfHasNoPages) {
  std::string msg;
  EXPECT_EQ(kind_of([] { PdfDocument::open(test::make_pdf({})); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("no pages"), std::string::npos) << msg;
}

TEST(Pdf, Encrypted) {
  const std::string bytes = read_file(kDocs + "/encrypted_rc4.pdf");
  std::string msg;
  EXPECT_EQ(kind_of([&] { PdfDocument::open(bytes); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("encrypted and needs a password"), std::string::npos) << msg;
  PdfOptions wrong;
  wrong.password = "nope";
  EXPECT_EQ(kind_of([&] { PdfDocument::open(bytes, wrong); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("password given does not open it"), std::string::npos) << msg;
  for (const char* pw : {"secret", "owner"}) {
    PdfOptions right;
    right.password = pw;
    auto doc = PdfDocument::open(bytes, right);
    ASSERT_EQ(doc.page_count(), 1);
    const Image img = doc.render_page(0);
    EXPECT_EQ(img.width, 1540);
    EXPECT_EQ(img.height, 770);
    EXPECT_LT(mean_in(img, 20, 20, 700, 340), 5.0);
    EXPECT_GT(mean_in(img, 800, 420, 700, 330), 250.0);
  }
}

TEST(Pdf, PageLimit) {
  PdfOptions opts;
  opts.max_pages = 3;
  std::string msg;
  EXPECT_EQ(kind_of([&] { PdfDocument::open(test::make_pdf({{9, 9}, {9, 9}, {9, 9}, {9, 9}}), opts); }, &msg),
            ErrorKind::kLimit);
  EXPECT_NE(msg.find("4 pages, more than the limit of 3"), std::string::npos) << msg;
  EXPECT_EQ(PdfDocument::open(test::make_pdf({{9, 9}, {9, 9}, {9, 9}}), opts).page_count(), 3);
}

TEST(Pdf, PageSizeBombRefusedBeforeRendering) {
  // 14400 pt (200 in) square at 1200 dpi = 240000 px a side: refused without allocating.
  PdfOptions opts;
  opts.dpi = 1200;
  auto doc = PdfDocument::open(test::make_pdf({{14400, 14400}}), opts);
  std::string msg;
  EXPECT_EQ(kind_of([&] { doc.render_page(0); }, &msg), ErrorKind::kLimit);
  EXPECT_NE(msg.find("page 1"), std::string::npos) << msg;
  // Within sides but over the pixel limit.
  opts.dpi = 300;
  opts.max_pixels = 1000000;
  auto doc2 = PdfDocument::open(test::make_pdf({{612, 792}}), opts);
  EXPECT_EQ(kind_of([&] { doc2.render_page(0); }, &msg), ErrorKind::kLimit);
  // The default (longest edge 1540) renders the same huge page fine.
  auto doc3 = PdfDocument::open(test::make_pdf({{14400, 7200}}));
  const Image img = doc3.render_page(0);
  EXPECT_EQ(img.width, 1540);
  EXPECT_EQ(img.height, 770);
}

TEST(Pdf, BadOptions) {
  PdfOptions opts;
  opts.dpi = -5;
  EXPECT_EQ(kind_of([&] { PdfDocument::open(test::make_pdf({{9, 9}}), opts); }), ErrorKind::kInvalidArgument);
}

TEST(Pdf, ConcurrentRenderingOfOneDocument) {
  auto doc = PdfDocument::open(test::make_pdf({{200, 100, 0, "0 0 0 rg 0 50 100 50 re f\n"},
                                               {100, 200, 90, "0 0 0 rg 0 0 50 100 re f\n"}}));
  const Image want = doc.render_page(0);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 3; ++k) {
        const Image img = doc.render_page((t + k) % 2);
        if (img.width != want.width || img.height != want.height) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

#else  // !LOCR_HAVE_POPPLER

TEST(Pdf, BuiltWithoutPoppler) {
  EXPECT_FALSE(pdf_supported());
  std::string msg;
  EXPECT_EQ(kind_of([] { PdfDocument::open(test::make_pdf({{9, 9}})); }, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("built without PDF support"), std::string::npos) << msg;
}

#endif

TEST(Pdf, RenderSizeArithmetic) {
  int w = 0, h = 0;
  PdfOptions opts;
  pdf_render_size({612, 792}, opts, &w, &h);
  EXPECT_EQ(w, 1190);  // round(612 * 1540 / 792) = round(1190.0)
  EXPECT_EQ(h, 1540);
  pdf_render_size({841.89, 595.28}, opts, &w, &h);  // A4 landscape
  EXPECT_EQ(w, 1540);
  EXPECT_EQ(h, 1089);
  pdf_render_size({1e-3, 500}, opts, &w, &h);
  EXPECT_EQ(w, 1);
  EXPECT_EQ(h, 1540);
  opts.dpi = 200;
  pdf_render_size({595.28, 841.89}, opts, &w, &h);
  EXPECT_EQ(w, 1654);
  EXPECT_EQ(h, 2339);
  EXPECT_TRUE(looks_like_pdf("%PDF-1.7\n"));
  EXPECT_TRUE(looks_like_pdf("junk before %PDF-1.4"));
  EXPECT_FALSE(looks_like_pdf("%PNG"));
}

}  // namespace
}  // namespace locr::io
