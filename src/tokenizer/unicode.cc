// Unicode helpers for the tokenizer; see unicode.h. The tables below are the measured
// differences between utf8proc 2.8 (Unicode 15.0) and what `tokenizers` 0.23 does; the fixture
// tests (tokenizer_test.cc, unicode_classes.json, nfc_goldens) re-check them exhaustively.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>

namespace locr::tokenizer::unicode {

namespace {

struct Range {
  char32_t lo, hi;
};

template <size_t N>
bool in_ranges(const std::array<Range, N>& ranges, char32_t cp) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                             [](char32_t c, const Range& r) { return c < r.lo; });
  return it != ranges.begin() && cp <= std::prev(it)->hi;
}

// Letters and numbers of Unicode 16.0, which the Oniguruma in `tokenizers` knows and utf8proc 2.8
// reports as unassigned. Consulted only for code points utf8proc calls unassigned, so a newer
// utf8proc takes over by itself.
constexpr std::array<Range, 22> kUnicode16Letters = {{
    {0x1C89, 0x1C8A},   {0xA7CB, 0xA7CD},   {0xA7DA, 0xA7DC},   {0x105C0, 0x105F3},
    {0x10D4A, 0x10D65}, {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4}, {0x11380, 0x11389},
    {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113B7},
    {0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11BC0, 0x11BE0}, {0x13460, 0x143FA},
    {0x16100, 0x1611D}, {0x16D40, 0x16D6C}, {0x18CFF, 0x18CFF}, {0x1E5D0, 0x1E5ED},
    {0x1E5F0, 0x1E5F0}, {0x2EBF0, 0x2EE5D},
}};
constexpr std::array<Range, 7> kUnicode16Numbers = {{
    {0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9}, {0x16130, 0x16139},
    {0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9}, {0x1E5F1, 0x1E5FA},
}};

// Combining marks (\p{M}) of Unicode 16.0 that the Oniguruma in `tokenizers` knows and utf8proc
// 2.8 reports as unassigned; as above, consulted only for code points utf8proc calls unassigned.
constexpr std::array<Range, 13> kUnicode16Marks = {{
    {0x897, 0x897},     {0x10D69, 0x10D6D}, {0x10EFC, 0x10EFC}, {0x113B8, 0x113C0},
    {0x113C2, 0x113C2}, {0x113C5, 0x113C5}, {0x113C7, 0x113CA}, {0x113CC, 0x113D0},
    {0x113D2, 0x113D2}, {0x113E1, 0x113E2}, {0x11F5A, 0x11F5A}, {0x1611E, 0x1612F},
    {0x1E5EE, 0x1E5EF},
}};

// Combining marks (canonical combining class > 0 in Unicode 15) that `tokenizers`' NFC treats
// as class 0: canonical reordering and composition never cross them. Measured by probing
// tokenizers' NFD with every mark against marks of every other class.
constexpr std::array<Range, 36> kNfcClassZeroMarks = {{
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
    {0xC3C, 0xC3C},     {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},
    {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFA},   {0xA82C, 0xA82C},   {0x10D24, 0x10D27},
    {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50}, {0x10F82, 0x10F85},
    {0x11070, 0x11070}, {0x1133B, 0x1133B}, {0x1145E, 0x1145E}, {0x11839, 0x1183A},
    {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0}, {0x11A34, 0x11A34},
    {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42}, {0x11D44, 0x11D45},
    {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1}, {0x1E08F, 0x1E08F},
    {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
}};

// Word characters (\w) of Unicode 16.0 that Rust's regex crate in `tokenizers` knows and utf8proc
// 2.8 reports as unassigned: the letters and digits above plus the new combining marks.
constexpr std::array<Range, 32> kUnicode16WordChars = {{
    {0x897, 0x897},     {0x1C89, 0x1C8A},   {0xA7CB, 0xA7CD},   {0xA7DA, 0xA7DC},
    {0x105C0, 0x105F3}, {0x10D40, 0x10D65}, {0x10D69, 0x10D6D}, {0x10D6F, 0x10D85},
    {0x10EC2, 0x10EC4}, {0x10EFC, 0x10EFC}, {0x11380, 0x11389}, {0x1138B, 0x1138B},
    {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113C0}, {0x113C2, 0x113C2},
    {0x113C5, 0x113C5}, {0x113C7, 0x113CA}, {0x113CC, 0x113D3}, {0x113E1, 0x113E2},
    {0x116D0, 0x116E3}, {0x11BC0, 0x11BE0}, {0x11BF0, 0x11BF9}, {0x11F5A, 0x11F5A},
    {0x13460, 0x143FA}, {0x16100, 0x16139}, {0x16D40, 0x16D6C}, {0x16D70, 0x16D79},
    {0x18CFF, 0x18CFF}, {0x1CCF0, 0x1CCF9}, {0x1E5D0, 0x1E5FA}, {0x2EBF0, 0x2EE5D},
}};

// Rust's Alphabetic property includes a few symbols outside L, M and Nl (circled and squared
// Latin letters).
constexpr std::array<Range, 4> kAlphabeticSymbols = {{
    {0x24B6, 0x24E9}, {0x1F130, 0x1F149}, {0x1F150, 0x1F169}, {0x1F170, 0x1F189},
}};

struct AsciiTable {
  std::array<CharClass, 128> cls{};
  constexpr AsciiTable() {
    for (int c = 0; c < 128; ++c) {
      CharClass k = CharClass::kOther;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) k = CharClass::kLetter;
      else if (c >= '0' && c <= '9') k = CharClass::kNumber;
      else if (c == '\r' || c == '\n') k = CharClass::kNewline;
      else if (c == ' ' || c == '\t' || c == '\v' || c == '\f') k = CharClass::kSpace;
      cls[c] = k;
    }
  }
};
constexpr AsciiTable kAscii;

}  // namespace

bool is_white_space(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

CharClass char_class(char32_t cp) {
  if (cp < 128) return kAscii.cls[cp];
  if (is_white_space(cp)) return CharClass::kSpace;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      return CharClass::kLetter;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return CharClass::kNumber;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
      return CharClass::kMark;
    case UTF8PROC_CATEGORY_CN:
      if (in_ranges(kUnicode16Letters, cp)) return CharClass::kLetter;
      if (in_ranges(kUnicode16Numbers, cp)) return CharClass::kNumber;
      if (in_ranges(kUnicode16Marks, cp)) return CharClass::kMark;
      return CharClass::kOther;
    default:
      return CharClass::kOther;
  }
}

bool is_word_char(char32_t cp) {
  if (cp < 128) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
  if (cp == 0x200C || cp == 0x200D) return true;  // Join_Control
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    case UTF8PROC_CATEGORY_CN:
      return in_ranges(kUnicode16WordChars, cp);
    default:
      return in_ranges(kAlphabeticSymbols, cp);
  }
}

size_t decode_utf8(std::string_view s, size_t i, char32_t* cp) {
  const size_t n = s.size();
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // valid range of the second byte
  char32_t v;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    v = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    v = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    v = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  if (i + len > n) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
    v = (v << 6) | (b & 0x3F);
  }
  *cp = v;
  return len;
}

size_t previous_char_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

void append_utf8(std::string* out, char32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t find_invalid_utf8(std::string_view s) {
  char32_t cp;
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = decode_utf8(s, i, &cp);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t cp;
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode_utf8(s, i, &cp);
    if (len > 0) {
      out.append(s.data() + i, len);
      i += len;
      continue;
    }
    // Invalid: skip the lead byte plus the continuation bytes that could still have belonged to
    // a valid sequence (the "maximal subpart"), and emit one U+FFFD for them.
    const auto b0 = static_cast<unsigned char>(s[i]);
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
    else if (b0 >= 0xE0 && b0 <= 0xEF) need = 2, lo = (b0 == 0xE0 ? 0xA0 : 0x80), hi = (b0 == 0xED ? 0x9F : 0xBF);
    else if (b0 >= 0xF0 && b0 <= 0xF4) need = 3, lo = (b0 == 0xF0 ? 0x90 : 0x80), hi = (b0 == 0xF4 ? 0x8F : 0xBF);
    size_t j = i + 1;
    for (size_t k = 0; k < need && j < s.size(); ++k, ++j) {
      const auto b = static_cast<unsigned char>(s[j]);
      if (k == 0 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    }
    out += "\xEF\xBF\xBD";
    i = j;
  }
  return out;
}

namespace {

void append_utf8proc_nfc(std::string_view s, std::string* out) {
  if (s.empty()) return;
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &dst, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> hold(dst, &std::free);
  // Input is validated UTF-8 before normalisation, so utf8proc cannot fail on it except on
  // allocation failure; keep the text unchanged rather than lose it.
  if (n < 0) {
    out->append(s);
    return;
  }
  out->append(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
}

}  // namespace

std::string nfc(std::string_view s) {
  // Every code point below U+0300 is NFC-stable and cannot start a composition unless a
  // combining character follows, and those start with a lead byte >= 0xCC.
  if (std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0xCC; }))
    return std::string(s);
  // Normalise segment by segment, cutting where `tokenizers` does nothing across: around the
  // marks it believes have class 0, and between U+11935 U+11930 (it does not know that pair
  // composes to U+11938).
  std::string out;
  out.reserve(s.size());
  size_t seg = 0;
  char32_t prev = 0;
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    size_t len = decode_utf8(s, i, &cp);
    if (len == 0) len = 1, cp = 0xFFFD;  // not reached for validated input
    if (cp >= 0x7FD && in_ranges(kNfcClassZeroMarks, cp)) {
      append_utf8proc_nfc(s.substr(seg, i - seg), &out);
      out.append(s.substr(i, len));
      seg = i + len;
    } else if (cp == 0x11930 && prev == 0x11935) {
      append_utf8proc_nfc(s.substr(seg, i - seg), &out);
      seg = i;
    }
    prev = cp;
    i += len;
  }
  append_utf8proc_nfc(s.substr(seg), &out);
  return out;
}

}  // namespace locr::tokenizer::unicode
