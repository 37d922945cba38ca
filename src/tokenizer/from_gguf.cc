// Tokenizer and chat template from GGUF metadata; see from_gguf.h for the mapping.
#include "tokenizer/from_gguf.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "io/gguf.h"
#include "tokenizer/parts.h"
#include "tokenizer/unicode.h"

namespace locr::tokenizer {

namespace {

using nlohmann::json;

// gguf-py's TokenType (llama.h llama_token_type).
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// Ids beyond this are rejected rather than sizing tables by them (as tokenizer.json's kMaxId).
constexpr size_t kMaxTokens = size_t{1} << 24;

const char* value_type_name(io::GgufValueType t) {
  switch (t) {
    case io::GgufValueType::kU8: return "uint8";
    case io::GgufValueType::kI8: return "int8";
    case io::GgufValueType::kU16: return "uint16";
    case io::GgufValueType::kI16: return "int16";
    case io::GgufValueType::kU32: return "uint32";
    case io::GgufValueType::kI32: return "int32";
    case io::GgufValueType::kF32: return "float32";
    case io::GgufValueType::kBool: return "bool";
    case io::GgufValueType::kString: return "string";
    case io::GgufValueType::kArray: return "array";
    case io::GgufValueType::kU64: return "uint64";
    case io::GgufValueType::kI64: return "int64";
    case io::GgufValueType::kF64: return "float64";
  }
  return "unknown";
}

// "array of string", "uint32", ...
std::string type_name(const io::GgufFile& f, const std::string& key) {
  const io::GgufValueType t = f.types().at(key);
  if (t != io::GgufValueType::kArray) return value_type_name(t);
  auto it = f.array_types().find(key);
  return it == f.array_types().end() ? "empty array" : str("array of ", value_type_name(it->second));
}

bool is_integer_type(io::GgufValueType t) {
  switch (t) {
    case io::GgufValueType::kU8: case io::GgufValueType::kI8: case io::GgufValueType::kU16:
    case io::GgufValueType::kI16: case io::GgufValueType::kU32: case io::GgufValueType::kI32:
    case io::GgufValueType::kU64: case io::GgufValueType::kI64: return true;
    default: return false;
  }
}

const std::string* get_string(const io::GgufFile& f, const std::string& key) {
  if (!f.has(key)) return nullptr;
  if (f.types().at(key) != io::GgufValueType::kString)
    fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " must be a string, but it is ", type_name(f, key));
  return &f.metadata().at(key).get_ref<const std::string&>();
}

const std::string& require_string(const io::GgufFile& f, const std::string& key, const char* why) {
  const std::string* s = get_string(f, key);
  if (s == nullptr) fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " is missing (", why, ")");
  return *s;
}

// The array under `key` after checking its element type (an empty array has none to check).
const json& require_array(const io::GgufFile& f, const std::string& key, bool of_strings, const char* why) {
  if (!f.has(key)) fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " is missing (", why, ")");
  const io::GgufValueType t = f.types().at(key);
  bool ok = t == io::GgufValueType::kArray;
  if (ok) {
    auto et = f.array_types().find(key);
    if (et != f.array_types().end())
      ok = of_strings ? et->second == io::GgufValueType::kString : is_integer_type(et->second);
  }
  if (!ok)
    fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " must be an array of ", of_strings ? "strings" : "integers",
         ", but it is ", type_name(f, key));
  return f.metadata().at(key);
}

std::optional<int32_t> get_id(const io::GgufFile& f, const std::string& key, size_t n_tokens) {
  if (!f.has(key)) return std::nullopt;
  if (!is_integer_type(f.types().at(key)))
    fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " must be an integer token id, but it is ", type_name(f, key));
  const json& v = f.metadata().at(key);
  const bool negative = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
  if (negative || v.get<uint64_t>() >= std::min<uint64_t>(n_tokens, kMaxTokens))
    fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " = ", v.dump(), " names no token (tokenizer.ggml.tokens has ",
         n_tokens == SIZE_MAX ? std::string("none") : std::to_string(n_tokens), ")");
  return static_cast<int32_t>(v.get<int64_t>());
}

bool get_bool(const io::GgufFile& f, const std::string& key) {
  if (!f.has(key)) return false;
  if (f.types().at(key) != io::GgufValueType::kBool)
    fail(ErrorKind::kInvalidArgument, f.name(), ": ", key, " must be a bool, but it is ", type_name(f, key));
  return f.metadata().at(key).get<bool>();
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const io::GgufFile& f, const TokenizerOptions& options) {
  const std::string& name = f.name();
  const std::string& model = require_string(f, "tokenizer.ggml.model", "the file has no tokenizer");
  if (model != "gpt2")
    fail(ErrorKind::kUnsupported, name, ": tokenizer.ggml.model \"", model,
         "\" is not supported (locr reads byte-level BPE tokenizers, \"gpt2\", as Qwen3 / LightOnOCR use)");
  // An override (TokenizerOptions) decides the pre-tokenizer whatever the file says.
  if (!overrides_pipeline(options)) {
    const std::string& pre = require_string(f, "tokenizer.ggml.pre", "the pre-tokenizer cannot be chosen without it");
    if (pre != "qwen2")
      fail(ErrorKind::kUnsupported, name, ": tokenizer.ggml.pre \"", pre,
           "\" is not supported (supported: \"qwen2\", the Qwen2 / Qwen3 / LightOnOCR pre-tokenizer)");
  }
  if (get_bool(f, "tokenizer.ggml.normalizer.lowercase") || get_bool(f, "tokenizer.ggml.normalizer.strip_accents"))
    fail(ErrorKind::kUnsupported, name, ": lowercasing / accent-stripping normalizers are not supported");

  const json& tokens = require_array(f, "tokenizer.ggml.tokens", true, "the vocabulary");
  const json& types = require_array(f, "tokenizer.ggml.token_type", false, "which tokens are special");
  const json& merges = require_array(f, "tokenizer.ggml.merges", true, "a BPE tokenizer needs its merges");
  if (tokens.empty()) fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.tokens is empty");
  if (tokens.size() > kMaxTokens)
    fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.tokens has ", tokens.size(), " tokens, more than ", kMaxTokens);
  if (types.size() != tokens.size())
    fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.token_type has ", types.size(),
         " entries but tokenizer.ggml.tokens has ", tokens.size());

  TokenizerParts parts;
  TokenMap vocab;
  vocab.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t type = types[i].get<int64_t>();
    const std::string& token = tokens[i].get_ref<const std::string&>();
    const auto id = static_cast<int32_t>(i);
    if (type == kUnused) continue;
    if (unicode::find_invalid_utf8(token) != std::string::npos)
      fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.tokens[", i, "] is not valid UTF-8");
    if (type == kNormal || type == kControl || type == kUserDefined) {
      // Added tokens stay in the BPE vocabulary too, as llama.cpp's token_to_id has every token:
      // a merge may produce one (tokenizer.json lists such tokens in both places).
      vocab[token] = id;  // a repeated string names its last id, as in llama.cpp
    } else if (type == kUnknown || type == kByte) {
      fail(ErrorKind::kUnsupported, name, ": tokenizer.ggml.token_type[", i, "] is ",
           type == kUnknown ? "UNKNOWN (2)" : "BYTE (6)", ", a SentencePiece token type; byte-level BPE has none");
    } else {
      fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.token_type[", i, "] = ", type,
           " is not a token type (1 normal, 3 control, 4 user-defined, 5 unused)");
    }
    if (type == kControl || type == kUserDefined) {
      if (token.empty()) fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.tokens[", i, "] is an empty added token");
      AddedToken added;
      added.id = id;
      added.content = token;
      added.normalized = false;
      added.special = type == kControl;
      parts.added.push_back(std::move(added));
    }
  }

  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i].get_ref<const std::string&>();
    const size_t sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() || m.find(' ', sp + 1) != std::string::npos)
      fail(ErrorKind::kInvalidArgument, name, ": tokenizer.ggml.merges[", i, "] ",
           json(m).dump(-1, ' ', false, json::error_handler_t::replace), " is not of the form \"left right\"");
    pairs.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }
  parts.bpe = std::make_unique<BpeModel>(std::move(vocab), pairs, BpeOptions{}, name + ": tokenizer.ggml");
  parts.nfc = true;  // Qwen2's tokenizer.json normalizer
  parts.steps = qwen2_pre_tokenizer();
  apply_pipeline_override(options, &parts);
  return make_bpe_tokenizer(std::move(parts));
}

GgufTokenizerMetadata read_gguf_tokenizer_metadata(const io::GgufFile& f) {
  GgufTokenizerMetadata m;
  size_t n_tokens = SIZE_MAX;  // ids are checked against the vocabulary when there is one
  if (f.has("tokenizer.ggml.tokens"))
    n_tokens = require_array(f, "tokenizer.ggml.tokens", true, "the vocabulary").size();
  if (const std::string* t = get_string(f, "tokenizer.chat_template")) m.chat_template = *t;
  m.bos_id = get_id(f, "tokenizer.ggml.bos_token_id", n_tokens);
  m.eos_id = get_id(f, "tokenizer.ggml.eos_token_id", n_tokens);
  m.pad_id = get_id(f, "tokenizer.ggml.padding_token_id", n_tokens);
  m.add_bos = get_bool(f, "tokenizer.ggml.add_bos_token");
  m.add_eos = get_bool(f, "tokenizer.ggml.add_eos_token");
  return m;
}

}  // namespace locr::tokenizer
