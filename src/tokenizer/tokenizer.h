// Byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json` (Qwen2 style), or from the
// tokenizer.ggml.* metadata llama.cpp's converter writes into a GGUF file (from_gguf.h):
// NFC normalisation, Qwen2's pre-tokenizer regex, byte-level alphabet, ranked merges,
// added/special tokens matched before BPE. Mirrors the Python `tokenizers` library: ids are
// checked against it on the real Qwen vocabulary (tests/unit/tokenizer_test.cc). Also accepts
// GPT-2 style ByteLevel(use_regex=true) pre-tokenizers and the Qwen3.5 Split regex; other
// tokenizer types are rejected. TokenizerOptions can replace what the file says the way
// transformers does for some model types (Qwen3.5: tests/unit/tokenizer_qwen35_test.cc).
// All methods are const and safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace locr::io {
class GgufFile;
}

namespace locr::tokenizer {

// Replaces the text pipeline a tokenizer file declares, as transformers does for models whose
// tokenizer class rebuilds it in code.
enum class PreTokenizerOverride {
  kNone,  // use what the file says
  // transformers' Qwen3_5Tokenizer (models/qwen3_5/tokenization_qwen3_5.py), which AutoTokenizer
  // picks for config.json model_type "qwen3_5", "qwen3_5_moe", "qwen3_5_moe_text" whatever
  // tokenizer_class the hub names, and which keeps only the vocabulary, merges and added tokens of
  // tokenizer.json. Its pipeline, used here whatever the file says:
  //   normalizer    NFC
  //   pre_tokenizer Sequence[Split(Qwen3.5 regex, Isolated), ByteLevel(add_prefix_space=false,
  //                 use_regex=false)], the regex being SplitRegex::kQwen35 (pretokenizer.h):
  //                 letter runs [\p{L}\p{M}]+, so combining marks (Thai, Arabic harakat, Devanagari
  //                 signs, accents in NFD) stay inside words where Qwen2's regex cuts at every mark
  //   decoder       ByteLevel
  //   model         BPE with no unk token, no byte fallback, no dropout, ignore_merges=false,
  //                 fuse_unk=false (the file's values for these are ignored, not checked)
  // The hub's Qwen3.5 tokenizer.json declares Qwen2's regex; reading it literally cuts Thai,
  // Arabic, Devanagari and NFD text elsewhere and gives other ids. (transformers also reads
  // add_prefix_space from tokenizer_config.json, default false; locr supports only false.)
  kQwen35,
};

struct TokenizerOptions {
  PreTokenizerOverride pre_tokenizer = PreTokenizerOverride::kNone;

  // The options transformers implies for a config.json model_type: kQwen35 for "qwen3_5",
  // "qwen3_5_moe" and "qwen3_5_moe_text" (the types whose hub tokenizer_class transformers
  // overrides with Qwen3_5Tokenizer), kNone for anything else. ("qwen3_5_text" is absent on
  // purpose: there transformers trusts a hub tokenizer_class such as Qwen2Tokenizer.)
  static TokenizerOptions for_model_type(std::string_view model_type);
};

class Tokenizer {
 public:
  // Parses tokenizer.json text. Throws locr::Error with a clear message on malformed input.
  // With an override (see TokenizerOptions) the file's normalizer, pre_tokenizer, decoder and
  // BPE options are not read at all.
  static std::unique_ptr<Tokenizer> from_json(const std::string& tokenizer_json, const TokenizerOptions& options = {});
  static std::unique_ptr<Tokenizer> from_file(const std::string& path, const TokenizerOptions& options = {});
  // Builds the same tokenizer from a GGUF file's tokenizer.ggml.* metadata (model "gpt2", pre
  // "qwen2"); see from_gguf.h for what is read and how it maps. Throws locr::Error naming
  // the file and key when the metadata is missing, malformed or of a kind locr does not support.
  // With options.pre_tokenizer kQwen35, tokenizer.ggml.pre is not checked and the Qwen3.5
  // pipeline above is used.
  static std::unique_ptr<Tokenizer> from_gguf(const io::GgufFile& gguf, const TokenizerOptions& options = {});
  virtual ~Tokenizer() = default;

  // Text -> ids. Added/special tokens in the text are recognised (as `tokenizers` does with
  // add_special_tokens=False; Qwen adds no BOS). Throws locr::Error (kInvalidArgument) if the
  // text is not valid UTF-8.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Ids -> UTF-8 text. skip_special drops special added tokens. Invalid UTF-8 from partial byte
  // sequences is replaced with U+FFFD, as `tokenizers` does. An id that names no token (the
  // padding rows of the embedding, a hole in the id space, anything out of range) is an empty
  // piece, as `tokenizers` skips ids it has no token for; callers that must refuse ids outside
  // the model's vocabulary check the range themselves.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;
  // Raw bytes of one token (byte-level decoded, special tokens as their content). Used by
  // incremental detokenisation, which must hold back incomplete UTF-8 itself. Empty for an id
  // that names no token.
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // Whether `id` names a token. A model's embedding table is often padded past the tokenizer
  // (151,936 rows for 151,669 ids); generated ids in the padding decode to nothing.
  virtual bool has_id(int32_t id) const = 0;
  // Id of a token string (regular or added), or -1.
  virtual int32_t token_to_id(std::string_view token) const = 0;
  // Largest id + 1 over vocabulary and added tokens.
  virtual int32_t vocab_size() const = 0;
};

}  // namespace locr::tokenizer
