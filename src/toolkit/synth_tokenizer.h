// A synthetic Qwen2-style byte-level BPE tokenizer for `locr make-model`: the real special-token
// ids and vocabulary size of LightOnOCR-2 / Qwen3 (regular ids 0..151642, the 26 Qwen added tokens at
// 151643..151668) with made-up merges, written as transformers writes tokenizer.json. The Qwen3.5
// form (LightOnOCR-3-0.8B / -4B): regular ids 0..248043, its 33 added tokens at 248044..248076, and
// Qwen3.5's split regex.
//
// Regular ids: the 256 byte-level symbols in GPT-2's bytes_to_unicode order (as every Qwen
// vocabulary starts), then merged tokens: a few hundred common English and chat words, whitespace
// runs, then every 2- and 3-letter string (optionally Ġ-prefixed) in letter-frequency order, then
// 4-letter strings until the regular vocabulary is full. Deterministic (no seed): every model made
// with the same `n_regular` has the same tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace locr::toolkit {

struct AddedToken {
  std::string content;
  bool special;
};

// The 26 added tokens of the Qwen2/Qwen3 tokenizer in id order (ids n_regular + i).
const std::vector<AddedToken>& qwen_added_tokens();
// The 33 added tokens of Qwen3.5 in id order (real ids 248044 + i): Qwen3's 26, then 7 audio/TTS
// tokens (special).
const std::vector<AddedToken>& qwen35_added_tokens();

// The Split regex of Qwen2/Qwen3 tokenizer.json files, and the one transformers' Qwen3_5Tokenizer
// builds (tokenization_qwen3_5.PRETOKENIZE_REGEX: letter runs widened to [\p{L}\p{M}]+).
const char* qwen2_pretokenize_regex();
const char* qwen35_pretokenize_regex();

// The byte-level alphabet: symbol (UTF-8) of byte b at index b.
std::vector<std::string> byte_level_alphabet();
// Symbols in vocabulary order (ids 0..255).
std::vector<std::string> byte_level_vocab_order();

struct SynthBpe {
  std::vector<std::string> vocab;                          // id -> token, size n_regular
  std::vector<std::pair<std::string, std::string>> merges;  // rank order
};

// n_regular >= 256: number of regular (non-added) tokens; 151643 for the real model.
SynthBpe make_synthetic_bpe(int n_regular);

// tokenizer.json text (fields ordered as transformers/tokenizers write them): the Qwen2/Qwen3
// added tokens and split regex, or the given ones (ids bpe.vocab.size() + i).
std::string tokenizer_json(const SynthBpe& bpe);
std::string tokenizer_json(const SynthBpe& bpe, const std::vector<AddedToken>& added, const std::string& split_regex);
// tokenizer_config.json in the hub form of LightOnOCR-2 (added_tokens_decoder, Qwen2Tokenizer).
nlohmann::ordered_json tokenizer_config_json(int n_regular);
// tokenizer_config.json in the hub form of Qwen3.5 (the 33 added tokens, tokenizer_class
// Qwen2Tokenizer, which transformers replaces by Qwen3_5Tokenizer for model_type qwen3_5).
nlohmann::ordered_json qwen35_tokenizer_config_json(int n_regular);

}  // namespace locr::toolkit
