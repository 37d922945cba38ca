// The PDF path (io/pdf.cc over Poppler): open() of any bytes, then page sizes and a small render
// of the first pages and their text layer (io/pdf_text.h). Damaged files are locr::Error; accepted pages render to images of the
// size pdf_render_size() promised. In a build without Poppler every input must be refused.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/pdf.h"
#include "io/pdf_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr;
  io::PdfOptions opts;
  opts.longest_edge = 64;  // small renders: the parser is the target, not the rasteriser
  opts.max_pages = 64;
  opts.max_pixels = 1 << 16;
  try {
    io::PdfDocument doc = io::PdfDocument::open(std::string(reinterpret_cast<const char*>(data), size), opts);
    LOCR_FUZZ_CHECK(io::pdf_supported());
    const int pages = doc.page_count();
    LOCR_FUZZ_CHECK(pages >= 1 && pages <= opts.max_pages);
    for (int i = 0; i < pages && i < 3; ++i) {
      const io::PdfPageSize ps = doc.page_size(i);
      int w = 0, h = 0;
      io::pdf_render_size(ps, opts, &w, &h);
      try {
        const io::Image img = doc.render_page(i);
        LOCR_FUZZ_CHECK(img.width == w && img.height == h);
        LOCR_FUZZ_CHECK(img.rgb.size() == static_cast<size_t>(w) * h * 3);
      } catch (const Error& e) {
        LOCR_FUZZ_CHECK(e.what()[0] != '\0');
      }
      try {  // the text layer, as the text-layer drafter reads it
        const std::string text = io::pdf_page_draft_text(doc, i);
        LOCR_FUZZ_CHECK(text.find('\f') == std::string::npos);
      } catch (const Error& e) {
        LOCR_FUZZ_CHECK(e.what()[0] != '\0');
      }
    }
  } catch (const Error& e) {
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
  }
  return 0;
}
