// Tokenizer tests. Two halves:
//  - the real Qwen vocabulary (tests/fixtures/tokenizer/, written by
//    tools/reference/make_tokenizer_goldens.py with the Python `tokenizers` library): every golden
//    string must encode to exactly the library's ids and decode to its text, for the Qwen2
//    configuration and for patched variants (other pre-tokenizers, added-token flags, ...); plus
//    exhaustive checks of the Unicode classes and NFC the library uses;
//  - a hand-made toy tokenizer for the merge order and the error paths.
// No timing assertions here; throughput is measured separately.
#include <gtest/gtest.h>
#include "../common/fixtures.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace locr::tokenizer {
namespace {

using nlohmann::json;

std::string fixture_path(const std::string& name) { return std::string(LOCR_FIXTURES_DIR) + "/tokenizer/" + name; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using test::read_gzip;

std::vector<json> read_jsonl(const std::string& text) {
  std::vector<json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

// Printable form of a string for failure messages.
std::string show(const std::string& s) {
  std::string d = json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  return d.size() > 160 ? d.substr(0, 160) + "...\" (" + std::to_string(s.size()) + " bytes)" : d;
}

const json& qwen2_json() {
  static const json j = json::parse(test::qwen_tokenizer_json());
  return j;
}

const Tokenizer& qwen2() { return test::qwen_tokenizer(); }

const std::vector<json>& encode_goldens() {
  static const std::vector<json> rows = read_jsonl(read_text(fixture_path("encode_goldens.jsonl")));
  return rows;
}

json apply_patch(json base, const json& patch) {
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.key() == "model") {
      for (auto m = it.value().begin(); m != it.value().end(); ++m) base["model"][m.key()] = m.value();
    } else {
      base[it.key()] = it.value();
    }
  }
  return base;
}

// ------------------------------------------------------------------ real Qwen vocabulary

TEST(TokenizerQwen2, KnownIds) {
  const Tokenizer& t = qwen2();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.encode("system"), std::vector<int32_t>{8948});
  EXPECT_EQ(t.encode("user"), std::vector<int32_t>{872});
  EXPECT_EQ(t.encode("assistant"), std::vector<int32_t>{77091});
  EXPECT_EQ(t.encode("\n"), std::vector<int32_t>{198});
  EXPECT_EQ(t.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_to_id("<|image_pad|>"), 151655);
  EXPECT_EQ(t.token_to_id("\xC4\x8A"), 198);  // "Ċ", the byte-level spelling of "\n"
  EXPECT_EQ(t.token_to_id("no such token"), -1);
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_FALSE(t.is_special(151667));  // <think> is an added token but not special
  EXPECT_FALSE(t.is_special(198));
  EXPECT_FALSE(t.is_special(-1));
  EXPECT_FALSE(t.is_special(151669));
  // The image-only OCR prompt (model-spec §5).
  const std::vector<int32_t> prompt = {151644, 8948, 151645, 198, 151644, 872, 198, 151655, 151645, 198, 151644, 77091, 198};
  EXPECT_EQ(t.encode("<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n"),
            prompt);
}

TEST(TokenizerQwen2, EncodeGoldens) {
  const Tokenizer& t = qwen2();
  size_t checked = 0, failed = 0;
  for (const json& row : encode_goldens()) {
    const std::string text = row["text"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = t.encode(text);
    if (got != want && ++failed <= 20) ADD_FAILURE() << "encode " << show(text) << "\n got  " << json(got).dump() << "\n want " << json(want).dump();
    ++checked;
  }
  EXPECT_EQ(failed, 0u);
  EXPECT_GE(checked, 250u);
  RecordProperty("strings_checked", static_cast<int>(checked));
  std::printf("[ tokenizer ] %zu golden strings encoded, %zu mismatches\n", checked, failed);
}

TEST(TokenizerQwen2, DecodeRoundTrips) {
  const Tokenizer& t = qwen2();
  size_t failed = 0;
  for (const json& row : encode_goldens()) {
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    const std::string decoded = row["decoded"];
    const std::string skipped = row.value("decoded_skip", decoded);
    if (t.decode(ids) != decoded && ++failed <= 20) ADD_FAILURE() << "decode of " << show(row["text"]) << " gave " << show(t.decode(ids));
    if (t.decode(ids, true) != skipped && ++failed <= 20) ADD_FAILURE() << "decode(skip) of " << show(row["text"]) << " gave " << show(t.decode(ids, true));
    // Token bytes concatenate to the decoded text whenever that is valid UTF-8.
    std::string bytes;
    for (int32_t id : ids) bytes += t.token_bytes(id);
    if (unicode::find_invalid_utf8(bytes) == std::string::npos && bytes != decoded && ++failed <= 20)
      ADD_FAILURE() << "token_bytes of " << show(row["text"]);
  }
  EXPECT_EQ(failed, 0u);
}

TEST(TokenizerQwen2, DecodeGoldens) {
  const Tokenizer& t = qwen2();
  const auto rows = read_jsonl(read_text(fixture_path("decode_goldens.jsonl")));
  ASSERT_GE(rows.size(), 20u);
  for (const json& row : rows) {
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(t.decode(ids, row["skip_special"].get<bool>()), row["text"].get<std::string>()) << row["name"];
  }
}

TEST(TokenizerQwen2, TokenBytes) {
  const Tokenizer& t = qwen2();
  EXPECT_EQ(t.token_bytes(198), "\n");
  EXPECT_EQ(t.token_bytes(151645), "<|im_end|>");
  EXPECT_EQ(t.token_bytes(t.token_to_id("\xC3\xA3")), "\xE3");  // "ã" in the alphabet stands for byte 0xE3
  EXPECT_EQ(t.token_bytes(t.token_to_id("\xC4\xA0")), " ");     // "Ġ"
  // The real vocabulary ends at 151668; the model's embedding rows 151669..151935 have no token:
  // empty pieces, as `tokenizers` decodes them.
  EXPECT_EQ(t.token_bytes(151669), "");
  EXPECT_EQ(t.decode({151669, 198, 151935}), "\n");
}

TEST(TokenizerQwen2, Variants) {
  const json variants = json::parse(read_text(fixture_path("variants.json")));
  ASSERT_GE(variants.size(), 8u);
  for (const json& v : variants) {
    const std::string name = v["name"];
    SCOPED_TRACE(name);
    const auto t = Tokenizer::from_json(apply_patch(qwen2_json(), v["patch"]).dump());
    size_t failed = 0;
    for (const json& row : encode_goldens()) {
      const std::string text = row["text"];
      std::vector<int32_t> want = row["ids"];
      if (row.contains("variant_ids") && row["variant_ids"].contains(name)) want = row["variant_ids"][name].get<std::vector<int32_t>>();
      std::string want_text = row["decoded"];
      if (row.contains("variant_decoded") && row["variant_decoded"].contains(name)) want_text = row["variant_decoded"][name];
      const auto got = t->encode(text);
      if (got != want && ++failed <= 10) ADD_FAILURE() << "encode " << show(text) << "\n got  " << json(got).dump() << "\n want " << json(want).dump();
      if (t->decode(want) != want_text && ++failed <= 10) ADD_FAILURE() << "decode " << show(text) << " gave " << show(t->decode(want));
    }
    EXPECT_EQ(failed, 0u);
  }
}

TEST(TokenizerQwen2, ConcurrentEncodesAgree) {
  // HTTP threads tokenize concurrently; the word cache and scratch buffers must not mix them up.
  const Tokenizer& t = qwen2();
  const auto& rows = encode_goldens();
  std::vector<size_t> failures(4, 0);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < failures.size(); ++k) {
    threads.emplace_back([&, k] {
      for (size_t i = 0; i < rows.size(); ++i) {
        const json& row = rows[(i * 7 + k * 131) % rows.size()];
        if (t.encode(row["text"].get<std::string>()) != row["ids"].get<std::vector<int32_t>>()) ++failures[k];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t f : failures) EXPECT_EQ(f, 0u);
}

TEST(TokenizerQwen2, RejectsInvalidUtf8) {
  try {
    qwen2().encode("ab\xC3(");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("offset 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(qwen2().encode("\xED\xA0\x80"), Error);  // a UTF-16 surrogate
}

TEST(TokenizerQwen2, LongInputsStayLinear) {
  // Would take minutes if whitespace runs or long words were handled quadratically.
  const Tokenizer& t = qwen2();
  EXPECT_FALSE(t.encode(std::string(200000, ' ') + "x").empty());
  EXPECT_FALSE(t.encode(std::string(100000, '\n') + std::string(100000, ' ')).empty());
  std::string word;
  for (int i = 0; i < 20000; ++i) word += "\xE4\xB8\xAD";  // one 60 kB pre-token of 中
  EXPECT_FALSE(t.encode(word).empty());
  EXPECT_EQ(t.decode(t.encode(word)), word);
}

// ------------------------------------------------------------------ Unicode

// Every code point against the classes the Python library uses (its Oniguruma for the
// pre-tokenizer regexes, Rust's regex crate for the added-token flags).
TEST(TokenizerUnicode, ClassesMatchTokenizers) {
  const json classes = json::parse(read_text(fixture_path("unicode_classes.json")));
  for (const char* name : {"L", "N", "S", "M", "W", "WS"}) ASSERT_TRUE(classes.contains(name)) << name;
  auto member_of = [&](const char* name) {
    std::vector<bool> in(0x110000, false);
    for (const auto& r : classes[name])
      for (char32_t c = r[0].get<char32_t>(); c <= r[1].get<char32_t>(); ++c) in[c] = true;
    return in;
  };
  const auto letters = member_of("L"), numbers = member_of("N"), spaces = member_of("S"), marks = member_of("M");
  const auto word = member_of("W"), rust_spaces = member_of("WS");
  size_t mismatches = 0;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const unicode::CharClass k = unicode::char_class(c);
    const bool space = k == unicode::CharClass::kSpace || k == unicode::CharClass::kNewline;
    if ((k == unicode::CharClass::kLetter) != letters[c] || (k == unicode::CharClass::kNumber) != numbers[c] ||
        (k == unicode::CharClass::kMark) != marks[c] || space != spaces[c] || unicode::is_white_space(c) != spaces[c] || unicode::is_white_space(c) != rust_spaces[c] ||
        unicode::is_word_char(c) != word[c] || (k == unicode::CharClass::kNewline) != (c == '\r' || c == '\n')) {
      if (++mismatches <= 10) ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(c);
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(TokenizerUnicode, NfcMatchesTokenizers) {
  const auto rows = read_jsonl(read_gzip(fixture_path("nfc_goldens.jsonl.gz")));
  ASSERT_GT(rows.size(), 10000u);
  size_t mismatches = 0;
  for (const json& row : rows) {
    const std::string in = row[0], want = row[1];
    if (unicode::nfc(in) != want && ++mismatches <= 10) ADD_FAILURE() << "nfc " << show(in) << " gave " << show(unicode::nfc(in)) << " want " << show(want);
  }
  EXPECT_EQ(mismatches, 0u);
}

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

TEST(TokenizerToy, IdsWithoutATokenDecodeToNothingAsTokenizersDoes) {
  // `tokenizers` decodes an id it has no token for as an empty piece (id_to_token is None).
  const auto t = load(toy());
  EXPECT_EQ(t->decode({0, 10}), t->decode({0}));
  EXPECT_EQ(t->decode({-3}), "");
  EXPECT_EQ(t->token_bytes(42), "");
  EXPECT_FALSE(t->has_id(42));
  // A hole in the id space has no token either.
  json j = toy();
  j["model"]["vocab"]["bb"] = 20;
  j["model"]["merges"].push_back("b b");
  const auto holes = load(j);
  EXPECT_EQ(holes->encode("bb"), std::vector<int32_t>{20});
  EXPECT_EQ(holes->decode({20, 15, 20}), "bbbb");
  EXPECT_FALSE(holes->has_id(15));
}

TEST(TokenizerToy, MissingFile) {
  expect_error([] { Tokenizer::from_file("/nonexistent/tokenizer.json"); }, ErrorKind::kNotFound, "/nonexistent/tokenizer.json");
}

}  // namespace
}  // namespace locr::tokenizer
