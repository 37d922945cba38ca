// The pieces a byte-level BPE tokenizer is assembled from, whichever file described them:
// tokenizer.json (tokenizer.cc) or a GGUF file's tokenizer.ggml.* metadata (from_gguf.cc).
// Both readers fill a TokenizerParts and hand it to make_bpe_tokenizer, so the two share one
// encode/decode pipeline (see tokenizer.cc).
#pragma once

#include <memory>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/added.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"

namespace locr::tokenizer {

// A pre-tokenizer stage: a regex Split, or the final ByteLevel stage (optional prefix space,
// optional GPT-2 regex split, then the byte-level mapping that BpeModel applies implicitly).
struct PreTokenizerStep {
  bool byte_level = false;
  SplitRegex regex = SplitRegex::kGpt2;  // Split: its pattern; ByteLevel: used if use_regex
  bool use_regex = false;
  bool add_prefix_space = false;
};

struct TokenizerParts {
  std::unique_ptr<BpeModel> bpe;
  bool nfc = false;                    // NFC normalizer before pre-tokenization
  std::vector<PreTokenizerStep> steps;  // ends with exactly one ByteLevel step
  // Added tokens with their final ids, each id once, in the order they are registered.
  std::vector<AddedToken> added;
};

// The Qwen2 / Qwen3 pipeline of tokenizer.json: Split(Qwen2 regex, Isolated) then
// ByteLevel(add_prefix_space=false, use_regex=false).
std::vector<PreTokenizerStep> qwen2_pre_tokenizer();
// The same with the Qwen3.5 regex: what transformers' Qwen3_5Tokenizer builds.
std::vector<PreTokenizerStep> qwen35_pre_tokenizer();

// Whether `options` replaces the normalizer, pre-tokenizer, decoder and BPE options of the file.
bool overrides_pipeline(const TokenizerOptions& options);
// Sets parts->nfc and parts->steps as `options` says (only when overrides_pipeline(options)).
void apply_pipeline_override(const TokenizerOptions& options, TokenizerParts* parts);

std::unique_ptr<Tokenizer> make_bpe_tokenizer(TokenizerParts parts);

}  // namespace locr::tokenizer
