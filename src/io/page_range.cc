// Page-range parsing and resolution (see page_range.h). A small hand-written scanner: no regex, no
// locale, numbers limited to 9 digits so nothing overflows.
#include "io/page_range.h"

#include <algorithm>

#include "core/error.h"

namespace locr::io {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

[[noreturn]] void bad(std::string_view spec, std::string_view item, const std::string& why) {
  fail(ErrorKind::kInvalidArgument, "invalid page range \"", spec, "\": ", why, item.empty() ? "" : " in \"",
       item, item.empty() ? "" : "\"", "; use 1-based pages like 1,3-5,10- (or -3 for the first three)");
}

// Parses a page number; returns 0 for an empty string, -1 for something that is not a number.
int parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return 0;
  if (s.size() > 9) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

PageRange PageRange::all() {
  PageRange r;
  r.spans_.push_back({1, 0});
  return r;
}

PageRange PageRange::parse(std::string_view spec) {
  if (trim(spec).empty()) bad(spec, "", "it is empty");
  PageRange r;
  size_t start = 0;
  while (true) {
    const size_t comma = spec.find(',', start);
    const std::string_view raw = spec.substr(start, comma == std::string_view::npos ? spec.npos : comma - start);
    const std::string_view item = trim(raw);
    if (item.empty()) bad(spec, "", "an item is empty (two commas in a row, or a comma at an end)");
    const size_t dash = item.find('-');
    Span span;
    if (dash == std::string_view::npos) {
      const int n = parse_number(item);
      if (n < 0) bad(spec, item, "not a page number");
      if (n == 0) bad(spec, item, "pages are numbered from 1");
      span = {n, n};
    } else {
      if (item.find('-', dash + 1) != std::string_view::npos) bad(spec, item, "more than one dash");
      const std::string_view a = item.substr(0, dash), b = item.substr(dash + 1);
      const int first = parse_number(a), last = parse_number(b);
      if (first < 0 || last < 0) bad(spec, item, "not a page number");
      if (trim(a).empty() && trim(b).empty()) bad(spec, item, "a dash needs a page on at least one side");
      if ((!trim(a).empty() && first == 0) || (!trim(b).empty() && last == 0))
        bad(spec, item, "pages are numbered from 1");
      span.first = trim(a).empty() ? 1 : first;
      span.last = trim(b).empty() ? 0 : last;
      if (span.last != 0 && span.last < span.first) bad(spec, item, "the range is reversed");
    }
    r.spans_.push_back(span);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return r;
}

std::vector<int> PageRange::resolve(int page_count) const {
  auto out_of_range = [&](int page) {
    fail(ErrorKind::kInvalidArgument, "page ", page, " is out of range: the document has ", page_count,
         page_count == 1 ? " page" : " pages");
  };
  std::vector<int> pages;
  for (const Span& s : spans_) {
    if (s.first > page_count) out_of_range(s.first);
    if (s.last > page_count) out_of_range(s.last);
    const int last = s.last == 0 ? page_count : s.last;
    for (int p = s.first; p <= last; ++p) pages.push_back(p);
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  return pages;
}

std::string PageRange::to_string() const {
  std::string out;
  for (const Span& s : spans_) {
    if (!out.empty()) out += ',';
    if (s.first == s.last) {
      out += std::to_string(s.first);
    } else {
      out += std::to_string(s.first) + "-";
      if (s.last != 0) out += std::to_string(s.last);
    }
  }
  return out;
}

}  // namespace locr::io
