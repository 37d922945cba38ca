// Hand-written matchers for the byte-level BPE pre-tokenizer regexes; see
// pretokenizer.h. Each matcher works on the decoded code points of one piece of text
// and returns where the regex match starting at position i ends, trying the alternatives in the
// pattern's order as a backtracking engine would. The comments spell out how each alternative's
// backtracking resolves.
#include "tokenizer/pretokenizer.h"

#include <cstdint>
#include <string_view>

#include "tokenizer/unicode.h"

namespace locr::tokenizer {

namespace {

using unicode::CharClass;

constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Digits3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// transformers' Qwen3_5Tokenizer (PRETOKENIZE_REGEX in models/qwen3_5/tokenization_qwen3_5.py).
constexpr std::string_view kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The decoded piece: code points and their classes, indexed by character.
struct Chars {
  const char32_t* cp;
  const CharClass* cls;
  size_t n;

  bool is(size_t i, CharClass c) const { return i < n && cls[i] == c; }
  bool is_space(size_t i) const {
    return i < n && (cls[i] == CharClass::kSpace || cls[i] == CharClass::kNewline);
  }
  size_t run_end(size_t i, CharClass c) const {
    while (i < n && cls[i] == c) ++i;
    return i;
  }
  size_t space_run_end(size_t i) const {
    while (is_space(i)) ++i;
    return i;
  }
  // \p{L}, or [\p{L}\p{M}] where marks are kept apart (see split_with_regex).
  bool is_word(size_t i) const { return i < n && (cls[i] == CharClass::kLetter || cls[i] == CharClass::kMark); }
  size_t word_run_end(size_t i) const {
    while (is_word(i)) ++i;
    return i;
  }
};

// Case-insensitive ASCII letter as Oniguruma folds it for the contraction letters; U+017F
// (long s) folds to 's'.
char32_t fold(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + ('a' - 'A');
  if (c == 0x17F) return 's';
  return c;
}

// '(s|t|re|ve|m|ll|d) at i; returns the match end or i. `ci`: case-insensitive.
size_t match_contraction(const Chars& t, size_t i, bool ci) {
  if (t.cp[i] != '\'' || i + 1 >= t.n) return i;
  const char32_t a = ci ? fold(t.cp[i + 1]) : t.cp[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if (i + 2 >= t.n) return i;
  const char32_t b = ci ? fold(t.cp[i + 2]) : t.cp[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// \s+(?!\S) then \s+, at i (cls[i] is whitespace). Greedy \s+ takes the whole run [i, q); the
// lookahead holds at the end of text, otherwise backtracking gives back one character (the one
// before the non-space), which needs the run to be at least two long. Failing that, \s+.
size_t match_space_tail(const Chars& t, size_t i, size_t q) {
  if (q == t.n) return q;
  if (q - i >= 2) return q - 1;
  return q;
}

// The Qwen2 regex; also the Qwen3.5 one, which differs only in its character classes: letter
// runs are [\p{L}\p{M}]+ (a combining mark continues or starts a word) and the symbol run is
// [^\s\p{L}\p{M}\p{N}]+. split_with_regex keeps marks as kMark only for Qwen3.5 and makes them
// kOther (symbols) for the other patterns, so one matcher serves both: below, a "word character"
// is a letter or a mark, and for Qwen2 that is just \p{L}.
size_t match_qwen2(const Chars& t, size_t i, size_t max_digits) {
  const CharClass c = t.cls[i];
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (size_t e = match_contraction(t, i, /*ci=*/true); e != i) return e;
  // [^\r\n\p{L}\p{N}]?\p{L}+ : the optional character is taken only if a letter follows it
  // (otherwise it backtracks to empty and needs a letter at i).
  // Qwen3.5's [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ : the optional character may also be a mark, and
  // at a letter or a mark both ways end where the letter/mark run ends.
  if (t.is_word(i)) return t.word_run_end(i);
  if ((c == CharClass::kSpace || c == CharClass::kOther) && t.is_word(i + 1)) return t.word_run_end(i + 1);
  // \p{N} or \p{N}{1,3}
  if (c == CharClass::kNumber) {
    size_t e = i + 1;
    while (e < t.n && e - i < max_digits && t.cls[e] == CharClass::kNumber) ++e;
    return e;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]* (Qwen3.5: ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*)
  {
    size_t j = i;
    if (t.cp[i] == ' ' && t.is(i + 1, CharClass::kOther)) j = i + 1;
    if (t.cls[j] == CharClass::kOther) {
      j = t.run_end(j, CharClass::kOther);
      return t.run_end(j, CharClass::kNewline);
    }
  }
  // Only whitespace is left at i.
  const size_t q = t.space_run_end(i);
  // \s*[\r\n]+ : \s* backtracks from the end of the run to the last \r or \n in it, and
  // [\r\n]+ then takes that one character (none follow it inside the run).
  for (size_t k = q; k > i; --k) {
    if (t.cls[k - 1] == CharClass::kNewline) return k;
  }
  return match_space_tail(t, i, q);
}

size_t match_gpt2(const Chars& t, size_t i) {
  // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
  if (size_t e = match_contraction(t, i, /*ci=*/false); e != i) return e;
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
  const size_t j = (t.cp[i] == ' ' && i + 1 < t.n) ? i + 1 : i;
  for (CharClass k : {CharClass::kLetter, CharClass::kNumber, CharClass::kOther}) {
    if (t.cls[j] == k) return t.run_end(j, k);
    if (j != i && t.cls[i] == k) return t.run_end(i, k);  // not reached: cp[i] is a space
  }
  return match_space_tail(t, i, t.space_run_end(i));
}

}  // namespace

std::optional<SplitRegex> split_regex_from_pattern(std::string_view pattern) {
  if (pattern == kQwen2Pattern) return SplitRegex::kQwen2;
  if (pattern == kQwen2Digits3Pattern) return SplitRegex::kQwen2Digits3;
  if (pattern == kQwen35Pattern) return SplitRegex::kQwen35;
  if (pattern == kGpt2Pattern) return SplitRegex::kGpt2;
  return std::nullopt;
}

std::string_view split_regex_pattern(SplitRegex re) {
  switch (re) {
    case SplitRegex::kQwen2: return kQwen2Pattern;
    case SplitRegex::kQwen2Digits3: return kQwen2Digits3Pattern;
    case SplitRegex::kQwen35: return kQwen35Pattern;
    case SplitRegex::kGpt2: return kGpt2Pattern;
  }
  return {};
}

void split_with_regex(SplitRegex re, std::string_view text, std::vector<size_t>* piece_ends) {
  // Scratch buffers reused across calls on the same thread.
  thread_local std::vector<char32_t> cps;
  thread_local std::vector<CharClass> classes;
  thread_local std::vector<uint32_t> offsets;  // byte offset of each character, plus the end
  cps.clear();
  classes.clear();
  offsets.clear();
  // Only the Qwen3.5 regex names \p{M}; for the others a mark is a [^\s\p{L}\p{N}] character.
  // (GPT-2's matcher never sees kMark either.)
  const bool marks = re == SplitRegex::kQwen35;
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    size_t len = unicode::decode_utf8(text, i, &cp);
    if (len == 0) len = 1, cp = 0xFFFD;  // callers pass valid UTF-8
    cps.push_back(cp);
    CharClass k = unicode::char_class(cp);
    if (k == CharClass::kMark && !marks) k = CharClass::kOther;
    classes.push_back(k);
    offsets.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  offsets.push_back(static_cast<uint32_t>(text.size()));
  const Chars t{cps.data(), classes.data(), cps.size()};
  for (size_t i = 0; i < t.n;) {
    size_t e = i;
    switch (re) {
      case SplitRegex::kQwen2:
      case SplitRegex::kQwen35: e = match_qwen2(t, i, 1); break;
      case SplitRegex::kQwen2Digits3: e = match_qwen2(t, i, 3); break;
      case SplitRegex::kGpt2: e = match_gpt2(t, i); break;
    }
    if (e == i) e = i + 1;  // unreachable for these patterns: every character starts a match
    piece_ends->push_back(offsets[e]);
    i = e;
  }
}

}  // namespace locr::tokenizer
