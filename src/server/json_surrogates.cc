#include "server/json_surrogates.h"

namespace locr::server {

namespace {

// The value of the \uXXXX escape at s[i] ('\\'), or -1 if there is none.
int escape_at(const std::string& s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return -1;
  int v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    const char c = s[k];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

bool is_high(int v) { return v >= 0xD800 && v <= 0xDBFF; }
bool is_low(int v) { return v >= 0xDC00 && v <= 0xDFFF; }

}  // namespace

bool has_surrogate_escape(const std::string& s) {
  for (size_t i = s.find("\\u"); i != std::string::npos && i + 2 < s.size(); i = s.find("\\u", i + 1))
    if (s[i + 2] == 'd' || s[i + 2] == 'D') return true;
  return false;
}

std::string replace_lone_surrogates(const std::string& s) {
  if (!has_surrogate_escape(s)) return s;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i++];
      continue;
    }
    const int v = escape_at(s, i);
    if (v < 0) {  // another escape (\" \\ \n ...): copied whole, so "\\ud800" stays text
      out.append(s, i, 2);
      i += 2;
      continue;
    }
    if (is_high(v) && is_low(escape_at(s, i + 6))) {
      out.append(s, i, 12);
      i += 12;
    } else if (is_high(v) || is_low(v)) {
      out += "\\ufffd";
      i += 6;
    } else {
      out.append(s, i, 6);
      i += 6;
    }
  }
  return out;
}

}  // namespace locr::server
