// Markdown -> plain text, and the post-processing pipeline (see postprocess.h).
#include "runtime/postprocess.h"
#include "runtime/postprocess_util.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace locr::runtime {

using detail::ieq_at;

// ---- Markdown -> plain text

namespace {

bool is_separator_row(std::string_view line) {  // | --- | :---: |
  bool dash = false;
  for (char c : line) {
    if (c == '-') dash = true;
    else if (c != '|' && c != ':' && c != ' ' && c != '\t') return false;
  }
  return dash && line.find('|') != std::string_view::npos;
}

// Inline Markdown -> text: links/images keep their text, ** __ * emphasis marks and `code`
// backticks go, backslash escapes of punctuation are resolved, <br> becomes a space.
std::string inline_text(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      const char d = s[i + 1];
      if (d == '*' || d == '_' || d == '`' || d == '#' || d == '|' || d == '[' || d == ']' || d == '!' ||
          d == '\\' || d == '$' || d == '-' || d == '+' || d == '.' || d == '>') {
        out += d;
        i += 2;
        continue;
      }
    }
    if ((c == '*' && i + 1 < s.size() && s[i + 1] == '*') || (c == '_' && i + 1 < s.size() && s[i + 1] == '_')) {
      i += 2;
      continue;
    }
    if (c == '$') {  // inline math is kept as written
      const size_t close = s.find('$', i + 1);
      if (close != std::string_view::npos) {
        out.append(s.substr(i, close + 1 - i));
        i = close + 1;
        continue;
      }
    }
    // A single * is emphasis when it touches a word on its inner side: "*x" or "x*".
    if (c == '*' && ((i + 1 < s.size() && s[i + 1] != ' ') || (i > 0 && s[i - 1] != ' '))) {
      i += 1;
      continue;
    }
    if (c == '`') {
      ++i;
      continue;
    }
    if (c == '[' || (c == '!' && i + 1 < s.size() && s[i + 1] == '[')) {
      const size_t open = c == '!' ? i + 1 : i;
      const size_t close = s.find("](", open);
      const size_t nl = s.find('\n', open);
      if (close != std::string_view::npos && (nl == std::string_view::npos || close < nl)) {
        const size_t paren = s.find(')', close + 2);
        if (paren != std::string_view::npos) {
          out += inline_text(s.substr(open + 1, close - open - 1));
          i = paren + 1;
          continue;
        }
      }
    }
    if (c == '<' && (ieq_at(s, i, "<br>") || ieq_at(s, i, "<br/>") || ieq_at(s, i, "<br />"))) {
      out += ' ';
      i = s.find('>', i) + 1;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace

std::string markdown_to_text(std::string_view markdown) {
  const std::string md = html_tables_to_markdown(markdown);
  const std::string_view s = md;
  std::vector<std::string> lines;
  size_t pos = 0;
  bool in_fence = false;
  while (pos <= s.size()) {
    size_t nl = s.find('\n', pos);
    const bool last = nl == std::string_view::npos;
    if (last) nl = s.size();
    std::string_view line = s.substr(pos, nl - pos);
    size_t ind = 0;
    while (ind < line.size() && line[ind] == ' ') ++ind;
    const std::string_view body = line.substr(ind);
    bool drop = false;
    std::string text;
    if (body.substr(0, 3) == "```" || body.substr(0, 3) == "~~~") {
      in_fence = !in_fence;
      drop = true;
    } else if (in_fence) {
      text.assign(line);
    } else if (is_separator_row(body)) {
      drop = true;
    } else if (!body.empty() && body[0] == '|') {
      // Table row: cells split on unescaped pipes, joined with tabs.
      std::string_view row = body;
      while (!row.empty() && (row.back() == ' ' || row.back() == '\r')) row.remove_suffix(1);
      if (!row.empty() && row.front() == '|') row.remove_prefix(1);
      if (!row.empty() && row.back() == '|' && !(row.size() >= 2 && row[row.size() - 2] == '\\')) row.remove_suffix(1);
      std::string cell;
      std::vector<std::string> cells;
      for (size_t i = 0; i < row.size(); ++i) {
        if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
          cell += "\\|";
          ++i;
        } else if (row[i] == '|') {
          cells.push_back(cell);
          cell.clear();
        } else {
          cell += row[i];
        }
      }
      cells.push_back(cell);
      for (size_t c = 0; c < cells.size(); ++c) {
        std::string v = inline_text(cells[c]);
        while (!v.empty() && v.back() == ' ') v.pop_back();
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        text += (c ? "\t" : "") + v;
      }
    } else {
      std::string_view b = body;
      size_t h = 0;
      while (h < b.size() && h < 6 && b[h] == '#') ++h;
      if (h > 0 && (h == b.size() || b[h] == ' ')) {  // ATX heading
        b.remove_prefix(h);
        while (!b.empty() && b.front() == ' ') b.remove_prefix(1);
        while (!b.empty() && (b.back() == '#' || b.back() == ' ')) b.remove_suffix(1);
        text = inline_text(b);
      } else {
        if (b.size() >= 2 && b[0] == '>' && b[1] == ' ') b.remove_prefix(2);
        text = std::string(line.substr(0, ind)) + inline_text(b);
      }
    }
    if (!drop) lines.push_back(std::move(text));
    if (last) break;
    pos = nl + 1;
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

std::string postprocess(std::string_view text, const PostprocessOptions& opts) {
  std::string out(text);
  if (opts.fix_dollars) out = fix_escaped_dollars(out);
  if (opts.plain_text) return markdown_to_text(out);
  if (opts.tables_to_markdown) out = html_tables_to_markdown(out);
  return out;
}

}  // namespace locr::runtime
