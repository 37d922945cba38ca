#include <gtest/gtest.h>

#include "runtime/detokenizer.h"

namespace locr::runtime {
namespace {

TEST(Utf8, CompletePrefixHoldsBackPartialCharacters) {
  const std::string e_acute = "\xC3\xA9", han = "\xE4\xB8\xAD", emoji = "\xF0\x9F\x98\x80";
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a" + e_acute.substr(0, 1)), 1u);
  EXPECT_EQ(utf8_complete_prefix(han.substr(0, 2)), 0u);
  EXPECT_EQ(utf8_complete_prefix(emoji.substr(0, 3)), 0u);
  EXPECT_EQ(utf8_complete_prefix(emoji + "x"), 5u);
  // An invalid byte can never complete: it is part of the emitted prefix (as U+FFFD later).
  EXPECT_EQ(utf8_complete_prefix("\xFF" "a"), 2u);
}

TEST(Utf8, SanitizeReplacesLikeFromUtf8Lossy) {
  EXPECT_EQ(utf8_sanitize("ok"), "ok");
  EXPECT_EQ(utf8_sanitize("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  // A truncated 3-byte sequence followed by ASCII is one replacement character.
  EXPECT_EQ(utf8_sanitize("\xE4\xB8" "z"), "\xEF\xBF\xBD" "z");
  // Overlong / surrogate encodings are invalid.
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace locr::runtime

namespace locr::runtime {
namespace {

TEST(Detokenizer, HoldsBackSplitCharactersAndSkipsUnknownIds) {
  const auto tok = tokenizer::Tokenizer::from_file(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a/tokenizer.json");
  const std::vector<int32_t> ids = tok->encode("Bonjour 中文 ok");
  Detokenizer d(*tok, true);
  std::string out;
  for (int32_t id : ids) {
    const std::string delta = d.push(id);
    EXPECT_EQ(utf8_complete_prefix(delta), delta.size()) << "a delta must never end mid-character";
    out += delta;
  }
  EXPECT_EQ(d.push(tok->vocab_size() + 5), "");  // padding id past the tokenizer
  out += d.finish();
  EXPECT_EQ(out, tok->decode(ids, true));
  EXPECT_EQ(out, "Bonjour 中文 ok");
}

TEST(Detokenizer, EmbeddingRowsWithoutATokenAreEmptyPieces) {
  // tiny_a: 768 embedding rows, tokenizer ids 0..725 (the real model: 151936 rows, 151669 ids).
  const auto tok = tokenizer::Tokenizer::from_file(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a/tokenizer.json");
  ASSERT_EQ(tok->vocab_size(), 726);
  std::vector<int32_t> ids = tok->encode("ab 中");
  ids.insert(ids.begin() + 1, {726, 767});
  ids.push_back(730);
  for (bool skip : {false, true}) {
    Detokenizer d(*tok, skip);
    std::string out;
    for (int32_t id : ids) out += d.push(id);
    out += d.finish();
    EXPECT_EQ(out, "ab 中");
    EXPECT_EQ(tok->decode(ids, skip), "ab 中");  // the whole decode agrees (no error)
  }
}

}  // namespace
}  // namespace locr::runtime
