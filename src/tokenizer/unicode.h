// Unicode helpers for the tokenizer: UTF-8 decoding and repair, the character classes that the
// pre-tokenizer regexes use (\p{L}, \p{M}, \p{N}, \s), NFC, and the \w / White_Space tests behind
// added-token flags -- each defined the way Hugging Face `tokenizers` (Oniguruma regexes, the
// `unicode-normalization` crate, Rust's `regex` crate and String::from_utf8_lossy) defines it,
// so that our ids match theirs. Built on utf8proc; the few places where utf8proc's Unicode
// tables differ from the ones `tokenizers` uses are patched here and pinned by fixture tests.
// Not a general Unicode library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace locr::tokenizer::unicode {

// The classes the pre-tokenizer regexes distinguish. \p{L}, \p{M} and \p{N} are general
// categories (\p{M} = Mn, Mc, Me: combining marks); \s is the Unicode White_Space property (25
// code points), with \r and \n kept apart because the Qwen2 regex treats them specially. Only the
// Qwen3.5 regex names \p{M}; for the others a mark is one more [^\s\p{L}\p{N}] character.
enum class CharClass : uint8_t {
  kLetter,   // \p{L}
  kNumber,   // \p{N}
  kNewline,  // \r or \n (also \s)
  kSpace,    // \s other than \r and \n
  kMark,     // \p{M}
  kOther,    // [^\s\p{L}\p{M}\p{N}]
};

CharClass char_class(char32_t cp);
// Unicode White_Space: \s in Oniguruma and Rust's regex crate, and Rust's char::is_whitespace.
bool is_white_space(char32_t cp);
// Rust regex \w (Alphabetic, M, Nd, Pc, Join_Control); used by the added-token single_word
// flag. Alphabetic is computed as L + Nl + the Other_Alphabetic code points outside M.
bool is_word_char(char32_t cp);

// Decodes the code point starting at s[i] into *cp and returns its length in bytes, or 0 if
// the bytes at i are not a valid UTF-8 sequence (overlong, surrogate, > U+10FFFF, truncated).
size_t decode_utf8(std::string_view s, size_t i, char32_t* cp);
// Start of the code point that ends at byte offset `end` (end > 0, s valid UTF-8).
size_t previous_char_start(std::string_view s, size_t end);
void append_utf8(std::string* out, char32_t cp);
// Byte offset of the first invalid UTF-8 sequence in s, or std::string_view::npos.
size_t find_invalid_utf8(std::string_view s);
// Replaces invalid sequences with U+FFFD exactly as Rust's String::from_utf8_lossy does (one
// U+FFFD per maximal invalid subpart).
std::string utf8_lossy(std::string_view bytes);

// Canonical composition (NFC) of valid UTF-8, matching `tokenizers`' NFC normalizer, whose
// tables lack the canonical combining class of some marks added to Unicode after 2016 and the
// U+11938 decomposition.
std::string nfc(std::string_view s);

}  // namespace locr::tokenizer::unicode
