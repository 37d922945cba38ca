// Normalisation of a PDF page's text layer into a draft corpus; see pdf_text.h for the rules.
#include "io/pdf_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/pdf.h"

namespace locr::io {
namespace {

// Decodes UTF-8 into code points; false for invalid input.
bool decode_utf8(std::string_view s, std::u32string* out) {
  out->clear();
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0 || cp < 0) return false;
    out->push_back(static_cast<char32_t>(cp));
    p += n;
    left -= n;
  }
  return true;
}

void append_utf8(std::string& out, char32_t cp) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_single_quote(char32_t c) {
  return c == 0x2018 || c == 0x2019 || c == 0x201A || c == 0x201B || c == 0x2032 || c == 0x02BC;
}
bool is_double_quote(char32_t c) {
  return c == 0x201C || c == 0x201D || c == 0x201E || c == 0x201F || c == 0x2033;
}
bool is_dash(char32_t c) { return (c >= 0x2010 && c <= 0x2015) || c == 0x2212; }
bool is_space(char32_t c) {
  return c == '\t' || c == 0x00A0 || (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}
bool is_dropped(char32_t c) { return c == 0x200B || c == 0x200C || c == 0x200D || c == 0x2060 || c == 0xFEFF; }

// The character map of normalize_text_chars (without NFKC). Invalid UTF-8 is returned unchanged.
std::string map_chars(std::string_view in) {
  std::u32string cps;
  if (!decode_utf8(in, &cps)) return std::string(in);
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    if (is_single_quote(c)) out += '\'';
    else if (is_double_quote(c)) out += '"';
    else if (is_dash(c)) out += '-';
    else if (is_space(c)) out += ' ';
    else if (is_dropped(c)) continue;
    else if (c == 0x00AD) {  // soft hyphen: a visible hyphen only where it breaks a line
      if (i + 1 == cps.size() || cps[i + 1] == '\n') out += '-';
    } else append_utf8(out, c);
  }
  return out;
}

std::string nfkc(std::string_view in) {
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()), static_cast<utf8proc_ssize_t>(in.size()),
                   &dst, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (n < 0) return std::string(in);
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

// ---------------------------------------------------------------- page layout

enum class Kind { kParagraph, kItem, kRow, kCode };

struct Line {
  std::string text;  // without indentation and trailing spaces
  size_t indent = 0;
  size_t right = 0;  // indent + code points: where the line ends on the page grid
  bool blank = true;
  bool item = false;
  std::vector<std::string> cells;  // split at runs of 3+ spaces
  bool row = false;
  bool code = false;
};

std::vector<std::string> split_cells(const std::string& s) {
  std::vector<std::string> cells;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size()) {
      if (s[j] == ' ') {
        size_t k = j;
        while (k < s.size() && s[k] == ' ') ++k;
        if (k - j >= 3) break;
        j = k;
      } else {
        ++j;
      }
    }
    size_t end = j;
    while (end > i && s[end - 1] == ' ') --end;
    if (end > i) cells.push_back(s.substr(i, end - i));
    while (j < s.size() && s[j] == ' ') ++j;
    i = j;
  }
  return cells;
}

std::string collapse_spaces(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

// A bullet glyph (or "-"/"*" after the dash rule) followed by a space: returns the glyph's length.
size_t bullet_prefix(const std::string& s) {
  static const char* const kBullets[] = {"\u2022", "\u25E6", "\u25AA", "\u25AB", "\u2023", "\u2219", "\u25CF",
                                         "\u25CB", "\u25A0", "\u25A1", "\u2217", "\u22C6", "\u00B7", "-", "*"};
  for (const char* b : kBullets) {
    const std::string_view g(b);
    if (s.size() > g.size() && s.compare(0, g.size(), g) == 0 && s[g.size()] == ' ') return g.size();
  }
  return 0;
}

// "1. ", "12) ", "a. ", "iv) ": a numbered or lettered list item (kept as written).
bool numbered_item(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0) {
    while (i < s.size() && i < 4 && std::islower(static_cast<unsigned char>(s[i]))) ++i;
    if (i == 0 || (i > 1 && s.find_first_not_of("ivx") < i)) return false;
  } else if (i > 3) {
    return false;
  }
  return i + 1 < s.size() && (s[i] == '.' || s[i] == ')') && s[i + 1] == ' ';
}

bool ends_letter_hyphen(const std::string& s) {
  if (s.size() < 2 || s.back() != '-') return false;
  const unsigned char c = static_cast<unsigned char>(s[s.size() - 2]);
  return std::isalpha(c) || c >= 0x80;
}

bool starts_lower(const std::string& s) {
  if (s.empty()) return false;
  const unsigned char c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) return std::islower(c);
  utf8proc_int32_t cp = 0;
  if (utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                       &cp) <= 0)
    return false;
  return utf8proc_category(cp) == UTF8PROC_CATEGORY_LL;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string normalize_text_chars(std::string_view utf8) { return map_chars(nfkc(map_chars(utf8))); }

std::string normalize_page_text(std::string_view layout_text) {
  const std::string text = normalize_text_chars(layout_text);
  std::vector<Line> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string raw = text.substr(start, end - start);
    Line line;
    while (!raw.empty() && raw.back() == ' ') raw.pop_back();
    size_t indent = 0;
    while (indent < raw.size() && raw[indent] == ' ') ++indent;
    line.text = raw.substr(indent);
    line.indent = indent;
    line.right = indent + count_code_points(line.text);
    line.blank = line.text.empty();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  // Trailing blank lines and a page number under the text.
  while (!lines.empty() && lines.back().blank) lines.pop_back();
  if (!lines.empty() && all_digits(lines.back().text)) lines.pop_back();

  size_t max_right = 0;
  for (const Line& l : lines) max_right = std::max(max_right, l.right);

  for (Line& l : lines) {
    if (l.blank) continue;
    if (const size_t b = bullet_prefix(l.text)) {
      size_t rest = b;
      while (rest < l.text.size() && l.text[rest] == ' ') ++rest;
      l.text = "- " + l.text.substr(rest);
      l.item = true;
      continue;
    }
    l.item = numbered_item(l.text);
    if (!l.item) l.cells = split_cells(l.text);
  }
  // Pipe rows: runs of consecutive lines with 2+ cells, kept when the run has 2+ lines or a line
  // has 3+ cells.
  for (size_t i = 0; i < lines.size();) {
    if (lines[i].cells.size() < 2) {
      ++i;
      continue;
    }
    size_t j = i;
    size_t widest = 0;
    while (j < lines.size() && lines[j].cells.size() >= 2) widest = std::max(widest, lines[j++].cells.size());
    if (j - i >= 2 || widest >= 3)
      for (size_t k = i; k < j; ++k) lines[k].row = true;
    i = j;
  }

  const size_t long_line = max_right * 85 / 100;
  // Code: in a run of short lines (no blank, pipe row or list item between), from the line before
  // the first one indented deeper than its predecessor to the run's end.
  for (size_t i = 0; i < lines.size();) {
    auto is_short = [&](const Line& l) { return !l.blank && !l.row && !l.item && l.right < long_line; };
    if (!is_short(lines[i])) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < lines.size() && is_short(lines[j])) ++j;
    for (size_t k = i + 1; k < j; ++k)
      if (lines[k].indent > lines[k - 1].indent) {
        for (size_t c = k - 1; c < j; ++c) lines[c].code = true;
        break;
      }
    i = j;
  }

  struct Unit {
    Kind kind;
    std::string text;
  };
  std::vector<Unit> units;
  bool open = false;      // the last unit may take continuation lines
  const Line* prev = nullptr;
  size_t code_indent = 0;  // indentation of the current code block's first line
  for (const Line& l : lines) {
    if (l.blank) {
      open = false;
      prev = nullptr;
      continue;
    }
    if (l.code) {
      const bool continues = prev && prev->code && !units.empty() && units.back().kind == Kind::kCode;
      if (!continues) {
        code_indent = l.indent;
        units.push_back({Kind::kCode, ""});
      } else {
        units.back().text += '\n';
      }
      units.back().text += std::string(l.indent > code_indent ? l.indent - code_indent : 0, ' ') + l.text;
      open = false;
    } else if (l.row) {
      std::string row = "|";
      for (const std::string& c : l.cells) row += " " + collapse_spaces(c) + " |";
      units.push_back({Kind::kRow, row});
      open = false;
    } else if (l.item) {
      units.push_back({Kind::kItem, collapse_spaces(l.text)});
      open = true;
    } else if (open && prev && prev->right >= long_line) {
      std::string& cur = units.back().text;
      const std::string next = collapse_spaces(l.text);
      if (ends_letter_hyphen(cur)) {
        if (starts_lower(next)) cur.pop_back();  // "hyphen-" + "ated": one word; "Anglo-" + "Saxon" keeps it
        cur += next;
      } else {
        cur += ' ';
        cur += next;
      }
    } else {
      units.push_back({Kind::kParagraph, collapse_spaces(l.text)});
      open = true;
    }
    prev = &l;
  }

  std::string out;
  for (size_t i = 0; i < units.size(); ++i) {
    if (i) {
      const bool same_block = units[i].kind != Kind::kParagraph && units[i].kind == units[i - 1].kind;
      out += same_block ? "\n" : "\n\n";
    }
    out += units[i].text;
  }
  return out;
}

std::string pdf_page_draft_text(const PdfDocument& doc, int index) {
  return normalize_page_text(doc.page_text(index, PdfTextLayout::kPhysical));
}

}  // namespace locr::io
