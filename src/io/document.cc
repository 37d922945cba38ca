// Format detection and per-kind page access behind io::Document (see document.h). Holds the
// document's bytes; PDFs are delegated to PdfDocument, TIFF pages to decode_tiff_page and single
// images to decode_image. No pixel work happens here.
#include "io/document.h"

#include "io/pdf_text.h"

#include <cmath>
#include <optional>

#include "core/error.h"
#include "io/file.h"

namespace locr::io {

struct Document::Impl {
  DocumentKind kind = DocumentKind::kImage;
  ImageFormat image_format = ImageFormat::kUnknown;
  DocumentOptions opts;
  std::string bytes;               // TIFF and image pages decode from these
  std::optional<PdfDocument> pdf;  // owns its own copy of the bytes
  int pages = 0;
};

Document::Document(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Document::Document(Document&&) noexcept = default;
Document& Document::operator=(Document&&) noexcept = default;
Document::~Document() = default;

DocumentKind Document::kind() const { return impl_->kind; }
int Document::page_count() const { return impl_->pages; }

std::string Document::format_name() const {
  if (impl_->kind == DocumentKind::kPdf) return "PDF";
  return image_format_name(impl_->image_format);
}

Image Document::render_page(int index) const {
  if (index < 0 || index >= impl_->pages)
    fail(ErrorKind::kInvalidArgument, "page ", static_cast<int64_t>(index) + 1, " is out of range: the document has ",
         impl_->pages, impl_->pages == 1 ? " page" : " pages");
  switch (impl_->kind) {
    case DocumentKind::kPdf: return impl_->pdf->render_page(index);
    case DocumentKind::kTiff: return decode_tiff_page(impl_->bytes, index, impl_->opts.decode);
    case DocumentKind::kImage: return decode_image(impl_->bytes, impl_->opts.decode);
  }
  fail(ErrorKind::kInternal, "unknown document kind");
}

std::string Document::page_draft_text(int index) const {
  if (impl_->kind != DocumentKind::kPdf || index < 0 || index >= impl_->pages) return "";
  return pdf_page_draft_text(*impl_->pdf, index);
}

double Document::page_width_points(int index) const {
  if (impl_->kind == DocumentKind::kPdf && index >= 0 && index < impl_->pages) return impl_->pdf->page_size(index).width_pt;
  return page_size(index).width;
}

ImageSize Document::page_size(int index) const {
  if (index < 0 || index >= impl_->pages)
    fail(ErrorKind::kInvalidArgument, "page ", static_cast<int64_t>(index) + 1, " is out of range: the document has ",
         impl_->pages, impl_->pages == 1 ? " page" : " pages");
  switch (impl_->kind) {
    case DocumentKind::kPdf: {
      const PdfPageSize pt = impl_->pdf->page_size(index);
      if (!(pt.width_pt > 0) || !(pt.height_pt > 0) || !std::isfinite(pt.width_pt) || !std::isfinite(pt.height_pt))
        fail(ErrorKind::kInvalidArgument, "page ", index + 1, " of the PDF has an empty or invalid page box (",
             pt.width_pt, " x ", pt.height_pt, " pt); the file is damaged");
      int w = 0, h = 0;
      pdf_render_size(pt, impl_->opts.pdf, &w, &h);
      try {
        detail::check_dimensions("PDF page", w, h, impl_->opts.decode);
      } catch (const Error& e) {
        fail(e.kind(), "page ", index + 1, ": ", e.what(), " (page is ", pt.width_pt, " x ", pt.height_pt,
             " pt; lower the dpi)");
      }
      return {w, h};
    }
    case DocumentKind::kTiff: return probe_tiff_page(impl_->bytes, index, impl_->opts.decode);
    case DocumentKind::kImage: return probe_image(impl_->bytes, impl_->opts.decode);
  }
  fail(ErrorKind::kInternal, "unknown document kind");
}

Document open_document(std::string bytes, const DocumentOptions& opts) {
  auto impl = std::make_unique<Document::Impl>();
  impl->opts = opts;
  impl->opts.pdf.max_pixels = opts.decode.max_pixels;
  if (bytes.empty()) fail(ErrorKind::kInvalidArgument, "the document is empty (0 bytes); check the upload or the path");
  const ImageFormat format = detect_image_format(bytes);
  if (format == ImageFormat::kUnknown && looks_like_pdf(bytes)) {
    impl->kind = DocumentKind::kPdf;
    impl->pdf.emplace(PdfDocument::open(std::move(bytes), impl->opts.pdf));
    impl->pages = impl->pdf->page_count();
  } else if (format == ImageFormat::kTiff) {
    impl->kind = DocumentKind::kTiff;
    impl->image_format = format;
    impl->pages = tiff_page_count(bytes);
    if (impl->pages > opts.pdf.max_pages)
      fail(ErrorKind::kLimit, "the TIFF has ", impl->pages, " pages, more than the limit of ", opts.pdf.max_pages,
           "; split the file or raise the page limit");
    impl->bytes = std::move(bytes);
  } else if (format != ImageFormat::kUnknown) {
    impl->kind = DocumentKind::kImage;
    impl->image_format = format;
    impl->pages = 1;
    impl->bytes = std::move(bytes);
  } else {
    fail(ErrorKind::kInvalidArgument,
         "the document is neither a PDF nor a supported image (PNG, JPEG, WebP, GIF, BMP, TIFF); check the file");
  }
  return Document(std::move(impl));
}

Document load_document(const std::string& path, const DocumentOptions& opts) {
  return open_document(read_file(path), opts);
}

}  // namespace locr::io
