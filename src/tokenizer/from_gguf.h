// The tokenizer and chat template of a GGUF text model, from the metadata llama.cpp's
// convert_hf_to_gguf.py writes (gguf-py constants Keys.Tokenizer, TokenType):
//
//   tokenizer.ggml.model        "gpt2" (byte-level BPE); anything else is kUnsupported
//   tokenizer.ggml.pre          "qwen2" -> Qwen2's Split regex + ByteLevel, and NFC as Qwen2's
//                               tokenizer.json has (llama.cpp itself does not normalise); any other
//                               pre-tokenizer is kUnsupported, named -- unless TokenizerOptions
//                               overrides the pipeline (Qwen3.5), when this key is not read
//   tokenizer.ggml.tokens       [string], one per id (the converter pads to the model's vocab_size
//                               with "[PAD<i>]" tokens of type UNUSED)
//   tokenizer.ggml.token_type   [int32], per id: NORMAL 1 -> BPE vocabulary; CONTROL 3 -> added token,
//                               special; USER_DEFINED 4 -> added token, not special; UNUSED 5 -> no
//                               token (has_id false, decodes to nothing, as tokenizer.json's holes);
//                               UNKNOWN 2 and BYTE 6 (SentencePiece) are kUnsupported here
//   tokenizer.ggml.merges       ["left right"], in rank order
//
// The converter marks an added token CONTROL when transformers calls it special *or* it looks like
// "<|...|>": Qwen's <|fim_prefix|>, <|fim_middle|>, <|fim_suffix|>, <|fim_pad|>, <|repo_name|> and
// <|file_sep|> (special=false in tokenizer.json) become CONTROL, so decode(skip_special) drops
// them, as llama.cpp's detokenizer does without `special`; transformers keeps them. Every other id
// encodes and decodes as with tokenizer.json. Added tokens are matched on the raw text
// (normalized=false, no lstrip/rstrip/single_word), which is what Qwen's tokenizer.json says for
// all 26 of them and what llama.cpp assumes of CONTROL/USER_DEFINED tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tokenizer/tokenizer.h"

namespace locr::tokenizer {

// What a model loader needs next to the tokenizer.
struct GgufTokenizerMetadata {
  std::string chat_template;       // tokenizer.chat_template; empty when the file has none
  std::optional<int32_t> bos_id;   // tokenizer.ggml.bos_token_id
  std::optional<int32_t> eos_id;   // tokenizer.ggml.eos_token_id
  std::optional<int32_t> pad_id;   // tokenizer.ggml.padding_token_id
  bool add_bos = false;            // tokenizer.ggml.add_bos_token (absent: false)
  bool add_eos = false;            // tokenizer.ggml.add_eos_token (absent: false)
};

// Reads the keys above. A key of the wrong type, or an id outside tokenizer.ggml.tokens (or, in a
// file without tokens, one of 2^24 or more), is a locr::Error (kInvalidArgument) naming the file
// and the key; absent keys stay unset.
GgufTokenizerMetadata read_gguf_tokenizer_metadata(const io::GgufFile& gguf);

}  // namespace locr::tokenizer
