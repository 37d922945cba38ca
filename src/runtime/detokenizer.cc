#include "runtime/detokenizer.h"

namespace locr::runtime {

namespace {

// Length of a valid UTF-8 sequence starting at s[i]: >0 valid length, 0 incomplete at end of
// input (could still become valid), -1 invalid (one byte to replace).
int utf8_seq(const std::string& s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  int n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) n = 2;
  else if (b0 == 0xe0) { n = 3; lo = 0xa0; }
  else if (b0 >= 0xe1 && b0 <= 0xec) n = 3;
  else if (b0 == 0xed) { n = 3; hi = 0x9f; }
  else if (b0 >= 0xee && b0 <= 0xef) n = 3;
  else if (b0 == 0xf0) { n = 4; lo = 0x90; }
  else if (b0 >= 0xf1 && b0 <= 0xf3) n = 4;
  else if (b0 == 0xf4) { n = 4; hi = 0x8f; }
  else return -1;
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return -static_cast<int>(k);  // invalid after k bytes
  }
  return n;
}

}  // namespace

size_t utf8_complete_prefix(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const int n = utf8_seq(s, i);
    if (n == 0) return i;
    i += n > 0 ? n : -n;
  }
  return i;
}

std::string utf8_sanitize(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const int n = utf8_seq(s, i);
    if (n > 0) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // one U+FFFD per maximal invalid subpart, as from_utf8_lossy
      i += n == 0 ? s.size() - i : -n;
    }
  }
  return out;
}

std::string Detokenizer::push(int32_t id) {
  if (!tok_.has_id(id) || (skip_special_ && tok_.is_special(id))) return "";
  pending_ += tok_.token_bytes(id);
  const size_t n = utf8_complete_prefix(pending_);
  std::string out = utf8_sanitize(pending_.substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string Detokenizer::finish() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace locr::runtime
