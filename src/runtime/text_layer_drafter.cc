#include "runtime/text_layer_drafter.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "runtime/suffix_match.h"

namespace locr::runtime {

std::vector<int32_t> text_layer_corpus(const tokenizer::Tokenizer& tokenizer, std::string_view text) {
  std::vector<int32_t> ids = tokenizer.encode(text);
  std::erase_if(ids, [&](int32_t id) { return tokenizer.is_special(id); });
  return ids;
}

TextLayerDrafter::TextLayerDrafter(std::vector<int32_t> corpus, TextLayerOptions opts)
    : Drafter(opts.num_speculative_tokens, opts.backoff), corpus_(std::move(corpus)), opts_(opts) {
  if (opts_.min_n < 1 || opts_.max_n < opts_.min_n)
    fail(ErrorKind::kInvalidArgument, "text-layer drafter: need 1 <= min_n (", opts_.min_n, ") <= max_n (",
         opts_.max_n, ")");
}

std::vector<int32_t> TextLayerDrafter::lookup(std::span<const int32_t> output, int max_tokens) {
  last_from_corpus_ = false;
  const SuffixMatch in_corpus = find_suffix_match(corpus_, output, opts_.max_n, MatchPrefer::kNearest, cursor_);
  SuffixMatch in_output;
  if (opts_.lookup_output) in_output = find_suffix_match(output, output, opts_.max_n, MatchPrefer::kLatest);
  const bool use_corpus = in_corpus.length >= opts_.min_n && in_corpus.length >= in_output.length;
  if (use_corpus) {
    cursor_ = in_corpus.next;
    last_from_corpus_ = true;
    const size_t n = std::min(static_cast<size_t>(max_tokens), corpus_.size() - in_corpus.next);
    return {corpus_.begin() + static_cast<ptrdiff_t>(in_corpus.next),
            corpus_.begin() + static_cast<ptrdiff_t>(in_corpus.next + n)};
  }
  if (in_output.length >= opts_.min_n) {
    const size_t n = std::min(static_cast<size_t>(max_tokens), output.size() - in_output.next);
    return {output.begin() + static_cast<ptrdiff_t>(in_output.next),
            output.begin() + static_cast<ptrdiff_t>(in_output.next + n)};
  }
  return {};
}

void TextLayerDrafter::on_accepted(int drafted, int accepted) {
  (void)drafted;
  if (last_from_corpus_) cursor_ = std::min(corpus_.size(), cursor_ + static_cast<size_t>(accepted));
}

}  // namespace locr::runtime
