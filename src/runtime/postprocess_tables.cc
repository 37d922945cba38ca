// HTML tables -> GFM pipe tables (see postprocess.h): a small tag scanner; tables with rowspan or
// colspan > 1, uneven rows, captions or nesting are left as HTML. Fenced code is not touched.
#include "runtime/postprocess.h"
#include "runtime/postprocess_util.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace locr::runtime {

using detail::ieq_at;

namespace {

bool name_end(std::string_view s, size_t i) {  // the tag name ends here: '>', '/', whitespace or end
  return i >= s.size() || s[i] == '>' || s[i] == '/' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r';
}

// A tag at s[i] == '<': its lowercase name (without '/'), whether it is a closing tag, its
// attribute text and its end (one past '>'). False when s[i..] is not a tag.
struct Tag {
  std::string name;
  bool closing = false;
  std::string_view attrs;
  size_t end = 0;
};

bool parse_tag(std::string_view s, size_t i, Tag* tag) {
  if (i >= s.size() || s[i] != '<') return false;
  size_t j = i + 1;
  tag->closing = j < s.size() && s[j] == '/';
  if (tag->closing) ++j;
  const size_t name_start = j;
  while (j < s.size() && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9'))) ++j;
  if (j == name_start || !name_end(s, j)) return false;
  tag->name.assign(s.substr(name_start, j - name_start));
  for (char& c : tag->name)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  // Find '>' outside quotes.
  size_t k = j;
  char quote = 0;
  for (; k < s.size(); ++k) {
    if (quote) {
      if (s[k] == quote) quote = 0;
    } else if (s[k] == '"' || s[k] == '\'') {
      quote = s[k];
    } else if (s[k] == '>') {
      break;
    }
  }
  if (k >= s.size()) return false;
  tag->attrs = s.substr(j, k - j);
  tag->end = k + 1;
  return true;
}

// The integer value of attribute `name` (rowspan / colspan), 1 when absent or unparsable.
int span_attr(std::string_view attrs, std::string_view name) {
  for (size_t i = 0; i + name.size() <= attrs.size(); ++i) {
    if (!ieq_at(attrs, i, name)) continue;
    if (i > 0 && attrs[i - 1] != ' ' && attrs[i - 1] != '\t' && attrs[i - 1] != '\n') continue;
    size_t j = i + name.size();
    while (j < attrs.size() && attrs[j] == ' ') ++j;
    if (j >= attrs.size() || attrs[j] != '=') continue;
    ++j;
    while (j < attrs.size() && (attrs[j] == ' ' || attrs[j] == '"' || attrs[j] == '\'')) ++j;
    int v = 0;
    bool any = false;
    while (j < attrs.size() && attrs[j] >= '0' && attrs[j] <= '9' && v < 100000) {
      v = v * 10 + (attrs[j] - '0');
      any = true;
      ++j;
    }
    return any ? v : 1;
  }
  return 1;
}

// Cell HTML -> one line of Markdown: <b>/<strong> -> **, <i>/<em> -> *, <br> and newlines ->
// <br>, other tags kept as written (GFM allows inline HTML), '|' escaped, spaces collapsed.
std::string cell_markdown(std::string_view html) {
  std::string out;
  for (size_t i = 0; i < html.size();) {
    Tag tag;
    if (html[i] == '<' && parse_tag(html, i, &tag)) {
      if (tag.name == "b" || tag.name == "strong") out += "**";
      else if (tag.name == "i" || tag.name == "em") out += "*";
      else if (tag.name == "br") out += "<br>";
      else out.append(html.substr(i, tag.end - i));
      i = tag.end;
      continue;
    }
    const char c = html[i];
    if (c == '|') {
      out += (i > 0 && html[i - 1] == '\\') ? "|" : "\\|";
    } else if (c == '\n' || c == '\r') {
      // A line break inside a cell: keep it visible as <br> unless the cell already broke there.
      while (!out.empty() && out.back() == ' ') out.pop_back();
      const size_t n = out.size();
      if (!out.empty() && !(n >= 4 && out.compare(n - 4, 4, "<br>") == 0)) out += "<br>";
      if (c == '\r' && i + 1 < html.size() && html[i + 1] == '\n') ++i;
    } else if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
    ++i;
  }
  // Trim spaces and leading/trailing <br>.
  auto trim = [](std::string& s) {
    bool again = true;
    while (again) {
      again = false;
      while (!s.empty() && s.back() == ' ') s.pop_back();
      while (!s.empty() && s.front() == ' ') s.erase(0, 1);
      if (s.size() >= 4 && s.compare(s.size() - 4, 4, "<br>") == 0) s.resize(s.size() - 4), again = true;
      if (s.size() >= 4 && s.compare(0, 4, "<br>") == 0) s.erase(0, 4), again = true;
    }
  };
  trim(out);
  return out;
}

// Converts the table whose HTML is `html` (from "<table" to the end of "</table>"); false when
// it cannot be represented as a pipe table.
bool convert_table(std::string_view html, std::string* md) {
  std::vector<std::vector<std::string>> rows;
  Tag open;
  if (!parse_tag(html, 0, &open)) return false;
  size_t i = open.end;
  bool in_row = false, in_cell = false;
  size_t cell_start = 0;
  auto close_cell = [&](size_t at) {
    if (in_cell) rows.back().push_back(cell_markdown(html.substr(cell_start, at - cell_start)));
    in_cell = false;
  };
  while (i < html.size()) {
    if (html[i] != '<') {
      if (!in_cell && html[i] != ' ' && html[i] != '\t' && html[i] != '\n' && html[i] != '\r')
        return false;  // text outside cells
      ++i;
      continue;
    }
    Tag tag;
    if (!parse_tag(html, i, &tag)) {
      if (!in_cell) return false;
      ++i;
      continue;
    }
    const std::string& n = tag.name;
    if (n == "table") {
      if (!tag.closing) return false;  // nested table
      close_cell(i);
      break;
    }
    if (n == "caption" || n == "colgroup" || n == "col") return false;
    if (n == "thead" || n == "tbody" || n == "tfoot") {
      close_cell(i);
      if (in_cell) return false;
      in_row = in_row && !tag.closing;
    } else if (n == "tr") {
      close_cell(i);
      if (!tag.closing) rows.emplace_back();
      in_row = !tag.closing;
    } else if (n == "td" || n == "th") {
      close_cell(i);
      if (!tag.closing) {
        if (span_attr(tag.attrs, "rowspan") != 1 || span_attr(tag.attrs, "colspan") != 1) return false;
        if (!in_row) {  // a cell outside <tr>: start an implicit row
          rows.emplace_back();
          in_row = true;
        }
        in_cell = true;
        cell_start = tag.end;
      }
    } else if (!in_cell) {
      return false;  // some other tag between cells
    }
    i = tag.end;
  }
  if (rows.empty()) return false;
  const size_t cols = rows[0].size();
  if (cols == 0) return false;
  for (const auto& r : rows)
    if (r.size() != cols) return false;
  std::string out;
  auto emit = [&](const std::vector<std::string>& r) {
    out += '|';
    for (const auto& c : r) out += " " + c + " |";
    out += '\n';
  };
  emit(rows[0]);
  out += '|';
  for (size_t c = 0; c < cols; ++c) out += " --- |";
  out += '\n';
  for (size_t r = 1; r < rows.size(); ++r) emit(rows[r]);
  out.pop_back();  // the caller decides what follows
  *md = std::move(out);
  return true;
}

// Fenced code blocks (``` or ~~~ at a line start, up to the matching fence or the end) are left
// alone; returns the end of the fence block starting at line start i, or npos.
size_t fence_end(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
  if (j >= s.size() || (s[j] != '`' && s[j] != '~')) return std::string_view::npos;
  const char ch = s[j];
  size_t k = 0;
  while (j + k < s.size() && s[j + k] == ch) ++k;
  if (k < 3) return std::string_view::npos;
  size_t line = s.find('\n', j);
  while (line != std::string_view::npos) {
    size_t p = line + 1, q = p;
    while (q < s.size() && (s[q] == ' ' || s[q] == '\t')) ++q;
    size_t f = 0;
    while (q + f < s.size() && s[q + f] == ch) ++f;
    if (f >= k) {
      const size_t nl = s.find('\n', q + f);
      return nl == std::string_view::npos ? s.size() : nl;
    }
    line = s.find('\n', p);
  }
  return s.size();
}

}  // namespace

std::string html_tables_to_markdown(std::string_view s) {
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < s.size();) {
    if (i == 0 || s[i - 1] == '\n') {
      const size_t fe = fence_end(s, i);
      if (fe != std::string_view::npos) {
        i = fe;
        continue;
      }
    }
    Tag tag;
    if (s[i] == '<' && ieq_at(s, i, "<table") && parse_tag(s, i, &tag) && tag.name == "table" && !tag.closing) {
      // Find the matching </table> (counting nested tables).
      int depth = 0;
      size_t end = std::string_view::npos;
      for (size_t j = i; j < s.size(); ++j) {
        if (s[j] != '<' || !(ieq_at(s, j, "<table") || ieq_at(s, j, "</table"))) continue;
        Tag t;
        if (!parse_tag(s, j, &t) || t.name != "table") continue;
        depth += t.closing ? -1 : 1;
        if (depth == 0) {
          end = t.end;
          break;
        }
      }
      if (end == std::string_view::npos) break;  // unterminated: leave the rest alone
      std::string md;
      if (convert_table(s.substr(i, end - i), &md)) {
        out.append(s.substr(copied, i - copied));
        if (!out.empty() && out.back() != '\n') out += '\n';  // a pipe table starts a line
        out += md;
        if (end < s.size() && s[end] != '\n') out += '\n';
        copied = end;
      }
      i = end;
      continue;
    }
    ++i;
  }
  out.append(s.substr(copied));
  return out;
}

}  // namespace locr::runtime
