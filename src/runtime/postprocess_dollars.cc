// Markdown post-processing (see postprocess.h). The escaped-dollar repair works on code points so
// that the Python rules it ports (regexes with Unicode \w, \d, \s and str.strip()) can be followed
// step by step: every regex of the original is replaced by a hand-written scanner that matches
// what Python's `re` would match, backtracking included, and the comments name the regex. Unicode
// classes come from utf8proc (Python: \d = Nd; \w = letters, numbers and '_'; \s = str.isspace()).
// The table converter and the text renderer are small scanners of their own; none uses std::regex.
#include "runtime/postprocess.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace locr::runtime {

namespace {

using U = std::u32string;
constexpr size_t npos = static_cast<size_t>(-1);

// ---- UTF-8 <-> code points; an invalid byte b becomes U+DC00 + b and is written back as b
// (Python's surrogateescape), so no input is ever altered by the round trip.

U decode(std::string_view s) {
  U out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                                static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xDC00 + static_cast<uint8_t>(s[i]));
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

std::string encode(const U& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c >= 0xDC80 && c <= 0xDCFF) {
      out.push_back(static_cast<char>(c - 0xDC00));
      continue;
    }
    utf8proc_uint8_t buf[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

// ---- Python's character classes

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_space(char32_t c) {  // str.isspace() / re \s
  if (c < 128) return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f);
  return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
         c == 0x202f || c == 0x205f || c == 0x3000;
}
bool is_digit(char32_t c) {  // re \d: Nd
  if (c < 128) return c >= '0' && c <= '9';
  return category(c) == UTF8PROC_CATEGORY_ND;
}
bool is_alpha(char32_t c) {
  if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}
bool is_other_numeric(char32_t c) {
  if (c < 128) return false;
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}
bool is_word(char32_t c) { return c == '_' || is_alpha(c) || is_digit(c) || is_other_numeric(c); }  // re \w
bool is_letter(char32_t c) { return is_alpha(c) || is_other_numeric(c); }  // [^\W\d_]
bool is_ascii_letter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// How re.IGNORECASE compares a text character with a lowercase ASCII letter of a pattern: ASCII
// case, plus the four non-ASCII characters Python folds onto ASCII letters.
char32_t fold(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c == 0x130 || c == 0x131) return 'i';
  if (c == 0x17f) return 's';
  if (c == 0x212a) return 'k';
  return c;
}
bool matches_ci(const U& t, size_t i, std::string_view lower) {
  if (i + lower.size() > t.size()) return false;
  for (size_t k = 0; k < lower.size(); ++k)
    if (fold(t[i + k]) != static_cast<char32_t>(lower[k])) return false;
  return true;
}
bool matches(const U& t, size_t i, std::string_view s) {
  if (i + s.size() > t.size()) return false;
  for (size_t k = 0; k < s.size(); ++k)
    if (t[i + k] != static_cast<char32_t>(static_cast<unsigned char>(s[k]))) return false;
  return true;
}

U strip(const U& s) {  // str.strip()
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool contains(const U& s, char32_t c) { return s.find(c) != U::npos; }

// fullmatch(r'[^\W\d_]{2,}', s)
bool is_bare_word(const U& s) {
  if (s.size() < 2) return false;
  return std::all_of(s.begin(), s.end(), is_letter);
}

// ---- math_body / plausible_math

// ATOM at position i of `s`: returns the match end, or npos. `word` tells whether the match is
// the [^\W\d_]\w* alternative.
size_t atom_at(const U& s, size_t i, bool* word) {
  const size_t n = s.size();
  *word = false;
  const char32_t c = s[i];
  if (c == '\\') {  // \\(?:[A-Za-z]+|[^\r\n])
    if (i + 1 < n && is_ascii_letter(s[i + 1])) {
      size_t j = i + 1;
      while (j < n && is_ascii_letter(s[j])) ++j;
      return j;
    }
    if (i + 1 < n && s[i + 1] != '\r' && s[i + 1] != '\n') return i + 2;
    return npos;  // a backslash matches no other alternative
  }
  if (is_digit(c)) {  // \d+(?:\.\d*)?
    size_t j = i;
    while (j < n && is_digit(s[j])) ++j;
    if (j < n && s[j] == '.') {
      ++j;
      while (j < n && is_digit(s[j])) ++j;
    }
    return j;
  }
  if (c == '.' && i + 1 < n && is_digit(s[i + 1])) {  // \.\d+
    size_t j = i + 1;
    while (j < n && is_digit(s[j])) ++j;
    return j;
  }
  if (is_letter(c)) {  // [^\W\d_]\w*
    size_t j = i + 1;
    while (j < n && is_word(s[j])) ++j;
    *word = true;
    return j;
  }
  static const U kPunct = U(U"-\u2212\u2013\u2014+*/=<>:;,.'!|_^%&()[]{}");
  if (kPunct.find(c) != U::npos) return i + 1;
  return npos;
}

bool math_body(const U& raw) {
  const U body = strip(raw);
  const size_t n = body.size();
  if (n == 0) return false;
  for (size_t i = 0; i + 2 < n; ++i)  // '<td' in body.lower()
    if (body[i] == '<' && fold(body[i + 1]) == 't' && fold(body[i + 2]) == 'd') return false;
  for (size_t i = 0; i + 1 < n; ++i)
    if (body[i] == '<' && body[i + 1] == '/') return false;
  // Brace balance over re.findall(r'\\.|[{}]').
  int depth = 0;
  for (size_t i = 0; i < n;) {
    if (body[i] == '\\' && i + 1 < n && body[i + 1] != '\n') {
      i += 2;
      continue;
    }
    if (body[i] == '{') ++depth;
    if (body[i] == '}') --depth;
    if (depth < 0) return false;
    ++i;
  }
  if (depth) return false;
  // Mask balanced command arguments: \cmd{...}{...} -> \cmd{}{}.
  U clean;
  size_t pos = 0;
  while (pos < n) {
    if (body[pos] == '\\' && pos + 1 < n && is_ascii_letter(body[pos + 1])) {
      size_t j = pos + 1;
      while (j < n && is_ascii_letter(body[j])) ++j;
      clean.append(body, pos, j - pos);
      pos = j;
      while (pos < n && body[pos] == '{') {
        int d = 1;
        ++pos;
        while (pos < n && d) {
          if (body[pos] == '\\') {
            pos += 2;
            continue;
          }
          d += (body[pos] == '{') - (body[pos] == '}');
          ++pos;
        }
        if (d) return false;
        clean += U"{}";
      }
    } else {
      clean.push_back(body[pos]);
      ++pos;
    }
  }
  // Every character must belong to an ATOM or be whitespace; adjacent words must be single
  // letters (prose is not math).
  size_t prev_len = 0;  // length of the previous atom when it was a word, else 0
  for (size_t i = 0; i < clean.size();) {
    if (is_space(clean[i])) {
      ++i;
      continue;
    }
    bool word = false;
    const size_t e = atom_at(clean, i, &word);
    if (e == npos) return false;
    const size_t len = e - i;
    if (word && prev_len && (len > 1 || prev_len > 1)) return false;
    prev_len = word ? len : 0;
    i = e;
  }
  return true;
}

bool plausible_math(const U& body) {
  const U stripped = strip(body);
  if (!math_body(body) || is_bare_word(stripped)) return false;
  if (body != stripped && !std::any_of(stripped.begin(), stripped.end(), [](char32_t c) { return is_word(c) || c == '\\'; }))
    return false;
  if (stripped.size() > 1 && (stripped[0] == ',' || stripped[0] == ';')) return false;
  // re.sub(r"\\text\{[^{}]*\}", "", stripped)
  U simple;
  for (size_t i = 0; i < stripped.size();) {
    if (matches(stripped, i, "\\text{")) {
      size_t j = i + 6;
      while (j < stripped.size() && stripped[j] != '{' && stripped[j] != '}') ++j;
      if (j < stripped.size() && stripped[j] == '}') {
        i = j + 1;
        continue;
      }
    }
    simple.push_back(stripped[i]);
    ++i;
  }
  // Bracket balance over re.findall(r'\\.|[()\[\]]').
  int level = 0;
  for (size_t i = 0; i < simple.size();) {
    if (simple[i] == '\\' && i + 1 < simple.size() && simple[i + 1] != '\n') {
      i += 2;
      continue;
    }
    const char32_t c = simple[i];
    if (c == '(' || c == '[') ++level;
    if (c == ')' || c == ']') --level;
    if (level < 0) return false;
    ++i;
  }
  return level == 0;
}

// ---- PROTECTED: code, document syntax and existing math. Returns the end of the match of the
// combined regex at position i (alternatives tried in the original's order), or npos.

bool line_start(const U& t, size_t i) { return i == 0 || t[i - 1] == '\n'; }

size_t protected_at(const U& t, size_t i) {
  const size_t n = t.size();
  // 1. ^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*FENCE[ \t]*(?:\n|$)|\Z)
  if (line_start(t, i)) {
    size_t j = i;
    while (j < n && (t[j] == ' ' || t[j] == '\t')) ++j;
    if (j < n && (t[j] == '`' || t[j] == '~')) {
      const char32_t ch = t[j];
      size_t k = 0;
      while (j + k < n && t[j + k] == ch) ++k;
      const size_t nl = k >= 3 ? t.find(U'\n', j + k) : U::npos;
      if (nl != U::npos) {
        for (size_t q = nl + 1;; ++q) {
          if (line_start(t, q)) {
            size_t r = q;
            while (r < n && (t[r] == ' ' || t[r] == '\t')) ++r;
            size_t f = 0;
            while (f < k && r + f < n && t[r + f] == ch) ++f;
            if (f == k) {
              r += k;
              while (r < n && (t[r] == ' ' || t[r] == '\t')) ++r;
              if (r < n && t[r] == '\n') return r + 1;
              if (r == n) return n;
            }
          }
          if (q >= n) return n;  // \Z
        }
      }
    }
  }
  // 2. (`+)[^`\n]*\1
  if (t[i] == '`') {
    size_t run = 0;
    while (i + run < n && t[i + run] == '`') ++run;
    for (size_t k = run; k >= 1; --k) {
      size_t j = i + k;
      while (j < n && t[j] != '`' && t[j] != '\n') ++j;
      size_t f = 0;
      while (f < k && j + f < n && t[j + f] == '`') ++f;
      if (f == k) return j + k;
    }
  }
  // 3. ^(?: {4}|\t)[^\n]*(?:\n|$)
  if (line_start(t, i) && (matches(t, i, "    ") || t[i] == '\t')) {
    const size_t nl = t.find(U'\n', i);
    return nl == U::npos ? n : nl + 1;
  }
  // 4. <!--.*?(?:-->|\Z)
  if (matches(t, i, "<!--")) {
    const size_t e = t.find(U"-->", i + 4);
    return e == U::npos ? n : e + 3;
  }
  static const std::string_view kRaw[] = {"pre", "code", "script", "style"};
  // 5. <(?:pre|code|script|style)\b[^>]*>.*?(?:</(?:pre|code|script|style)\s*>|\Z)   (re.I)
  if (t[i] == '<') {
    for (std::string_view name : kRaw) {
      if (!matches_ci(t, i + 1, name)) continue;
      const size_t after = i + 1 + name.size();
      if (after < n && is_word(t[after])) continue;  // \b
      const size_t gt = t.find(U'>', after);
      if (gt == U::npos) continue;
      for (size_t q = gt + 1;; ++q) {
        if (q + 1 < n && t[q] == '<' && t[q + 1] == '/') {
          for (std::string_view close : kRaw) {
            if (!matches_ci(t, q + 2, close)) continue;
            size_t r = q + 2 + close.size();
            while (r < n && is_space(t[r])) ++r;
            if (r < n && t[r] == '>') return r + 1;
          }
        }
        if (q >= n) return n;
      }
    }
  }
  // 6. <[/!?A-Za-z](?:"[^"]*"|'[^']*'|[^'">])*>   (re.I)
  if (t[i] == '<' && i + 1 < n &&
      (t[i + 1] == '/' || t[i + 1] == '!' || t[i + 1] == '?' || is_ascii_letter(fold(t[i + 1])))) {
    size_t j = i + 2;
    while (j < n) {
      if (t[j] == '>') return j + 1;
      if (t[j] == '"' || t[j] == '\'') {
        const size_t close = t.find(t[j], j + 1);
        if (close == U::npos) break;
        j = close + 1;
      } else {
        ++j;
      }
    }
  }
  // 7. (?:https?://|mailto:|www\.)[^\s<>]+   (re.I)
  {
    size_t p = npos;
    if (matches_ci(t, i, "https://")) p = i + 8;
    else if (matches_ci(t, i, "http://")) p = i + 7;
    else if (matches_ci(t, i, "mailto:")) p = i + 7;
    else if (matches_ci(t, i, "www.")) p = i + 4;
    if (p != npos) {
      size_t j = p;
      while (j < n && !is_space(t[j]) && t[j] != '<' && t[j] != '>') ++j;
      if (j > p) return j;
    }
  }
  // 8. ^[ \t]{0,3}\[[^\]\n]+\]:[^\n]*
  if (line_start(t, i)) {
    size_t r = i;
    while (r < n && (t[r] == ' ' || t[r] == '\t')) ++r;
    if (r - i <= 3 && r < n && t[r] == '[') {
      size_t k = r + 1;
      while (k < n && t[k] != ']' && t[k] != '\n') ++k;
      if (k > r + 1 && k + 1 < n && t[k] == ']' && t[k + 1] == ':') {
        const size_t nl = t.find(U'\n', k);
        return nl == U::npos ? n : nl;
      }
    }
  }
  // 9. (?<!\\)\$\$.*?(?<!\\)\$\$
  if (t[i] == '$' && i + 1 < n && t[i + 1] == '$' && !(i > 0 && t[i - 1] == '\\')) {
    for (size_t q = i + 2; q + 1 < n; ++q)
      if (t[q] == '$' && t[q + 1] == '$' && t[q - 1] != '\\') return q + 2;
  }
  // 10, 11. \\\[.*?\\\]  and  \\\(.*?\\\)
  if (t[i] == '\\' && i + 1 < n && (t[i + 1] == '[' || t[i + 1] == '(')) {
    const U close = t[i + 1] == '[' ? U"\\]" : U"\\)";
    const size_t e = t.find(close, i + 2);
    if (e != U::npos) return e + 2;
  }
  return npos;
}

// INLINE at i: (?<![\\$])\$(?!\$)((?:\\.|[^$\\\n])*)(?<!\\)\$(?!\$). Returns the end, body in
// [i + 1, end - 1), or npos.
size_t inline_at(const U& t, size_t i) {
  const size_t n = t.size();
  if (t[i] != '$' || (i > 0 && (t[i - 1] == '\\' || t[i - 1] == '$')) || (i + 1 < n && t[i + 1] == '$')) return npos;
  size_t j = i + 1;
  while (j < n) {
    if (t[j] == '\\' && j + 1 < n && t[j + 1] != '\n') j += 2;
    else if (t[j] != '$' && t[j] != '\\' && t[j] != '\n') ++j;
    else break;
  }
  if (j < n && t[j] == '$' && t[j - 1] != '\\' && !(j + 1 < n && t[j + 1] == '$')) return j + 1;
  return npos;
}

std::vector<std::pair<size_t, size_t>> protected_ranges(const U& t) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < t.size();) {
    const size_t e = protected_at(t, i);
    if (e != npos) {
      spans.emplace_back(i, e);
      i = e;
    } else {
      ++i;
    }
  }
  // Balanced inline-link destinations "](...)".
  for (size_t i = 0; i + 1 < t.size();) {
    if (t[i] == ']' && t[i + 1] == '(') {
      size_t pos = i + 2;
      int depth = 1;
      while (pos < t.size() && t[pos] != '\n' && depth) {
        if (t[pos] == '\\') {
          pos += 2;
          continue;
        }
        if (t[pos] == '(') ++depth;
        else if (t[pos] == ')') --depth;
        ++pos;
      }
      if (depth == 0) spans.emplace_back(i, pos);
      i += 2;
    } else {
      ++i;
    }
  }
  // Complete, plausible inline math.
  for (size_t i = 0; i < t.size();) {
    const size_t e = inline_at(t, i);
    if (e != npos) {
      if (plausible_math(t.substr(i + 1, e - i - 2))) spans.emplace_back(i, e);
      i = e;
    } else {
      ++i;
    }
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<size_t, size_t>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
    else merged.push_back(s);
  }
  return merged;
}

// NUMERIC_START.match: [+\-−]?\s*(?:\d|[.,]\d)
bool numeric_start(const U& s) {
  size_t k = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-' || s[0] == 0x2212)) k = 1;
  while (k < s.size() && is_space(s[k])) ++k;
  if (k < s.size() && is_digit(s[k])) return true;
  return k + 1 < s.size() && (s[k] == '.' || s[k] == ',') && is_digit(s[k + 1]);
}

// fullmatch(r'\s*\\begin\{([A-Za-z*]+)\}.*\\end\{\1\}\s*', body, re.S)
bool is_environment(const U& body) {
  size_t b = 0;
  while (b < body.size() && is_space(body[b])) ++b;
  if (!matches(body, b, "\\begin{")) return false;
  size_t k = b + 7;
  const size_t name_start = k;
  while (k < body.size() && (is_ascii_letter(body[k]) || body[k] == '*')) ++k;
  if (k == name_start || k >= body.size() || body[k] != '}') return false;
  const U end_tag = U"\\end{" + body.substr(name_start, k - name_start) + U"}";
  size_t e = body.size();
  while (e > 0 && is_space(body[e - 1])) --e;
  return e >= k + 1 + end_tag.size() && body.compare(e - end_tag.size(), end_tag.size(), end_tag) == 0;
}

// re.search(r'(?<!\w)[A-Z]{1,3}$', before): a currency code glued to the dollar (US$, HK$).
bool code_currency(const U& before) {
  size_t e = before.size();
  if (e > 0 && before[e - 1] == '\n') --e;  // `$` also matches before a final newline
  size_t s = e;
  while (s > 0 && before[s - 1] >= 'A' && before[s - 1] <= 'Z') --s;
  const size_t run = e - s;
  return run >= 1 && run <= 3 && (s == 0 || !is_word(before[s - 1]));
}

bool blank_line_inside(const U& body) {  // re.search(r'\n[ \t]*\n', body)
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\n') continue;
    size_t j = i + 1;
    while (j < body.size() && (body[j] == ' ' || body[j] == '\t')) ++j;
    if (j < body.size() && body[j] == '\n') return true;
  }
  return false;
}

struct Token {
  size_t start, end;
  bool escaped;
};

// TOKEN.finditer on the part: (?<![\\$])\\?\$(?!\$)
std::vector<Token> dollar_tokens(const U& p) {
  std::vector<Token> out;
  const size_t n = p.size();
  for (size_t j = 0; j < n;) {
    const bool behind_ok = j == 0 || (p[j - 1] != '\\' && p[j - 1] != '$');
    if (behind_ok && p[j] == '\\' && j + 1 < n && p[j + 1] == '$' && !(j + 2 < n && p[j + 2] == '$')) {
      out.push_back({j, j + 2, true});
      j += 2;
    } else if (behind_ok && p[j] == '$' && !(j + 1 < n && p[j + 1] == '$')) {
      out.push_back({j, j + 1, false});
      j += 1;
    } else {
      ++j;
    }
  }
  return out;
}

struct Edit {
  size_t a, b;
  U replacement;
};

void scan_part(const U& text, size_t start, size_t end, std::vector<Edit>& edits) {
  const U part = text.substr(start, end - start);
  const std::vector<Token> tokens = dollar_tokens(part);
  size_t i = 0;
  while (i + 1 < tokens.size()) {
    const Token& left = tokens[i];
    const Token& right = tokens[i + 1];
    const U body = part.substr(left.end, right.start - left.end);
    if (!left.escaped && !right.escaped) {
      i += plausible_math(body) ? 2 : 1;
      continue;
    }
    const bool numeric = numeric_start(strip(body));
    U after = part.substr(right.end);
    size_t lead = 0;
    while (lead < after.size() && (after[lead] == ' ' || after[lead] == '\t')) ++lead;
    after.erase(0, lead);
    const U before = part.substr(0, left.start);
    const bool ambiguous = ((contains(body, '\n') || contains(body, '\r')) && !is_environment(body)) ||
                           blank_line_inside(body) || (left.escaped && code_currency(before)) ||
                           (left.escaped && !right.escaped && numeric) || (numeric && numeric_start(after)) ||
                           is_bare_word(strip(body)) || !plausible_math(body);
    if (ambiguous) {
      ++i;
      continue;
    }
    edits.push_back({start + left.start, start + right.end, U"$" + body + U"$"});
    i += 2;
  }
}

}  // namespace

std::string fix_escaped_dollars(std::string_view markdown) {
  if (markdown.find('$') == std::string_view::npos) return std::string(markdown);
  const U text = decode(markdown);
  std::vector<Edit> edits;
  size_t previous = 0;
  for (const auto& [a, b] : protected_ranges(text)) {
    scan_part(text, previous, a, edits);
    previous = b;
  }
  scan_part(text, previous, text.size(), edits);
  if (edits.empty()) return std::string(markdown);
  U out;
  size_t pos = 0;
  for (const Edit& e : edits) {  // edits are in increasing, non-overlapping order
    out.append(text, pos, e.a - pos);
    out += e.replacement;
    pos = e.b;
  }
  out.append(text, pos, U::npos);
  return encode(out);
}

}  // namespace locr::runtime
