// The text-layer drafter (method "text-layer"): for a page whose PDF has a text layer, the page's
// text, normalised as io/pdf_text.h describes and tokenised with the model's tokenizer, is the
// lookup corpus. Each step it finds the longest suffix of the output so far (up to max_n tokens, at
// least min_n) that occurs in the corpus, and also in the output itself (Markdown and HTML markup,
// table rows and list markers repeat but are not in the text layer), and proposes the tokens that
// followed it:
//   - in the corpus, among equally long matches, the one whose continuation starts nearest at or
//     after the corpus position the previous accepted draft reached (the model reads the page in
//     order), else the nearest before it;
//   - in the output, the most recent occurrence;
//   - the longer match wins; a tie goes to the corpus.
// A client-given draft text (a previous OCR of the page, its own text) works the same way: pass its
// tokens as the corpus. Back-off as every drafter (drafter.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/drafter.h"

namespace locr::tokenizer {
class Tokenizer;
}

namespace locr::runtime {

struct TextLayerOptions {
  int num_speculative_tokens = 8;
  int max_n = 8;  // longest suffix looked up
  int min_n = 2;  // shortest match that counts
  bool lookup_output = true;
  BackoffOptions backoff;
};

// `text` tokenised for the corpus: special tokens (text that spells one, e.g. "<|im_end|>") are
// left out, as the model never copies them from a page.
std::vector<int32_t> text_layer_corpus(const tokenizer::Tokenizer& tokenizer, std::string_view text);

class TextLayerDrafter final : public Drafter {
 public:
  TextLayerDrafter(std::vector<int32_t> corpus, TextLayerOptions opts);
  std::string_view name() const override { return "text-layer"; }
  size_t corpus_position() const { return cursor_; }

 protected:
  std::vector<int32_t> lookup(std::span<const int32_t> output, int max_tokens) override;
  void on_accepted(int drafted, int accepted) override;

 private:
  std::vector<int32_t> corpus_;
  TextLayerOptions opts_;
  size_t cursor_ = 0;       // corpus index the output is believed to have reached
  bool last_from_corpus_ = false;
};

}  // namespace locr::runtime
