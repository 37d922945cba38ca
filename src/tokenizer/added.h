// Added tokens (special tokens such as <|im_end|> and user-added ones) and the split of input
// text on them that happens before normalisation and BPE: leftmost-longest matching with the
// single_word / lstrip / rstrip rules of `tokenizers`' AddedVocabulary::find_matches.
// Not the id assignment or the normalised/raw distinction: the tokenizer owns those.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace locr::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;  // match only when not inside a word (\w on neither side)
  bool lstrip = false;       // also swallow the whitespace before the match
  bool rstrip = false;       // also swallow the whitespace after the match
  bool normalized = true;    // matched against normalised text instead of the raw input
  bool special = false;      // dropped by decode(skip_special)
};

// A piece of text: either plain text (id < 0) to normalise and BPE-encode, or one added token
// (whose byte range includes any whitespace it stripped).
struct TextSegment {
  size_t begin = 0, end = 0;
  int32_t id = -1;
};

class AddedTokenSplitter {
 public:
  // `pattern`: the exact bytes to find (the content, or its normalised form).
  void add(const AddedToken& token, std::string pattern);
  bool empty() const { return entries_.empty(); }
  // Appends the segments of `text` in order; they cover it exactly (apart from overlaps that
  // `tokenizers` also produces when an rstrip swallows the start of another token).
  void split(std::string_view text, std::vector<TextSegment>* out) const;

 private:
  struct Entry {
    std::string pattern;
    int32_t id;
    bool single_word, lstrip, rstrip;
  };
  // Leftmost-longest match at or after `from`: the entry index, or -1.
  int find(std::string_view text, size_t from, size_t* start) const;

  std::vector<Entry> entries_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // entry indices, longest pattern first
};

}  // namespace locr::tokenizer
