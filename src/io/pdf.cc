// PDF rendering with poppler-cpp (see pdf.h for the contract). Poppler reports problems through a
// process-wide debug callback; this file installs one that keeps the first message of the current
// operation per thread, so errors can quote Poppler instead of printing to stderr. Without Poppler
// (LOCR_HAVE_POPPLER undefined) only the pure helpers work and everything else throws
// kUnsupported. This file does not decide which pages to render (page_range.h) nor detect other
// formats (document.h).
#include "io/pdf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "io/file.h"

#ifdef LOCR_HAVE_POPPLER
#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>
#endif

namespace locr::io {

namespace {

// Splash keeps rows as int byte counts; a side this long is refused whatever max_pixels says.
constexpr int64_t kMaxSide = 65535;

[[noreturn]] void fail_unsupported() {
  fail(ErrorKind::kUnsupported,
       "PDF input is not available: this locr was built without PDF support (-DLOCR_POPPLER=OFF or "
       "poppler-cpp not found); convert the pages to PNG/TIFF first, or rebuild with libpoppler-cpp-dev "
       "installed and -DLOCR_POPPLER=ON");
}

void check_index(int index, int count) {
  if (index < 0 || index >= count)
    fail(ErrorKind::kInvalidArgument, "page ", static_cast<int64_t>(index) + 1,
         " is out of range: the document has ", count, count == 1 ? " page" : " pages");
}

#ifdef LOCR_HAVE_POPPLER
thread_local std::string t_poppler_message;

void on_poppler_message(const std::string& msg, void*) {
  if (t_poppler_message.empty()) t_poppler_message = msg;
}

void install_poppler_handler() {
  static std::once_flag once;
  std::call_once(once, [] { poppler::set_debug_error_function(on_poppler_message, nullptr); });
}

std::string poppler_said() {
  std::string m = t_poppler_message;
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m.empty() ? std::string() : " (Poppler: " + m + ")";
}
#endif

}  // namespace

bool pdf_supported() {
#ifdef LOCR_HAVE_POPPLER
  return true;
#else
  return false;
#endif
}

bool looks_like_pdf(std::string_view bytes) {
  const std::string_view head = bytes.substr(0, std::min<size_t>(bytes.size(), 1024));
  return head.find("%PDF-") != std::string_view::npos;
}

void pdf_render_size(const PdfPageSize& size, const PdfOptions& opts, int* width, int* height) {
  const double w = size.width_pt, h = size.height_pt;
  auto side = [](double v) -> int {
    const double r = std::round(v);
    if (!(r >= 1)) return 1;
    return r > 2e9 ? 2000000000 : static_cast<int>(r);
  };
  if (opts.dpi > 0) {
    *width = side(w * opts.dpi / 72.0);
    *height = side(h * opts.dpi / 72.0);
    return;
  }
  const double scale = opts.longest_edge / std::max(w, h);
  if (w >= h) {
    *width = opts.longest_edge;
    *height = w == h ? opts.longest_edge : std::min(side(h * scale), opts.longest_edge);
  } else {
    *height = opts.longest_edge;
    *width = std::min(side(w * scale), opts.longest_edge);
  }
}

struct PdfDocument::Impl {
  PdfOptions opts;
  std::string bytes;  // poppler's raw-data document points into this
  mutable std::mutex mu;
  int pages = 0;
#ifdef LOCR_HAVE_POPPLER
  std::unique_ptr<poppler::document> doc;
#endif
};

PdfDocument::PdfDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PdfDocument::PdfDocument(PdfDocument&&) noexcept = default;
PdfDocument& PdfDocument::operator=(PdfDocument&&) noexcept = default;
PdfDocument::~PdfDocument() = default;

const PdfOptions& PdfDocument::options() const { return impl_->opts; }
int PdfDocument::page_count() const { return impl_->pages; }

PdfDocument PdfDocument::load(const std::string& path, const PdfOptions& opts) {
  if (!pdf_supported()) fail_unsupported();
  return open(read_file(path), opts);
}

#ifdef LOCR_HAVE_POPPLER

PdfDocument PdfDocument::open(std::string bytes, const PdfOptions& opts) {
  if (opts.dpi < 0 || !std::isfinite(opts.dpi))
    fail(ErrorKind::kInvalidArgument, "the PDF dpi must be positive (or 0 for the default longest edge); got ",
         opts.dpi);
  if (opts.dpi == 0 && opts.longest_edge <= 0)
    fail(ErrorKind::kInvalidArgument, "the PDF longest edge must be positive; got ", opts.longest_edge);
  if (opts.max_pages <= 0) fail(ErrorKind::kInvalidArgument, "max_pages must be positive; got ", opts.max_pages);
  if (bytes.empty()) fail(ErrorKind::kInvalidArgument, "the PDF is empty (0 bytes); check the upload or the path");
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    fail(ErrorKind::kLimit, "the PDF is ", bytes.size(), " bytes; at most 2 GiB can be opened");
  if (!looks_like_pdf(bytes))
    fail(ErrorKind::kInvalidArgument, "the data is not a PDF (no %PDF- header in the first 1024 bytes)");

  install_poppler_handler();
  t_poppler_message.clear();
  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  impl->bytes = std::move(bytes);
  impl->doc.reset(poppler::document::load_from_raw_data(impl->bytes.data(), static_cast<int>(impl->bytes.size()),
                                                        opts.password, opts.password));
  if (!impl->doc)
    fail(ErrorKind::kInvalidArgument, "the PDF is damaged and cannot be opened", poppler_said(),
         "; re-export or re-download the file");
  if (impl->doc->is_locked()) {
    if (opts.password.empty())
      fail(ErrorKind::kInvalidArgument, "the PDF is encrypted and needs a password; pass it with --pdf-password");
    fail(ErrorKind::kInvalidArgument, "the PDF is encrypted and the password given does not open it; check the password");
  }
  const int pages = impl->doc->pages();
  if (pages <= 0)
    fail(ErrorKind::kInvalidArgument, "the PDF has no pages", poppler_said(), "; nothing to render");
  if (pages > opts.max_pages)
    fail(ErrorKind::kLimit, "the PDF has ", pages, " pages, more than the limit of ", opts.max_pages,
         "; split the file or raise the page limit");
  impl->pages = pages;
  return PdfDocument(std::move(impl));
}

namespace {

PdfPageSize size_of(const poppler::page& page) {
  const poppler::rectf r = page.page_rect(poppler::crop_box);
  PdfPageSize s{std::fabs(r.width()), std::fabs(r.height())};
  const auto o = page.orientation();
  if (o == poppler::page::landscape || o == poppler::page::seascape) std::swap(s.width_pt, s.height_pt);
  return s;
}

std::unique_ptr<poppler::page> open_page(const poppler::document& doc, int index) {
  t_poppler_message.clear();
  std::unique_ptr<poppler::page> page(doc.create_page(index));
  if (!page)
    fail(ErrorKind::kInvalidArgument, "page ", index + 1, " of the PDF cannot be read", poppler_said(),
         "; the file is damaged");
  return page;
}

}  // namespace

PdfPageSize PdfDocument::page_size(int index) const {
  check_index(index, impl_->pages);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return size_of(*open_page(*impl_->doc, index));
}

Image PdfDocument::render_page(int index) const {
  check_index(index, impl_->pages);
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto page = open_page(*impl_->doc, index);
  const PdfPageSize size = size_of(*page);
  if (!(size.width_pt > 0) || !(size.height_pt > 0) || !std::isfinite(size.width_pt) ||
      !std::isfinite(size.height_pt))
    fail(ErrorKind::kInvalidArgument, "page ", index + 1, " of the PDF has an empty or invalid page box (",
         size.width_pt, " x ", size.height_pt, " pt); the file is damaged");
  int w = 0, h = 0;
  pdf_render_size(size, impl_->opts, &w, &h);
  // Pixel-bomb guard before Poppler allocates anything.
  if (w > kMaxSide || h > kMaxSide)
    fail(ErrorKind::kLimit, "page ", index + 1, " of the PDF would render to ", w, " x ", h,
         " pixels, more than ", kMaxSide, " on a side; lower --dpi");
  DecodeOptions limits;
  limits.max_pixels = impl_->opts.max_pixels;
  try {
    detail::check_dimensions("PDF page", w, h, limits);
  } catch (const Error& e) {
    fail(e.kind(), "page ", index + 1, ": ", e.what(), " (page is ", size.width_pt, " x ", size.height_pt,
         " pt; lower --dpi)");
  }

  poppler::page_renderer renderer;
  renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  renderer.set_paper_color(0xffffffffu);
  renderer.set_image_format(poppler::image::format_rgb24);
  // Resolution such that the displayed page maps to exactly w x h pixels; Poppler rounds the page
  // size itself, so the slice (0, 0, w, h) pins the bitmap size.
  const double xres = 72.0 * w / size.width_pt;
  const double yres = 72.0 * h / size.height_pt;
  t_poppler_message.clear();
  const poppler::image rendered = renderer.render_page(page.get(), xres, yres, 0, 0, w, h);
  if (!rendered.is_valid() || rendered.width() <= 0 || rendered.height() <= 0)
    fail(ErrorKind::kInvalidArgument, "page ", index + 1, " of the PDF could not be rendered", poppler_said(),
         "; the file may be damaged");

  Image img;
  img.width = w;
  img.height = h;
  img.rgb.assign(static_cast<size_t>(w) * h * 3, 255);  // white where Poppler's bitmap falls short
  const int cw = std::min(w, rendered.width()), ch = std::min(h, rendered.height());
  const char* data = rendered.const_data();
  const int stride = rendered.bytes_per_row();
  // format_rgb24 is packed R, G, B bytes per pixel, rows padded to 4 bytes (bytes_per_row).
  if (rendered.format() != poppler::image::format_rgb24 || rendered.bytes_per_row() < 3 * rendered.width())
    fail(ErrorKind::kInternal, "Poppler returned an unexpected image layout (format ",
         static_cast<int>(rendered.format()), ")");
  for (int y = 0; y < ch; ++y)
    std::memcpy(img.rgb.data() + static_cast<size_t>(y) * w * 3,
                data + static_cast<size_t>(y) * stride, static_cast<size_t>(cw) * 3);
  return img;
}

std::string PdfDocument::page_text(int index, PdfTextLayout layout) const {
  check_index(index, impl_->pages);
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto page = open_page(*impl_->doc, index);
  const auto mode = layout == PdfTextLayout::kPhysical ? poppler::page::physical_layout
                                                       : poppler::page::non_raw_non_physical_layout;
  t_poppler_message.clear();
  const poppler::byte_array utf8 = page->text(poppler::rectf(), mode).to_utf8();
  std::string out(utf8.begin(), utf8.end());
  // Poppler ends a page with a form feed and may use "\r\n"; callers get plain '\n' lines.
  std::string clean;
  clean.reserve(out.size());
  for (char c : out)
    if (c == '\f') clean += '\n';
    else if (c != '\r') clean += c;
  // A page without text gives line breaks only.
  if (clean.find_first_not_of(" \n") == std::string::npos) clean.clear();
  return clean;
}

#else  // !LOCR_HAVE_POPPLER

PdfDocument PdfDocument::open(std::string, const PdfOptions&) { fail_unsupported(); }
PdfPageSize PdfDocument::page_size(int index) const {
  check_index(index, impl_->pages);
  fail_unsupported();
}
Image PdfDocument::render_page(int index) const {
  check_index(index, impl_->pages);
  fail_unsupported();
}
std::string PdfDocument::page_text(int index, PdfTextLayout) const {
  check_index(index, impl_->pages);
  fail_unsupported();
}

#endif

}  // namespace locr::io
