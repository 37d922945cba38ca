// Splitting text on added tokens; see added.h. Mirrors
// tokenizers/src/tokenizer/added_vocabulary.rs (find_matches), whose Aho-Corasick automaton runs
// in LeftmostLongest mode: the earliest match wins, the longest among those starting there, and
// the search resumes after the raw match (before any rstrip extension).
#include "tokenizer/added.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace locr::tokenizer {

namespace {

// `tokenizers` tests these with Rust regexes: \w$ , ^\w , \s*$ , ^\s* (Unicode classes).
bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  char32_t cp;
  return unicode::decode_utf8(s, unicode::previous_char_start(s, s.size()), &cp) && unicode::is_word_char(cp);
}

bool starts_with_word(std::string_view s) {
  char32_t cp;
  return !s.empty() && unicode::decode_utf8(s, 0, &cp) && unicode::is_word_char(cp);
}

// Start of the whitespace run that ends s.
size_t trailing_space_start(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    const size_t p = unicode::previous_char_start(s, i);
    char32_t cp;
    if (!unicode::decode_utf8(s, p, &cp) || !unicode::is_white_space(cp)) break;
    i = p;
  }
  return i;
}

// Length of the whitespace run that starts s.
size_t leading_space_length(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp;
    const size_t len = unicode::decode_utf8(s, i, &cp);
    if (len == 0 || !unicode::is_white_space(cp)) break;
    i += len;
  }
  return i;
}

}  // namespace

void AddedTokenSplitter::add(const AddedToken& token, std::string pattern) {
  if (pattern.empty()) return;
  const auto index = static_cast<uint32_t>(entries_.size());
  auto& bucket = by_first_byte_[static_cast<uint8_t>(pattern[0])];
  entries_.push_back(Entry{std::move(pattern), token.id, token.single_word, token.lstrip, token.rstrip});
  // Longest first, so that the first pattern found at a position is the longest there.
  const size_t len = entries_.back().pattern.size();
  bucket.insert(std::upper_bound(bucket.begin(), bucket.end(), len,
                                 [&](size_t l, uint32_t e) { return l > entries_[e].pattern.size(); }),
                index);
}

int AddedTokenSplitter::find(std::string_view text, size_t from, size_t* start) const {
  for (size_t pos = from; pos < text.size(); ++pos) {
    for (uint32_t e : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      const std::string& p = entries_[e].pattern;
      if (text.compare(pos, p.size(), p) == 0) {
        *start = pos;
        return static_cast<int>(e);
      }
    }
  }
  return -1;
}

void AddedTokenSplitter::split(std::string_view text, std::vector<TextSegment>* out) const {
  size_t start_offset = 0;
  size_t from = 0;
  size_t start = 0;
  for (int e; !entries_.empty() && (e = find(text, from, &start)) >= 0;) {
    const Entry& entry = entries_[e];
    size_t stop = start + entry.pattern.size();
    from = stop;
    if (entry.single_word) {
      const bool start_space = start == 0 || !ends_with_word(text.substr(0, start));
      const bool stop_space = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    // The whitespace an earlier match already took stays with it.
    if (entry.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
    if (entry.rstrip) stop += leading_space_length(text.substr(stop));
    start = std::min(start, stop);  // only if a token starting with whitespace overlaps an rstrip
    if (start_offset < start) out->push_back(TextSegment{start_offset, start, -1});
    out->push_back(TextSegment{start, stop, entry.id});
    start_offset = stop;
  }
  if (start_offset != text.size()) out->push_back(TextSegment{start_offset, text.size(), -1});
}

}  // namespace locr::tokenizer
