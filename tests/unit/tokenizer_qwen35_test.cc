// The Qwen3.5 tokenizer: transformers' Qwen3_5Tokenizer, which ignores the pre-tokenizer of a
// Qwen3.5 checkpoint's tokenizer.json and splits with its own regex, whose letter runs are
// [\p{L}\p{M}]+ (see TokenizerOptions in tokenizer/tokenizer.h). Goldens from
// tools/reference/make_qwen35_tokenizer_goldens.py: AutoTokenizer.from_pretrained on a directory
// holding the real-vocabulary Qwen2 tokenizer.json (tests/fixtures/tokenizer/qwen2_tokenizer.json.gz)
// and config.json model_type "qwen3_5". Every text must give the library's ids
//  - with the override forced on that same tokenizer.json (and on the same vocabulary in GGUF),
//  - with no override, from a tokenizer.json that carries the Qwen3.5 pipeline literally,
// the Qwen3.5 matcher must cut every text where the library's Split does, and the Qwen2 regex must
// give what the goldens record for it (other pieces on 620 texts, other ids on 57).
#include <gtest/gtest.h>
#include "../common/fixtures.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace locr::tokenizer {
namespace {

using nlohmann::json;

std::string fixture_path(const std::string& name) { return std::string(LOCR_FIXTURES_DIR) + "/" + name; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string show(const std::string& s) {
  std::string d = json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  return d.size() > 160 ? d.substr(0, 160) + "...\" (" + std::to_string(s.size()) + " bytes)" : d;
}

const std::vector<json>& goldens() {
  static const std::vector<json> rows = [] {
    std::vector<json> out;
    std::istringstream in(test::read_gzip(fixture_path("tokenizer/qwen35_encode_goldens.jsonl.gz")));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(json::parse(line));
    return out;
  }();
  return rows;
}

// {"tokenizers": ..., "transformers": ..., "tokenizer_class": ..., "patch": {normalizer, pre_tokenizer, decoder}}
const json& reference() {
  static const json j = json::parse(read_text(fixture_path("tokenizer/qwen35_tokenizer_patch.json")));
  return j;
}

std::string reference_pattern() {
  return reference()["patch"]["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>();
}

TokenizerOptions qwen35_options() {
  TokenizerOptions o;
  o.pre_tokenizer = PreTokenizerOverride::kQwen35;
  return o;
}

// The hub's situation: tokenizer.json says Qwen2, the override says Qwen3.5.
const Tokenizer& qwen35_forced() {
  static const auto t = Tokenizer::from_json(test::qwen_tokenizer_json(), qwen35_options());
  return *t;
}

std::vector<std::string> split(SplitRegex re, const std::string& text) {
  std::vector<size_t> ends;
  split_with_regex(re, text, &ends);
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e : ends) out.push_back(text.substr(b, e - b)), b = e;
  return out;
}

// Encodes every golden text with `t` and compares with the reference ids (and decodes them back).
void expect_goldens(const Tokenizer& t, const char* what) {
  size_t checked = 0, failed = 0;
  for (const json& row : goldens()) {
    const std::string text = row["text"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = t.encode(text);
    if (got != want && ++failed <= 10)
      ADD_FAILURE() << what << ": encode " << show(text) << "\n got  " << json(got).dump() << "\n want " << json(want).dump();
    if (t.decode(want) != row["decoded"].get<std::string>() && ++failed <= 10)
      ADD_FAILURE() << what << ": decode of " << show(text) << " gave " << show(t.decode(want));
    ++checked;
  }
  EXPECT_EQ(failed, 0u);
  EXPECT_GE(checked, 1000u);
  std::printf("[ tokenizer ] %s: %zu Qwen3.5 golden texts, %zu mismatches\n", what, checked, failed);
}

TEST(TokenizerQwen35, ReferenceIsTransformersQwen35Tokenizer) {
  EXPECT_EQ(reference()["tokenizer_class"], "Qwen3_5Tokenizer");
  EXPECT_EQ(reference()["patch"]["normalizer"]["type"], "NFC");
  // The pattern transformers uses is the one locr's matcher stands for, and recognised as such.
  EXPECT_EQ(split_regex_pattern(SplitRegex::kQwen35), reference_pattern());
  EXPECT_EQ(split_regex_from_pattern(reference_pattern()), SplitRegex::kQwen35);
  EXPECT_NE(split_regex_from_pattern(reference_pattern()), split_regex_from_pattern(split_regex_pattern(SplitRegex::kQwen2)));
}

TEST(TokenizerQwen35, OverrideOnQwen2TokenizerJsonMatchesTransformers) {
  expect_goldens(qwen35_forced(), "override");
  EXPECT_EQ(qwen35_forced().vocab_size(), 151669);
  EXPECT_EQ(qwen35_forced().token_to_id("<|im_end|>"), 151645);
  EXPECT_TRUE(qwen35_forced().is_special(151645));
}

TEST(TokenizerQwen35, LiteralPatternInTokenizerJsonMatchesTransformers) {
  json j = json::parse(test::qwen_tokenizer_json());
  for (const auto& [key, value] : reference()["patch"].items()) j[key] = value;
  const auto t = Tokenizer::from_json(j.dump());
  expect_goldens(*t, "tokenizer.json with the Qwen3.5 regex");
}

TEST(TokenizerQwen35, OverrideOnGgufMatchesTransformers) {
  // The same vocabulary as written by llama.cpp's converter (tokenizer.ggml.pre "qwen2").
  const std::string bytes = test::read_gzip(fixture_path("gguf/tokenizer_qwen2.gguf.gz"));
  const auto f = io::GgufFile::parse(bytes, "tokenizer_qwen2.gguf");
  const auto t = Tokenizer::from_gguf(*f, qwen35_options());
  size_t failed = 0;
  for (const json& row : goldens()) {
    const std::string text = row["text"];
    const auto got = t->encode(text);
    if (got != row["ids"].get<std::vector<int32_t>>() && ++failed <= 10) ADD_FAILURE() << "encode " << show(text);
  }
  EXPECT_EQ(failed, 0u);
}

// The Qwen2 tokenizer (no override) gives the ids the library gives with Qwen2's regex, and those
// differ from the Qwen3.5 ids on Thai and Arabic; the pieces differ wherever a combining mark
// follows something else than a letter.
TEST(TokenizerQwen35, Qwen2RegexDiffersWhereItShould) {
  const Tokenizer& qwen2 = test::qwen_tokenizer();
  size_t failed = 0, ids_differ = 0, pieces_differ = 0;
  for (const json& row : goldens()) {
    const std::string text = row["text"];
    const auto want = row["qwen2_ids"].get<std::vector<int32_t>>();
    if (qwen2.encode(text) != want && ++failed <= 10) ADD_FAILURE() << "Qwen2 encode " << show(text);
    ids_differ += want != row["ids"].get<std::vector<int32_t>>();
    pieces_differ += row.contains("qwen2_pieces");
  }
  EXPECT_EQ(failed, 0u);
  EXPECT_GE(ids_differ, 50u);
  EXPECT_GE(pieces_differ, 500u);
  std::printf("[ tokenizer ] the Qwen2 regex splits %zu Qwen3.5 golden texts differently, %zu get other ids\n",
              pieces_differ, ids_differ);
  // Spot checks: whole words with their marks versus Qwen2's cuts before every mark.
  const std::string thai = "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5";  // สวัสดี
  EXPECT_NE(qwen2.encode(thai), qwen35_forced().encode(thai));
  EXPECT_EQ(split(SplitRegex::kQwen35, thai), std::vector<std::string>{thai});
  EXPECT_EQ(split(SplitRegex::kQwen2, thai).size(), 3u);  // สว ัสด ี
}

TEST(TokenizerQwen35, MatcherCutsWhereTheLibrarySplitDoes) {
  size_t failed = 0;
  for (const json& row : goldens()) {
    const std::string text = row["text"];
    const auto want = row["pieces"].get<std::vector<std::string>>();
    const auto want_qwen2 = row.contains("qwen2_pieces") ? row["qwen2_pieces"].get<std::vector<std::string>>() : want;
    if (split(SplitRegex::kQwen35, text) != want && ++failed <= 10)
      ADD_FAILURE() << "Qwen3.5 pieces of " << show(text) << ": " << json(split(SplitRegex::kQwen35, text)).dump()
                    << "\n want " << json(want).dump();
    if (split(SplitRegex::kQwen2, text) != want_qwen2 && ++failed <= 10)
      ADD_FAILURE() << "Qwen2 pieces of " << show(text) << ": " << json(split(SplitRegex::kQwen2, text)).dump();
  }
  EXPECT_EQ(failed, 0u);
}

TEST(TokenizerQwen35, MatcherPieces) {
  using V = std::vector<std::string>;
  const std::string acute = "\xCC\x81";  // U+0301
  EXPECT_EQ(split(SplitRegex::kQwen35, "Hello  world"), (V{"Hello", " ", " world"}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "I'M don'T 123"), (V{"I", "'M", " don", "'T", " ", "1", "2", "3"}));
  // A mark continues a word, starts one, or follows a space / symbol taken as the optional prefix.
  EXPECT_EQ(split(SplitRegex::kQwen35, "e" + acute + "te"), (V{"e" + acute + "te"}));
  EXPECT_EQ(split(SplitRegex::kQwen2, "e" + acute + "te"), (V{"e", acute + "te"}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "1" + acute + "2"), (V{"1", acute, "2"}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "x " + acute + "y"), (V{"x", " " + acute + "y"}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "!!" + acute + "!!"), (V{"!!", acute, "!!"}));
  EXPECT_EQ(split(SplitRegex::kQwen2, "!!" + acute + "!!"), (V{"!!" + acute + "!!"}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "\n" + acute), (V{"\n", acute}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "'s" + acute), (V{"'s", acute}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "'" + acute + "s"), (V{"'" + acute + "s"}));
  EXPECT_EQ(split(SplitRegex::kQwen35, "a\r\n\r\n b"), (V{"a", "\r\n\r\n", " b"}));
}

TEST(TokenizerQwen35, OverrideIgnoresWhatTheFileSays) {
  // transformers builds the pipeline and the BPE options in code; so does the override, without
  // even looking at components locr would otherwise reject.
  json j = json::parse(test::qwen_tokenizer_json());
  j["normalizer"] = {{"type", "Lowercase"}};
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  j["decoder"] = {{"type", "WordPiece"}};
  j["model"]["ignore_merges"] = true;
  j["model"]["byte_fallback"] = true;
  j["model"]["unk_token"] = "<|endoftext|>";
  EXPECT_THROW(Tokenizer::from_json(j.dump()), Error);
  const auto t = Tokenizer::from_json(j.dump(), qwen35_options());
  size_t n = 0;
  for (const json& row : goldens()) {
    if (n++ % 7) continue;
    EXPECT_EQ(t->encode(row["text"].get<std::string>()), row["ids"].get<std::vector<int32_t>>()) << show(row["text"]);
  }
  // NFC is applied: a decomposed accent gives the composed word's ids.
  EXPECT_EQ(t->encode("Cafe\xCC\x81"), t->encode("Caf\xC3\xA9"));
  // Still a malformed vocabulary is an error.
  j["model"].erase("vocab");
  EXPECT_THROW(Tokenizer::from_json(j.dump(), qwen35_options()), Error);
}

TEST(TokenizerQwen35, OptionsForModelType) {
  EXPECT_EQ(TokenizerOptions::for_model_type("qwen3_5").pre_tokenizer, PreTokenizerOverride::kQwen35);
  EXPECT_EQ(TokenizerOptions::for_model_type("qwen3_5_moe").pre_tokenizer, PreTokenizerOverride::kQwen35);
  EXPECT_EQ(TokenizerOptions::for_model_type("qwen3_5_moe_text").pre_tokenizer, PreTokenizerOverride::kQwen35);
  for (const char* other : {"", "qwen3", "qwen2", "qwen3_vl", "lighton_ocr", "mistral3", "qwen3_5_text", "QWEN3_5"})
    EXPECT_EQ(TokenizerOptions::for_model_type(other).pre_tokenizer, PreTokenizerOverride::kNone) << other;
  EXPECT_EQ(TokenizerOptions{}.pre_tokenizer, PreTokenizerOverride::kNone);
}

TEST(TokenizerQwen35, LongInputsStayLinear) {
  const Tokenizer& t = qwen35_forced();
  std::string marks;
  for (int i = 0; i < 50000; ++i) marks += "\xCC\x81";  // one 100 kB run of U+0301
  EXPECT_FALSE(t.encode(marks).empty());
  EXPECT_FALSE(t.encode(std::string(200000, ' ') + "x").empty());
  std::string thai;
  for (int i = 0; i < 10000; ++i) thai += "\xE0\xB8\xAA\xE0\xB8\xB1";  // สั repeated: one 60 kB word
  EXPECT_EQ(t.decode(t.encode(thai)), thai);
}

}  // namespace
}  // namespace locr::tokenizer
