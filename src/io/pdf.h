// PDF input: opens a PDF from memory or a path and renders its pages to 8-bit RGB io::Image with
// Poppler (poppler-cpp, Splash backend), the way LightOn's client prepares pages for the model: by
// default each page is rendered at the scale where its longest edge becomes exactly 1540 px
// (scale = 1540 / max(width_pt, height_pt), the processor's longest_edge), with antialiasing for
// text and vector graphics, on white paper, without alpha. /Rotate is honoured (a rotated page is
// rendered rotated, as viewers show it), and the CropBox is what is rendered, as in viewers.
//
// page_text() returns a page's text layer as Poppler lays it out (io/pdf_text.h normalises it into a
// draft corpus). This file does not resize the rendered image further (the
// processor does that), and does not manage colour. When locr is built without Poppler
// (-DLOCR_POPPLER=OFF, see README "PDF input") every entry point here throws kUnsupported saying
// so; pdf_supported() tells which build this is.
//
// Threads: Poppler is not safe for one document used from several threads, so a PdfDocument holds
// a mutex and renders one page at a time (every const method locks it). Different PdfDocument
// objects render in parallel. To render pages of one file on several threads, open it once per
// thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/image.h"

namespace locr::io {

struct PdfOptions {
  // Tried as the owner password and as the user password. Empty: the file must open without one.
  std::string password;
  // Resolution in dots per inch. 0 (the default) renders at `longest_edge` instead.
  double dpi = 0;
  // Pixels on the page's longest edge when dpi is 0 (LightOnOCR's processor longest_edge).
  int longest_edge = 1540;
  // A document with more pages than this is refused when it is opened (kLimit).
  int max_pages = 2000;
  // Per rendered page, checked before rendering (a huge MediaBox at a high dpi is a pixel bomb).
  int64_t max_pixels = DecodeOptions{}.max_pixels;
};

// A page's size in PDF points (1/72 inch) as displayed: the CropBox, width and height swapped
// for /Rotate 90 and 270.
// How page_text() lays out a page's text layer (Poppler's text_layout_enum).
enum class PdfTextLayout {
  // As `pdftotext -layout`: one output line per line of the page, words at their horizontal
  // positions (columns of a table stay aligned by runs of spaces). Side-by-side text columns stay
  // side by side.
  kPhysical,
  // Poppler's reading order (as `pdftotext` without -layout): text flows and columns one after the
  // other; table cells may come out column by column.
  kReadingOrder,
};

struct PdfPageSize {
  double width_pt = 0;
  double height_pt = 0;
};

// True when this binary was built with Poppler (LOCR_POPPLER=ON).
bool pdf_supported();

// True when the bytes look like a PDF: "%PDF-" within the first 1024 bytes (what readers accept).
bool looks_like_pdf(std::string_view bytes);

// The pixel size a page of `size` renders to under `opts`: with dpi 0 the longest edge is exactly
// opts.longest_edge and the other is round(side * scale), at least 1; with a dpi each side is
// round(side * dpi / 72), at least 1. Pure arithmetic; no limits are checked here.
void pdf_render_size(const PdfPageSize& size, const PdfOptions& opts, int* width, int* height);

class PdfDocument {
 public:
  // Throws locr::Error: kInvalidArgument for data that is not a PDF or is damaged beyond repair,
  // for a wrong or missing password and for a PDF without pages; kLimit for more than
  // opts.max_pages pages; kUnsupported when built without Poppler; kIo/kNotFound from load().
  static PdfDocument open(std::string bytes, const PdfOptions& opts = {});
  static PdfDocument load(const std::string& path, const PdfOptions& opts = {});

  PdfDocument(PdfDocument&&) noexcept;
  PdfDocument& operator=(PdfDocument&&) noexcept;
  ~PdfDocument();

  int page_count() const;
  // `index` is 0-based; out of range throws kInvalidArgument naming the 1-based page number.
  PdfPageSize page_size(int index) const;
  // The page rendered per the options given to open(). Throws kLimit when the page would exceed
  // max_pixels (before anything is allocated) and kInvalidArgument when Poppler cannot render it.
  Image render_page(int index) const;
  // The page's text layer in UTF-8, lines separated by '\n' (no form feed): empty for a page
  // without text (a scan). The whole page box is read, /Rotate applied as in rendering.
  std::string page_text(int index, PdfTextLayout layout = PdfTextLayout::kPhysical) const;
  const PdfOptions& options() const;

 private:
  struct Impl;
  explicit PdfDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace locr::io
