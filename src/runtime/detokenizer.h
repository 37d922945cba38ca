// Incremental detokenisation: token ids in, UTF-8 text deltas out. Bytes of a character split
// across tokens are held back until the character is complete, so a delta is never broken UTF-8.
// Sequences that can never become valid are emitted as U+FFFD (as the full decode would); ids the
// tokenizer does not know (embedding padding) produce nothing, as transformers' decode skips them.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace locr::runtime {

class Detokenizer {
 public:
  Detokenizer(const tokenizer::Tokenizer& tok, bool skip_special) : tok_(tok), skip_special_(skip_special) {}
  // Returns the text that became complete with this token (possibly empty).
  std::string push(int32_t id);
  // Flushes what is held back (incomplete bytes become U+FFFD).
  std::string finish();

 private:
  const tokenizer::Tokenizer& tok_;
  bool skip_special_;
  std::string pending_;
};

// Length of the longest prefix of `s` that ends on a UTF-8 character boundary, treating a
// trailing incomplete but so-far-valid sequence as not yet complete.
size_t utf8_complete_prefix(const std::string& s);
// Replaces invalid UTF-8 sequences with U+FFFD (as Rust's String::from_utf8_lossy).
std::string utf8_sanitize(const std::string& s);

}  // namespace locr::runtime
