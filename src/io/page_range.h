// Page selections such as "1,3-5,10-": parsed once (syntax only, so a request can be rejected
// before its document is opened), then resolved against a document's page count.
//
// Grammar: comma-separated items, each `N` (one page), `A-B` (A..B inclusive), `A-` (A to the last
// page) or `-B` (pages 1..B). Page numbers are 1-based decimal integers; spaces and tabs around
// numbers, dashes and commas are ignored. `0`, reversed ranges (`5-3`), empty items (`1,,2`), a
// lone `-`, signs and anything else are rejected with kInvalidArgument. The resolved selection is
// sorted and duplicate-free (so "5,1-3,2" gives 1,2,3,5): pages are always processed in document
// order. This file does not know about documents; document.h supplies page counts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace locr::io {

class PageRange {
 public:
  // Throws kInvalidArgument (message quotes the offending item) for malformed text.
  static PageRange parse(std::string_view spec);
  // Every page ("1-").
  static PageRange all();

  // Sorted, unique 1-based page numbers. Throws kInvalidArgument when a page named explicitly or
  // the start of an open range is past the end: "page 12 is out of range: the document has 9 pages".
  std::vector<int> resolve(int page_count) const;
  // The canonical text of the selection ("1,3-5,10-"), items in the order given.
  std::string to_string() const;

 private:
  struct Span {
    int first = 1;
    int last = 0;  // 0: open-ended (to the last page)
  };
  std::vector<Span> spans_;
};

}  // namespace locr::io
