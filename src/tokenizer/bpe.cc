// BPE model of a byte-level tokenizer; see bpe.h. The merge loop mirrors
// tokenizers/src/models/bpe/word.rs (Word::merge_all) step by step, including how it detects
// stale heap entries (by the id the pair would now merge into), so that ties and vocabularies
// with several merges per token resolve exactly as there.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <array>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace locr::tokenizer {

namespace {

struct ByteTables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 324> to_byte{};  // characters 0..0x143
  constexpr ByteTables() {
    for (auto& b : to_byte) b = -1;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int c = printable ? b : 256 + n++;
      to_char[b] = static_cast<char32_t>(c);
      to_byte[c] = static_cast<int16_t>(b);
    }
  }
};
constexpr ByteTables kBytes;

}  // namespace

char32_t byte_to_char(uint8_t b) { return kBytes.to_char[b]; }

int char_to_byte(char32_t c) { return c < kBytes.to_byte.size() ? kBytes.to_byte[c] : -1; }

std::string byte_level_decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    char32_t cp;
    const size_t len = unicode::decode_utf8(token, i, &cp);
    const int b = len ? char_to_byte(cp) : -1;
    if (b < 0) return std::string(token);
    out.push_back(static_cast<char>(b));
    i += len;
  }
  return out;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) unicode::append_utf8(&out, byte_to_char(static_cast<uint8_t>(c)));
  return out;
}

BpeModel::BpeModel(TokenMap vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  auto id_of = [&](const std::string& token, size_t rank, const char* which) {
    auto it = vocab_.find(token);
    if (it == vocab_.end())
      fail(ErrorKind::kInvalidArgument, where, ".merges[", rank, "] (\"", merges[rank].first, "\", \"",
           merges[rank].second, "\"): ", which, " token \"", token,
           "\" is not in the vocabulary; the merges do not belong to this vocab");
    return it->second;
  };
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int32_t a_id = id_of(a, rank, "left");
    const int32_t b_id = id_of(b, rank, "right");
    const int32_t new_id = id_of(a + b, rank, "merged");
    // A repeated pair keeps its last rank, as `tokenizers` (collecting into a hash map) does.
    merges_[pair_key(a_id, b_id)] = MergeTarget{static_cast<uint32_t>(rank), new_id};
  }
  std::string ch;
  for (int b = 0; b < 256; ++b) {
    ch.clear();
    unicode::append_utf8(&ch, byte_to_char(static_cast<uint8_t>(b)));
    auto it = vocab_.find(ch);
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
  if (options_.unk_token) {
    auto it = vocab_.find(*options_.unk_token);
    if (it == vocab_.end())
      fail(ErrorKind::kInvalidArgument, where, ".unk_token \"", *options_.unk_token, "\" is not in the vocabulary");
    unk_id_ = it->second;
  }
}

void BpeModel::encode_word(std::string_view bytes, std::vector<int32_t>* ids) const {
  if (bytes.empty()) return;
  if (options_.ignore_merges) {
    auto it = vocab_.find(byte_level_encode(bytes));
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  const bool cacheable = bytes.size() < kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(bytes);
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids->size();
  merge_word(bytes, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(bytes), std::vector<int32_t>(ids->begin() + first, ids->end()));
  }
}

void BpeModel::merge_word(std::string_view bytes, std::vector<int32_t>* ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // neighbours, -1 at the ends
    uint32_t len;        // 0 once merged into its left neighbour
  };
  struct Merge {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
  };
  // Min-heap on (rank, pos).
  struct Later {
    bool operator()(const Merge& a, const Merge& b) const {
      return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    }
  };

  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  auto add = [&](int32_t id, uint32_t len) {
    const int32_t n = static_cast<int32_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back(Symbol{id, n - 1, -1, len});
  };
  // One symbol per byte; bytes missing from the vocabulary become the unknown token (fused
  // when fuse_unk) or are dropped when there is none, as `tokenizers` does.
  int32_t pending_unk_len = 0;
  for (char c : bytes) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0) {
      if (pending_unk_len) add(unk_id_, pending_unk_len), pending_unk_len = 0;
      add(id, 1);
    } else if (unk_id_ >= 0) {
      if (pending_unk_len && !options_.fuse_unk) add(unk_id_, pending_unk_len), pending_unk_len = 0;
      pending_unk_len += 1;
    }
  }
  if (pending_unk_len) add(unk_id_, pending_unk_len);

  thread_local std::vector<Merge> heap;
  heap.clear();
  auto push = [&](const MergeTarget* m, uint32_t pos) {
    heap.push_back(Merge{m->rank, pos, m->new_id});
    std::push_heap(heap.begin(), heap.end(), Later{});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const MergeTarget* m = find_merge(symbols[i].id, symbols[i + 1].id)) push(m, static_cast<uint32_t>(i));
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Later{});
    const Merge top = heap.back();
    heap.pop_back();
    Symbol& cur = symbols[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const Symbol right = symbols[cur.next];
    // Stale entry: the pair at this position no longer merges into the same token.
    const MergeTarget* now = find_merge(cur.id, right.id);
    if (now == nullptr || now->new_id != top.new_id) continue;

    const int32_t next_pos = cur.next;
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    symbols[next_pos].len = 0;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int32_t>(top.pos);

    if (cur.prev >= 0) {
      if (const MergeTarget* m = find_merge(symbols[cur.prev].id, cur.id))
        push(m, static_cast<uint32_t>(cur.prev));
    }
    if (cur.next >= 0) {
      if (const MergeTarget* m = find_merge(cur.id, symbols[cur.next].id)) push(m, top.pos);
    }
  }
  for (const Symbol& s : symbols) {
    if (s.len != 0) ids->push_back(s.id);
  }
}

}  // namespace locr::tokenizer
