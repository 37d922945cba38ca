// The tokenizer built from GGUF metadata (tokenizer/from_gguf.h), on files written by llama.cpp's
// own converter (tools/reference/make_gguf_tokenizer_fixtures.py, convert_hf_to_gguf.py
// --vocab-only): tiny_a's vocabulary and the real Qwen vocabulary. It must encode and decode as
// the tokenizer.json of the same model does (the goldens of tests/fixtures/tokenizer/ come from
// the `tokenizers` library), apart from skip_special on the six tokens the converter marks CONTROL
// although transformers does not call them special. Bad metadata is a clear error.
#include <gtest/gtest.h>
#include "../common/fixtures.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "model/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/from_gguf.h"

namespace locr::tokenizer {
namespace {

using io::GgufFile;
using io::GgufValueType;
using nlohmann::json;

std::string fixtures() { return std::string(LOCR_FIXTURES_DIR); }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> rows;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

const GgufFile& tiny_a_gguf() {
  static const std::shared_ptr<GgufFile> f = GgufFile::open(fixtures() + "/gguf/tokenizer_tiny_a.gguf");
  return *f;
}

const GgufFile& qwen_gguf() {
  static const std::string bytes = test::read_gzip(fixtures() + "/gguf/tokenizer_qwen2.gguf.gz");
  static const std::shared_ptr<GgufFile> f = GgufFile::parse(bytes, "tokenizer_qwen2.gguf");
  return *f;
}

const Tokenizer& qwen_from_gguf() {
  static const std::unique_ptr<Tokenizer> t = Tokenizer::from_gguf(qwen_gguf());
  return *t;
}

// The added tokens Qwen's tokenizer.json calls not special but the converter marks CONTROL (they
// look like "<|...|>"), by content.
const std::vector<std::string> kControlNotSpecial = {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                                                     "<|fim_pad|>",    "<|repo_name|>",  "<|file_sep|>"};

std::string erase_all(std::string s, const std::vector<std::string>& words) {
  for (const std::string& w : words)
    for (size_t at; (at = s.find(w)) != std::string::npos;) s.erase(at, w.size());
  return s;
}

// Texts for comparing two tokenizers of the same vocabulary: the golden strings plus prompts.
std::vector<std::string> sample_texts() {
  std::vector<std::string> texts = {
      "<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n",
      "<|image_pad|><|image_pad|><|image_pad|>T\n<|im_end|>",
      "<think>\nplan</think>\n\n<tool_call>{\"a\": 1}</tool_call><|endoftext|>",
      "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
      "<|im_end|\n<|im_end|><|im_end|>>",  // a near miss, then two tokens and a stray '>'
      "Caf\xC3\xA9 vs Cafe\xCC\x81: NFC applies outside added tokens",
  };
  for (const json& row : read_jsonl(fixtures() + "/tokenizer/encode_goldens.jsonl")) texts.push_back(row["text"]);
  return texts;
}

// ---------------------------------------------------------------- fixtures from llama.cpp

TEST(TokenizerGguf, ConverterOutputIsWhatTheMappingExpects) {
  const GgufFile& f = tiny_a_gguf();
  EXPECT_EQ(f.metadata()["tokenizer.ggml.model"], "gpt2");
  EXPECT_EQ(f.metadata()["tokenizer.ggml.pre"], "qwen2");
  ASSERT_EQ(f.metadata()["tokenizer.ggml.tokens"].size(), 768u);  // padded to config's vocab_size
  EXPECT_EQ(f.metadata()["tokenizer.ggml.tokens"][726], "[PAD726]");
  EXPECT_EQ(f.metadata()["tokenizer.ggml.token_type"][726], 5);  // UNUSED
  EXPECT_EQ(f.metadata()["tokenizer.ggml.token_type"][712], 3);  // <|image_pad|>: CONTROL
  EXPECT_EQ(f.metadata()["tokenizer.ggml.token_type"][714], 4);  // <tool_call>: USER_DEFINED
  EXPECT_EQ(f.metadata()["tokenizer.ggml.token_type"][716], 3);  // <|fim_prefix|>: CONTROL, though special=false
}

TEST(TokenizerGguf, TinyAEqualsItsTokenizerJson) {
  const auto gguf = Tokenizer::from_gguf(tiny_a_gguf());
  const auto hf = Tokenizer::from_file(fixtures() + "/models/tiny_a/tokenizer.json");
  ASSERT_EQ(gguf->vocab_size(), hf->vocab_size());
  EXPECT_EQ(gguf->vocab_size(), 726);
  const json& tokens = tiny_a_gguf().metadata()["tokenizer.ggml.tokens"];
  for (int32_t id = -1; id < 770; ++id) {
    EXPECT_EQ(gguf->has_id(id), hf->has_id(id)) << id;
    EXPECT_EQ(gguf->token_bytes(id), hf->token_bytes(id)) << id;
    const bool control_not_special = id >= 716 && id <= 721;
    EXPECT_EQ(gguf->is_special(id), hf->is_special(id) || control_not_special) << id;
    if (id >= 0 && id < 726) {
      EXPECT_EQ(gguf->token_to_id(tokens[id].get<std::string>()), id);
    }
  }
  EXPECT_EQ(gguf->token_to_id("[PAD726]"), -1);  // UNUSED padding names no token
  EXPECT_EQ(hf->token_to_id("[PAD726]"), -1);
  size_t checked = 0;
  for (const std::string& text : sample_texts()) {
    const auto ids = hf->encode(text);
    ASSERT_EQ(gguf->encode(text), ids) << text;
    EXPECT_EQ(gguf->decode(ids), hf->decode(ids)) << text;
    ++checked;
  }
  EXPECT_GE(checked, 250u);
  EXPECT_EQ(gguf->encode("<|image_pad|>"), std::vector<int32_t>{712});
  // The padded embedding rows 726..767 decode to nothing, as with tokenizer.json.
  EXPECT_EQ(gguf->decode({726, 702, 767}), "<|im_end|>");
}

TEST(TokenizerGguf, TinyASkipSpecialFollowsTheTokenTypes) {
  const auto gguf = Tokenizer::from_gguf(tiny_a_gguf());
  const auto hf = Tokenizer::from_file(fixtures() + "/models/tiny_a/tokenizer.json");
  const std::string text = "<|im_start|>a<|image_pad|><tool_call>b</tool_call><|fim_prefix|>c<think><|im_end|>";
  const auto ids = gguf->encode(text);
  ASSERT_EQ(ids, hf->encode(text));
  EXPECT_EQ(hf->decode(ids, true), "a<tool_call>b</tool_call><|fim_prefix|>c<think>");
  // CONTROL tokens are dropped, USER_DEFINED ones kept; <|fim_prefix|> is CONTROL in the GGUF.
  EXPECT_EQ(gguf->decode(ids, true), "a<tool_call>b</tool_call>c<think>");
  EXPECT_EQ(gguf->decode(ids, false), text);
}

TEST(TokenizerGguf, QwenVocabularyKnownIds) {
  const Tokenizer& t = qwen_from_gguf();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.encode("system"), std::vector<int32_t>{8948});
  EXPECT_EQ(t.encode("assistant"), std::vector<int32_t>{77091});
  EXPECT_EQ(t.token_to_id("<|image_pad|>"), 151655);
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_FALSE(t.is_special(151667));  // <think>: USER_DEFINED
  EXPECT_TRUE(t.is_special(151659));   // <|fim_prefix|>: CONTROL in the GGUF (not special in tokenizer.json)
  EXPECT_FALSE(t.has_id(151669));
  EXPECT_EQ(t.token_bytes(151935), "");
  const std::vector<int32_t> prompt = {151644, 8948, 151645, 198, 151644, 872, 198, 151655, 151645, 198, 151644, 77091, 198};
  EXPECT_EQ(t.encode("<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n"),
            prompt);
}

TEST(TokenizerGguf, QwenVocabularyEncodeGoldens) {
  const Tokenizer& t = qwen_from_gguf();
  const auto& reference = test::qwen_tokenizer();
  size_t checked = 0, failed = 0, control_rows = 0;
  for (const json& row : read_jsonl(fixtures() + "/tokenizer/encode_goldens.jsonl")) {
    const std::string text = row["text"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = t.encode(text);
    if (got != want && ++failed <= 20) ADD_FAILURE() << "encode " << json(text).dump() << " got " << json(got).dump();
    const std::string decoded = row["decoded"];
    std::string skipped = row.value("decoded_skip", decoded);
    if (erase_all(skipped, kControlNotSpecial) != skipped) {
      skipped = erase_all(skipped, kControlNotSpecial);
      ++control_rows;
    }
    if (t.decode(want) != decoded && ++failed <= 20) ADD_FAILURE() << "decode of " << json(text).dump();
    if (t.decode(want, true) != skipped && ++failed <= 20)
      ADD_FAILURE() << "decode(skip) of " << json(text).dump() << " gave " << json(t.decode(want, true)).dump();
    for (int32_t id : want)
      if (t.token_bytes(id) != reference.token_bytes(id) && ++failed <= 20) ADD_FAILURE() << "token_bytes(" << id << ")";
    ++checked;
  }
  EXPECT_EQ(failed, 0u);
  EXPECT_GE(checked, 250u);
  EXPECT_EQ(control_rows, 2u);  // the fim and repo_name/file_sep strings
}

TEST(TokenizerGguf, QwenVocabularyDecodeGoldens) {
  const Tokenizer& t = qwen_from_gguf();
  const auto rows = read_jsonl(fixtures() + "/tokenizer/decode_goldens.jsonl");
  ASSERT_GE(rows.size(), 20u);
  for (const json& row : rows) {
    const bool skip = row["skip_special"].get<bool>();
    std::string want = row["text"];
    if (skip) want = erase_all(want, kControlNotSpecial);
    EXPECT_EQ(t.decode(row["ids"].get<std::vector<int32_t>>(), skip), want) << row["name"];
  }
}

TEST(TokenizerGguf, ChatTemplateAndSpecialIds) {
  const GgufTokenizerMetadata m = read_gguf_tokenizer_metadata(tiny_a_gguf());
  const std::string jinja = read_text(fixtures() + "/models/tiny_a/chat_template.jinja");
  EXPECT_EQ(m.chat_template, jinja);
  const auto tpl = model::ChatTemplate::parse(m.chat_template);
  const json messages = json::parse(R"([{"role": "user", "content": [{"type": "image"}]}])");
  EXPECT_EQ(tpl->render(model::make_chat_template_context(messages, true)),
            "<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n");
  const json config = json::parse(read_text(fixtures() + "/models/tiny_a/config.json"));
  ASSERT_TRUE(m.eos_id && m.pad_id);
  EXPECT_EQ(*m.eos_id, config["eos_token_id"].get<int32_t>());
  EXPECT_EQ(*m.pad_id, config["pad_token_id"].get<int32_t>());
  EXPECT_EQ(*m.eos_id, 702);
  EXPECT_FALSE(m.bos_id.has_value());  // bos_token null in tokenizer_config.json
  EXPECT_FALSE(m.add_bos);
  EXPECT_FALSE(m.add_eos);

  const GgufTokenizerMetadata q = read_gguf_tokenizer_metadata(qwen_gguf());
  EXPECT_EQ(q.chat_template, jinja);
  EXPECT_EQ(q.eos_id, std::optional<int32_t>(151645));
  EXPECT_EQ(q.pad_id, std::optional<int32_t>(151643));
}

// ---------------------------------------------------------------- bad metadata

// A GGUF file of metadata only, written value by value.
class Builder {
 public:
  Builder& str(const std::string& key, const std::string& v) {
    head(key, GgufValueType::kString);
    put_str(v);
    return *this;
  }
  Builder& u32(const std::string& key, uint32_t v) {
    head(key, GgufValueType::kU32);
    put(v);
    return *this;
  }
  Builder& i32(const std::string& key, int32_t v) {
    head(key, GgufValueType::kI32);
    put(v);
    return *this;
  }
  Builder& strs(const std::string& key, const std::vector<std::string>& v) {
    head(key, GgufValueType::kArray);
    put(static_cast<uint32_t>(GgufValueType::kString));
    put(static_cast<uint64_t>(v.size()));
    for (const auto& s : v) put_str(s);
    return *this;
  }
  Builder& i32s(const std::string& key, const std::vector<int32_t>& v) {
    head(key, GgufValueType::kArray);
    put(static_cast<uint32_t>(GgufValueType::kI32));
    put(static_cast<uint64_t>(v.size()));
    for (int32_t x : v) put(x);
    return *this;
  }
  std::string bytes() const {
    std::string out = "GGUF";
    auto add = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    add(uint32_t{3});
    add(uint64_t{0});
    add(n_);
    return out + body_;
  }

 private:
  template <typename T>
  void put(T v) { body_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put_str(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    body_ += s;
  }
  void head(const std::string& key, GgufValueType t) {
    put_str(key);
    put(static_cast<uint32_t>(t));
    ++n_;
  }
  std::string body_;
  uint64_t n_ = 0;
};

// A well-formed tokenizer: "a", "b", "ab" by merge, <|im_end|> CONTROL, <x> USER_DEFINED, a pad.
struct Meta {
  std::string model = "gpt2", pre = "qwen2";
  std::vector<std::string> tokens = {"a", "b", "ab", "<|im_end|>", "<x>", "[PAD5]"};
  std::vector<int32_t> types = {1, 1, 1, 3, 4, 5};
  std::vector<std::string> merges = {"a b"};
  Builder build(bool with_tokens = true, bool with_types = true, bool with_merges = true) const {
    Builder b;
    b.str("tokenizer.ggml.model", model).str("tokenizer.ggml.pre", pre);
    if (with_tokens) b.strs("tokenizer.ggml.tokens", tokens);
    if (with_types) b.i32s("tokenizer.ggml.token_type", types);
    if (with_merges) b.strs("tokenizer.ggml.merges", merges);
    return b;
  }
};

std::unique_ptr<Tokenizer> load(const Builder& b) {
  const std::string bytes = b.bytes();
  return Tokenizer::from_gguf(*GgufFile::parse(bytes, "t.gguf"));
}

GgufTokenizerMetadata load_metadata(const Builder& b) {
  const std::string bytes = b.bytes();
  return read_gguf_tokenizer_metadata(*GgufFile::parse(bytes, "t.gguf"));
}

template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("t.gguf"), std::string::npos) << e.what();
  }
}

TEST(TokenizerGguf, HandBuiltMetadataWorks) {
  const auto t = load(Meta().build());
  EXPECT_EQ(t->encode("ab<|im_end|>ba<x>"), (std::vector<int32_t>{2, 3, 1, 0, 4}));
  EXPECT_EQ(t->decode({2, 3, 4, 5}, true), "ab<x>");
  EXPECT_EQ(t->vocab_size(), 5);
  EXPECT_FALSE(t->has_id(5));
}

TEST(TokenizerGguf, BadMetadataIsAClearError) {
  const ErrorKind bad = ErrorKind::kInvalidArgument, unsupported = ErrorKind::kUnsupported;
  expect_error([] { load(Meta().build(false)); }, bad, "tokenizer.ggml.tokens is missing");
  expect_error([] { load(Meta().build(true, false)); }, bad, "tokenizer.ggml.token_type is missing");
  expect_error([] { load(Meta().build(true, true, false)); }, bad, "tokenizer.ggml.merges is missing");
  expect_error([] { load(Meta().build(false).i32s("tokenizer.ggml.tokens", {1, 2})); }, bad,
               "tokenizer.ggml.tokens must be an array of strings, but it is array of int32");
  expect_error([] { load(Meta().build(false).str("tokenizer.ggml.tokens", "a")); }, bad,
               "tokenizer.ggml.tokens must be an array of strings, but it is string");
  expect_error([] { load(Meta().build(true, false).strs("tokenizer.ggml.token_type", {"1"})); }, bad,
               "tokenizer.ggml.token_type must be an array of integers");
  expect_error([] { load(Builder().str("general.architecture", "qwen3")); }, bad, "tokenizer.ggml.model is missing");
  expect_error([] { load(Builder().u32("tokenizer.ggml.model", 2)); }, bad, "tokenizer.ggml.model must be a string");
  {
    Meta m;
    m.model = "llama";
    expect_error([&] { load(m.build()); }, unsupported, "tokenizer.ggml.model \"llama\" is not supported");
  }
  {
    Meta m;
    m.pre = "llama-bpe";
    expect_error([&] { load(m.build()); }, unsupported, "tokenizer.ggml.pre \"llama-bpe\" is not supported");
  }
  expect_error([] { load(Builder().str("tokenizer.ggml.model", "gpt2")); }, bad, "tokenizer.ggml.pre is missing");
  {
    Meta m;
    m.merges = {"a c"};
    expect_error([&] { load(m.build()); }, bad, "tokenizer.ggml.merges[0] (\"a\", \"c\"): right token \"c\" is not in the vocabulary");
  }
  {
    Meta m;
    m.merges = {"a b", "ab"};
    expect_error([&] { load(m.build()); }, bad, "tokenizer.ggml.merges[1] \"ab\" is not of the form \"left right\"");
  }
  {
    Meta m;
    m.merges = {"a <|pad|>"};  // names a token that is only padding (UNUSED)
    m.tokens[5] = "<|pad|>";
    expect_error([&] { load(m.build()); }, bad, "\"<|pad|>\" is not in the vocabulary");
  }
  {
    Meta m;
    m.types.pop_back();
    expect_error([&] { load(m.build()); }, bad, "tokenizer.ggml.token_type has 5 entries but tokenizer.ggml.tokens has 6");
  }
  {
    Meta m;
    m.types[2] = 9;
    expect_error([&] { load(m.build()); }, bad, "tokenizer.ggml.token_type[2] = 9 is not a token type");
  }
  {
    Meta m;
    m.types[1] = 6;
    expect_error([&] { load(m.build()); }, unsupported, "tokenizer.ggml.token_type[1] is BYTE (6)");
  }
  {
    Meta m;
    m.tokens = {};
    m.types = {};
    m.merges = {};
    expect_error([&] { load(m.build()); }, bad, "tokenizer.ggml.tokens is empty");
  }
  {
    Meta m;
    m.tokens[4] = "\xFF<x>";
    expect_error([&] { load(m.build()); }, bad, "tokenizer.ggml.tokens[4] is not valid UTF-8");
  }
}

TEST(TokenizerGguf, BadSpecialIdsAreClearErrors) {
  const ErrorKind bad = ErrorKind::kInvalidArgument;
  expect_error([] { load_metadata(Meta().build().u32("tokenizer.ggml.eos_token_id", 6)); }, bad,
               "tokenizer.ggml.eos_token_id = 6 names no token (tokenizer.ggml.tokens has 6)");
  expect_error([] { load_metadata(Meta().build().str("tokenizer.ggml.padding_token_id", "3")); }, bad,
               "tokenizer.ggml.padding_token_id must be an integer token id, but it is string");
  expect_error([] { load_metadata(Meta().build().u32("tokenizer.chat_template", 1)); }, bad,
               "tokenizer.chat_template must be a string, but it is uint32");
  expect_error([] { load_metadata(Meta().build().u32("tokenizer.ggml.add_bos_token", 1)); }, bad,
               "tokenizer.ggml.add_bos_token must be a bool");
  expect_error([] { load_metadata(Builder().u32("tokenizer.ggml.eos_token_id", 1u << 30)); }, bad,
               "tokenizer.ggml.eos_token_id = 1073741824 names no token (tokenizer.ggml.tokens has none)");
  expect_error([] { load_metadata(Meta().build().i32("tokenizer.ggml.bos_token_id", -1)); }, bad,
               "tokenizer.ggml.bos_token_id = -1 names no token");
  // Without a vocabulary an id is taken as it is (a loader checks it against the embedding).
  EXPECT_EQ(load_metadata(Builder().u32("tokenizer.ggml.eos_token_id", 7)).eos_id, std::optional<int32_t>(7));
  const GgufTokenizerMetadata m = load_metadata(Meta().build().u32("tokenizer.ggml.eos_token_id", 3));
  EXPECT_EQ(m.eos_id, std::optional<int32_t>(3));
  EXPECT_FALSE(m.pad_id.has_value());
  EXPECT_TRUE(m.chat_template.empty());
}

}  // namespace
}  // namespace locr::tokenizer
