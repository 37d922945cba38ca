// Pre-tokenizer regexes of byte-level BPE tokenizers, as hand-written matchers that reproduce
// what Oniguruma's find-iter does with each pattern in Hugging Face `tokenizers` (leftmost
// match, alternatives tried in order, greedy quantifiers with backtracking, the `\s+(?!\S)`
// lookahead, case-insensitive contractions including U+017F for 's'). Linear time: every
// whitespace run is scanned a bounded number of times.
// Not a regex engine: only the four known patterns below are supported.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace locr::tokenizer {

enum class SplitRegex {
  // Qwen2 / Qwen3 (tokenizer.json Split pattern):
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,
  // The same with \p{N}{1,3}: transformers' TikTokenConverter default pattern.
  kQwen2Digits3,
  // Qwen3.5 (transformers' Qwen3_5Tokenizer, which uses it whatever tokenizer.json says; see
  // TokenizerOptions in tokenizer.h): combining marks \p{M} join letter runs and leave the
  // symbol class.
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen35,
  // GPT-2 (ByteLevel with use_regex=true):
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
};

// The matcher for a pattern string as written in tokenizer.json, or nullopt if unknown.
std::optional<SplitRegex> split_regex_from_pattern(std::string_view pattern);
std::string_view split_regex_pattern(SplitRegex re);

// Splits valid UTF-8 `text` into the regex matches (with "Isolated" behaviour: every match is
// its own piece, and so would be any unmatched gap -- these patterns leave none). Appends the
// byte offset at which each piece ends; pieces are contiguous and start at 0.
void split_with_regex(SplitRegex re, std::string_view text, std::vector<size_t>* piece_ends);

}  // namespace locr::tokenizer
