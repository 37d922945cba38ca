// A document is a sequence of pages, whatever the file: a PDF (each page rendered, by default at
// 1540 px on its longest edge; see pdf.h), a multi-page TIFF (each directory of the main chain is a
// page, as Pillow's ImageSequence), or any other single image (one page). The format is detected
// from the bytes, never from a file name. Pages come out as io::Image exactly as the underlying
// decoder gives them (images are not resized; alpha is kept for the processor to flatten).
//
// This is what the batch command and the OCR endpoint iterate over; it does not choose pages
// (page_range.h) and does not run the model. Thread safety: render_page() may be called from
// several threads; PDF pages are rendered one at a time per document (Poppler needs that), image
// and TIFF pages are decoded independently from the immutable bytes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "io/image.h"
#include "io/pdf.h"

namespace locr::io {

enum class DocumentKind { kPdf, kTiff, kImage };

struct DocumentOptions {
  // Pixel limit and EXIF handling for image and TIFF pages.
  DecodeOptions decode;
  // Password, dpi / longest edge and page limit for PDFs. pdf.max_pixels is replaced by
  // decode.max_pixels so one limit covers every kind of page.
  PdfOptions pdf;
};

class Document {
 public:
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;
  ~Document();

  DocumentKind kind() const;
  // "PDF", "TIFF", "PNG", "JPEG", ... (the detected format).
  std::string format_name() const;
  int page_count() const;
  // `index` is 0-based. Throws kInvalidArgument for an index out of range (message names the
  // 1-based page and the page count), plus whatever decoding / rendering throws for that page.
  Image render_page(int index) const;
  // The pixel size render_page(index) gives, without rendering or decoding: a PDF page's size
  // from its page box and the options (kLimit when it is over the pixel limit), a TIFF page's or
  // an image's from its header (before orientation, which can only swap the sides).
  ImageSize page_size(int index) const;
  // The page's width in points (1/72 inch): a PDF page's box; for an image or TIFF page, which has
  // no physical size here, its width in pixels (one pixel a point). For dpi reports.
  double page_width_points(int index) const;
  // The page's text layer as a draft corpus for speculative decoding (io/pdf_text.h
  // pdf_page_draft_text): a PDF page's text, normalised; "" for images and TIFF pages.
  std::string page_draft_text(int index) const;

 private:
  friend Document open_document(std::string bytes, const DocumentOptions& opts);
  struct Impl;
  explicit Document(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Detects PDF ("%PDF-" in the first 1024 bytes), TIFF or another image format and opens the
// document, reading only what is needed to count pages (a single image is decoded lazily, on
// render_page). Throws kInvalidArgument for unknown or damaged data, kLimit for too many pages
// (opts.pdf.max_pages applies to TIFFs too), kUnsupported for a PDF when built without Poppler.
Document open_document(std::string bytes, const DocumentOptions& opts = {});
// Reads the file and calls open_document(); kNotFound / kIo name the path.
Document load_document(const std::string& path, const DocumentOptions& opts = {});

}  // namespace locr::io
