// UTF-8 and Python str helpers for the chat-template interpreter (see text.h).
#include "jinja/text.h"

#include <utf8proc.h>

namespace locr::jinja {

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = 0;
    char32_t c = 0;
    if (b0 < 0x80) {
      len = 1, c = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2, c = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3, c = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4, c = b0 & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) ok = false;
      c = (c << 6) | (b & 0x3F);
    }
    if (ok) {
      // Reject overlong forms and surrogates so the round trip stays byte exact.
      static const char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) ok = false;
    }
    if (!ok) {
      out.push_back(0xDC00 + b0);  // surrogateescape
      i += 1;
      continue;
    }
    out.push_back(c);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {  // an escaped invalid byte
    out.push_back(static_cast<char>(c - 0xDC00));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char b : s) n += (b & 0xC0) != 0x80;
  return n;
}

bool is_py_space(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

static utf8proc_category_t category(char32_t c) {
  if (c > 0x10FFFF) return UTF8PROC_CATEGORY_CN;
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
      return false;
    default:
      return true;
  }
}

bool is_upper(char32_t c) { return category(c) == UTF8PROC_CATEGORY_LU; }
bool is_lower(char32_t c) { return category(c) == UTF8PROC_CATEGORY_LL; }
bool is_cased(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}
bool is_alpha(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}
bool is_decimal(char32_t c) { return category(c) == UTF8PROC_CATEGORY_ND; }

char32_t to_upper(char32_t c) {
  return c > 0x10FFFF ? c : static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_lower(char32_t c) {
  return c > 0x10FFFF ? c : static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_title(char32_t c) {
  return c > 0x10FFFF ? c : static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

template <typename F>
static std::string map_chars(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode_utf8(s)) append_utf8(out, f(c));
  return out;
}

std::string py_upper(std::string_view s) { return map_chars(s, to_upper); }
std::string py_lower(std::string_view s) { return map_chars(s, to_lower); }

std::string py_capitalize(std::string_view s) {
  std::u32string u = decode_utf8(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? to_title(u[i]) : to_lower(u[i]);
  return encode_utf8(u);
}

std::string py_title(std::string_view s) {
  std::u32string u = decode_utf8(s);
  bool prev_cased = false;
  for (char32_t& c : u) {
    const bool cased = is_cased(c);
    if (cased) c = prev_cased ? to_lower(c) : to_title(c);
    prev_cased = cased;
  }
  return encode_utf8(u);
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::u32string u = decode_utf8(s);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_py_space(c); };
  size_t b = 0, e = u.size();
  if (left) while (b < e && strip_it(u[b])) ++b;
  if (right) while (e > b && strip_it(u[e - 1])) --e;
  return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> py_split(std::string_view s, const std::string* sep, long maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (maxsplit < 0) maxsplit = static_cast<long>(s.size()) + 1;
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit-- > 0) {
        const size_t hit = s.find(*sep, pos);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
    } else {
      size_t end = s.size();
      while (maxsplit-- > 0 && end >= sep->size()) {
        const size_t hit = s.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts.emplace(parts.begin(), s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      parts.emplace(parts.begin(), s.substr(0, end));
    }
    return parts;
  }
  // Whitespace split: runs of whitespace separate, leading/trailing whitespace ignored.
  const std::u32string u = decode_utf8(s);
  if (maxsplit < 0) maxsplit = static_cast<long>(u.size()) + 1;
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < u.size() && is_py_space(u[i])) ++i;
      if (i == u.size()) break;
      if (maxsplit-- == 0) {  // the rest keeps its trailing whitespace, as in Python
        parts.push_back(encode_utf8(std::u32string_view(u).substr(i)));
        break;
      }
      size_t j = i;
      while (j < u.size() && !is_py_space(u[j])) ++j;
      parts.push_back(encode_utf8(std::u32string_view(u).substr(i, j - i)));
      i = j;
    }
  } else {
    size_t i = u.size();
    while (true) {
      while (i > 0 && is_py_space(u[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit-- == 0) {
        parts.insert(parts.begin(), encode_utf8(std::u32string_view(u).substr(0, i)));
        break;
      }
      size_t j = i;
      while (j > 0 && !is_py_space(u[j - 1])) --j;
      parts.insert(parts.begin(), encode_utf8(std::u32string_view(u).substr(j, i - j)));
      i = j;
    }
  }
  return parts;
}

static bool is_line_break(char32_t c) {
  switch (c) {
    case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E: case 0x85:
    case 0x2028: case 0x2029:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> py_splitlines(std::string_view s) {
  const std::u32string u = decode_utf8(s);
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  while (i < u.size()) {
    if (!is_line_break(u[i])) {
      ++i;
      continue;
    }
    lines.push_back(encode_utf8(std::u32string_view(u).substr(start, i - start)));
    i += (u[i] == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ? 2 : 1;
    start = i;
  }
  if (start < u.size()) lines.push_back(encode_utf8(std::u32string_view(u).substr(start)));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to, long count) {
  std::string out;
  if (from.empty()) {
    const std::u32string u = decode_utf8(s);
    long done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) out += to, ++done;
      if (i < u.size()) append_utf8(out, u[i]);
    }
    return out;
  }
  size_t pos = 0;
  long done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

std::string rstrip_ws(std::string_view s) { return py_strip(s, nullptr, false, true); }

size_t leading_ws_bytes(std::string_view s) {
  const std::u32string u = decode_utf8(s);
  size_t bytes = 0;
  std::string tmp;
  for (char32_t c : u) {
    if (!is_py_space(c)) break;
    tmp.clear();
    append_utf8(tmp, c);
    bytes += tmp.size();
  }
  return bytes;
}

bool all_ws(std::string_view s) {
  for (char32_t c : decode_utf8(s))
    if (!is_py_space(c)) return false;
  return true;
}

}  // namespace locr::jinja
