// Text helpers for the chat-template interpreter: UTF-8 <-> code points and the Python str
// semantics templates rely on (len counts code points, str.isspace's whitespace set, strip/split,
// case mapping through utf8proc).
//
// Not a general Unicode library: case mapping is the simple one-to-one mapping (Python's "ß".upper()
// gives "SS", here it stays "ß"). Invalid UTF-8 bytes survive a decode/encode round trip
// (mapped to U+DC80..U+DCFF like Python's surrogateescape) so nothing is silently lost.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace locr::jinja {

std::u32string decode_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t c);
std::string encode_utf8(std::u32string_view s);
size_t utf8_length(std::string_view s);  // number of code points

bool is_py_space(char32_t c);  // str.isspace()
bool is_printable(char32_t c);  // str.isprintable(), used by repr()
bool is_cased(char32_t c);
bool is_alpha(char32_t c);
bool is_decimal(char32_t c);
bool is_upper(char32_t c);
bool is_lower(char32_t c);
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
char32_t to_title(char32_t c);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_title(std::string_view s);       // str.title()

// str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split / str.rsplit; `sep` null means runs of whitespace. maxsplit < 0: no limit.
std::vector<std::string> py_split(std::string_view s, const std::string* sep, long maxsplit, bool from_right);
// str.splitlines(keepends=False).
std::vector<std::string> py_splitlines(std::string_view s);
// str.replace; count < 0 replaces all. An empty `from` inserts between code points, as Python does.
std::string py_replace(std::string_view s, std::string_view from, std::string_view to, long count);
// Removes trailing whitespace in the sense of Python's str.rstrip() (Jinja's `-` markers).
std::string rstrip_ws(std::string_view s);
// Length in bytes of the whitespace prefix of `s` (Jinja's `\s*` after `-%}`).
size_t leading_ws_bytes(std::string_view s);
bool all_ws(std::string_view s);  // true for "" as well

}  // namespace locr::jinja
