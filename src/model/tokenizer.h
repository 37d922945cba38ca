// Byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json` (Qwen2 style), or from the
// tokenizer.ggml.* metadata llama.cpp's converter writes into a GGUF file (tokenizer_gguf.h):
// NFC normalisation, Qwen2's pre-tokenizer regex, byte-level alphabet, ranked merges,
// added/special tokens matched before BPE. Mirrors the Python `tokenizers` library: ids are
// checked against it on the real Qwen vocabulary (tests/unit/tokenizer_test.cc). Also accepts
// GPT-2 style ByteLevel(use_regex=true) pre-tokenizers; other tokenizer types are rejected.
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

namespace locr::model {

class Tokenizer {
 public:
  // Parses tokenizer.json text. Throws locr::Error with a clear message on malformed input.
  static std::unique_ptr<Tokenizer> from_json(const std::string& tokenizer_json);
  static std::unique_ptr<Tokenizer> from_file(const std::string& path);
  // Builds the same tokenizer from a GGUF file's tokenizer.ggml.* metadata (model "gpt2", pre
  // "qwen2"); see tokenizer_gguf.h for what is read and how it maps. Throws locr::Error naming
  // the file and key when the metadata is missing, malformed or of a kind locr does not support.
  static std::unique_ptr<Tokenizer> from_gguf(const io::GgufFile& gguf);
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

}  // namespace locr::model
