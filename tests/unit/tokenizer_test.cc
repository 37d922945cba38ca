// Tokenizer tests on a hand-made toy tokenizer: merge order, added tokens, and the error paths;
// plus the pre-tokenizer regex matchers and UTF-8 repair on hand-checked examples.
// No timing assertions here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/tokenizer.h"
#include "model/tokenizer_bpe.h"
#include "model/tokenizer_pretokenizer.h"
#include "model/tokenizer_unicode.h"

namespace locr::model {
namespace {

using nlohmann::json;

// ------------------------------------------------------------------ Unicode

TEST(TokenizerUnicode, Utf8Lossy) {
  // One U+FFFD per maximal invalid subpart, as Rust's String::from_utf8_lossy.
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(unicode::utf8_lossy("ok"), "ok");
  EXPECT_EQ(unicode::utf8_lossy("\xE4\xB8"), r);
  EXPECT_EQ(unicode::utf8_lossy("\xE4\xB8" "a"), r + "a");
  EXPECT_EQ(unicode::utf8_lossy("\xE0\x80\x80"), r + r + r);
  EXPECT_EQ(unicode::utf8_lossy("\xF0\x9F\x98"), r);
  EXPECT_EQ(unicode::utf8_lossy("\xF4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(unicode::utf8_lossy("\xED\x9F\xBF"), "\xED\x9F\xBF");  // U+D7FF is fine
  EXPECT_EQ(unicode::utf8_lossy(std::string("\0\xFF", 2)), std::string("\0", 1) + r);
}

TEST(TokenizerPreTokenizer, Qwen2RegexPieces) {
  auto pieces = [](SplitRegex re, std::string_view text) {
    std::vector<size_t> ends;
    split_with_regex(re, text, &ends);
    std::vector<std::string> out;
    size_t b = 0;
    for (size_t e : ends) out.emplace_back(text.substr(b, e - b)), b = e;
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(SplitRegex::kQwen2, "Hello  world"), (V{"Hello", " ", " world"}));
  EXPECT_EQ(pieces(SplitRegex::kQwen2, "x \n\n  y  "), (V{"x", " \n\n", " ", " y", "  "}));
  EXPECT_EQ(pieces(SplitRegex::kQwen2, "I'M don'T 123"), (V{"I", "'M", " don", "'T", " ", "1", "2", "3"}));
  EXPECT_EQ(pieces(SplitRegex::kQwen2, "a.\n\nb"), (V{"a", ".\n\n", "b"}));
  EXPECT_EQ(pieces(SplitRegex::kQwen2, "\tword ((x"), (V{"\tword", " ((", "x"}));
  EXPECT_EQ(pieces(SplitRegex::kQwen2Digits3, "1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(pieces(SplitRegex::kGpt2, "I'M don't  42x"), (V{"I", "'", "M", " don", "'t", " ", " 42", "x"}));
  EXPECT_EQ(split_regex_from_pattern(split_regex_pattern(SplitRegex::kQwen2)), SplitRegex::kQwen2);
  EXPECT_EQ(split_regex_from_pattern("\\s+"), std::nullopt);
}

// ------------------------------------------------------------------ toy tokenizer

// Byte-level vocabulary: "Ġ" is the space byte. Merge ranks: a+b first, then ab+c, then Ġ+a.
constexpr const char* kToy = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 8, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 9, "content": "<x>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}
  ],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "abc": 5, "Ġa": 6, "aa": 7},
            "merges": ["a b", "ab c", "Ġ a", "a a"]}
})";

json toy() { return json::parse(kToy); }

std::unique_ptr<Tokenizer> load(const json& j) { return Tokenizer::from_json(j.dump()); }

// Runs `f`, expecting a locr::Error of `kind` whose message contains `needle`.
template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TokenizerToy, MergesByRankThenLeftmost) {
  const auto t = load(toy());
  EXPECT_EQ(t->encode("abc ab a"), (std::vector<int32_t>{5, 3, 4, 6}));  // " ab": a+b outranks Ġ+a
  EXPECT_EQ(t->encode("aaa"), (std::vector<int32_t>{7, 0}));             // leftmost on ties
  EXPECT_EQ(t->encode("xyz"), std::vector<int32_t>{});                   // no such bytes, no unk: dropped
  EXPECT_EQ(t->encode("ab<s>c<x>"), (std::vector<int32_t>{4, 8, 2, 9}));
  EXPECT_EQ(t->vocab_size(), 10);
  EXPECT_EQ(t->decode({5, 3, 4, 8, 9}), "abc ab<s><x>");
  EXPECT_EQ(t->decode({5, 3, 4, 8, 9}, /*skip_special=*/true), "abc ab<x>");
}

TEST(TokenizerToy, MergesAsPairsEqualStrings) {
  json j = toy();
  j["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "c"}), json::array({"Ġ", "a"}),
                                      json::array({"a", "a"})});
  EXPECT_EQ(load(j)->encode("abc ab a aaa"), load(toy())->encode("abc ab a aaa"));
}

TEST(TokenizerToy, UnknownTokenAndFusing) {
  json j = toy();
  j["model"]["vocab"]["?"] = 10;
  j["model"]["unk_token"] = "?";
  EXPECT_EQ(load(j)->encode("axyb"), (std::vector<int32_t>{0, 10, 10, 1}));
  j["model"]["fuse_unk"] = true;
  EXPECT_EQ(load(j)->encode("axyb"), (std::vector<int32_t>{0, 10, 1}));
}

TEST(TokenizerToy, AddedTokenIdsAreAssignedLikeTokenizers) {
  // The ids in the file are not trusted: new tokens are numbered from the vocabulary size.
  json j = toy();
  j["added_tokens"][0]["id"] = 50;
  j["added_tokens"][1]["id"] = 51;
  const auto t = load(j);
  EXPECT_EQ(t->token_to_id("<s>"), 8);
  // An added token already in the vocabulary keeps its id.
  j["added_tokens"].push_back({{"id", 99}, {"content", "abc"}, {"special", true}, {"normalized", false}});
  const auto t2 = load(j);
  EXPECT_EQ(t2->token_to_id("abc"), 5);
  EXPECT_TRUE(t2->is_special(5));
  EXPECT_EQ(t2->decode({4, 5}, true), "ab");
}

TEST(TokenizerToy, MalformedJson) {
  expect_error([] { Tokenizer::from_json("{\"model\": "); }, ErrorKind::kInvalidArgument, "not valid JSON");
  expect_error([] { Tokenizer::from_json("[1, 2]"); }, ErrorKind::kInvalidArgument, "JSON object");
}

TEST(TokenizerToy, UnknownModelType) {
  json j = toy();
  j["model"]["type"] = "WordPiece";
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "WordPiece");
  j["model"]["type"] = "BPE";
  j["model"]["byte_fallback"] = true;
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "byte_fallback");
  j = toy();
  j["model"]["dropout"] = 0.1;
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "dropout");
}

TEST(TokenizerToy, MissingVocabOrMerges) {
  json j = toy();
  j["model"].erase("vocab");
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "vocab");
  j = toy();
  j["model"].erase("merges");
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "merges");
  j = toy();
  j.erase("model");
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "model");
  j = toy();
  j["model"]["vocab"]["b"] = 0;
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "more than one token");
  j = toy();
  j["model"]["vocab"]["b"] = -1;
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "non-negative");
}

TEST(TokenizerToy, MergesReferencingUnknownTokens) {
  json j = toy();
  j["model"]["merges"].push_back("b q");
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "\"q\"");
  j = toy();
  j["model"]["merges"].push_back("b c");  // "bc" is not in the vocabulary
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "\"bc\"");
  j = toy();
  j["model"]["merges"].push_back("a b c");
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "left right");
  j = toy();
  j["model"]["unk_token"] = "<unk>";
  expect_error([&] { load(j); }, ErrorKind::kInvalidArgument, "<unk>");
}

TEST(TokenizerToy, UnsupportedComponentsAreNamed) {
  json j = toy();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "Lowercase");
  j = toy();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "Whitespace");
  j = toy();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}, {"invert", false}};
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "\\\\s+");
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({
      {{"type", "Split"}, {"pattern", {{"Regex", std::string(split_regex_pattern(SplitRegex::kQwen2))}}}, {"behavior", "Removed"}, {"invert", false}},
      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "Removed");
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Isolated";
  EXPECT_NO_THROW(load(j));
  j["pre_tokenizer"]["pretokenizers"].erase(1);
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "ByteLevel");
  j = toy();
  j["pre_tokenizer"] = nullptr;
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "pre_tokenizer");
  j = toy();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "decoder");
  j["decoder"] = nullptr;
  expect_error([&] { load(j); }, ErrorKind::kUnsupported, "decoder");
}

TEST(TokenizerToy, UnknownIdInDecode) {
  const auto t = load(toy());
  expect_error([&] { t->decode({0, 10}); }, ErrorKind::kInvalidArgument, "token id 10");
  expect_error([&] { t->decode({-3}); }, ErrorKind::kInvalidArgument, "token id -3");
  expect_error([&] { t->token_bytes(42); }, ErrorKind::kInvalidArgument, "token id 42");
  // A hole in the id space is unknown too.
  json j = toy();
  j["model"]["vocab"]["bb"] = 20;
  j["model"]["merges"].push_back("b b");
  const auto holes = load(j);
  EXPECT_EQ(holes->encode("bb"), std::vector<int32_t>{20});
  expect_error([&] { holes->decode({15}); }, ErrorKind::kInvalidArgument, "token id 15");
}

TEST(TokenizerToy, MissingFile) {
  expect_error([] { Tokenizer::from_file("/nonexistent/tokenizer.json"); }, ErrorKind::kNotFound, "/nonexistent/tokenizer.json");
}

}  // namespace
}  // namespace locr::model
