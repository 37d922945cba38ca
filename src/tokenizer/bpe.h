// The BPE model of a byte-level tokenizer: vocabulary, ranked merges and the merge loop, as
// `tokenizers`' models::bpe does it (a min-heap of candidate merges ordered by rank then
// position, stale entries skipped), plus a bounded cache of encoded words.
// Words arrive as raw bytes; the byte-level alphabet (GPT-2's bytes_to_unicode) that the
// vocabulary strings are written in is applied here. Not a trainer, and no dropout,
// continuing-subword prefix, end-of-word suffix or byte fallback.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace locr::tokenizer {

// GPT-2's reversible byte <-> character mapping used by ByteLevel pre-tokenizers and decoders.
char32_t byte_to_char(uint8_t b);
// The byte a byte-level character stands for, or -1 if the character is not in the alphabet.
int char_to_byte(char32_t c);
// Raw bytes of a byte-level string, as the ByteLevel decoder produces them: if every character
// is in the alphabet, the bytes they stand for; otherwise the string's own UTF-8 bytes.
std::string byte_level_decode(std::string_view token);
std::string byte_level_encode(std::string_view bytes);

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  bool ignore_merges = false;              // a word found whole in the vocabulary skips merging
  std::optional<std::string> unk_token;    // characters not in the vocabulary; dropped if unset
  bool fuse_unk = false;
};

class BpeModel {
 public:
  // `vocab`: token strings (byte-level alphabet) to ids. `merges`: pairs in rank order.
  // Throws locr::Error (kInvalidArgument) if a merge names a token missing from the vocabulary;
  // `where` prefixes messages (e.g. "tokenizer.json: model").
  BpeModel(TokenMap vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, const std::string& where = "model");

  // Appends the ids of one pre-tokenized word given as raw bytes.
  void encode_word(std::string_view bytes, std::vector<int32_t>* ids) const;

  const TokenMap& vocab() const { return vocab_; }
  size_t merge_count() const { return merges_.size(); }

 private:
  struct MergeTarget {
    uint32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const MergeTarget* find_merge(int32_t a, int32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }
  void merge_word(std::string_view bytes, std::vector<int32_t>* ids) const;

  TokenMap vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  // Id of the one-character token for each byte, or -1 when the vocabulary lacks it.
  int32_t byte_ids_[256];
  BpeOptions options_;
  int32_t unk_id_ = -1;

  // Words seen before, as `tokenizers` caches them (at most kCacheCapacity words, each shorter
  // than kCacheMaxWordBytes bytes; once full, new words are no longer added).
  static constexpr size_t kCacheCapacity = 10000;
  static constexpr size_t kCacheMaxWordBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace locr::tokenizer
