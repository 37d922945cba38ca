#include "runtime/text_output.h"

#include <algorithm>

namespace locr::runtime {

TextOutput::TextOutput(const tokenizer::Tokenizer& tok, const DecodeParams& d, TextOptions o)
    : detok_(tok, o.skip_special),
      stop_(std::move(o.stop), o.include_stop_str),
      vocab_(tok.vocab_size()),
      eos_ids_(d.eos_ids),
      stop_token_ids_(d.stop_token_ids),
      ignore_eos_(d.ignore_eos),
      include_stop_(o.include_stop_str) {}

bool TextOutput::ends_request(int32_t t) const {
  return std::find(stop_token_ids_.begin(), stop_token_ids_.end(), t) != stop_token_ids_.end() ||
         (!ignore_eos_ && std::find(eos_ids_.begin(), eos_ids_.end(), t) != eos_ids_.end());
}

std::string TextOutput::push(int32_t token, bool last) {
  if (stop_.matched()) return "";
  std::string piece;
  // Ids past the tokenizer (the embedding matrix is padded) decode to nothing, as in HF.
  if (token >= 0 && token < vocab_ && (include_stop_ || !ends_request(token))) piece = detok_.push(token);
  if (last) piece += detok_.finish();
  std::string out = stop_.push(piece);
  if (last && !stop_.matched()) out += stop_.flush();
  return out;
}

}  // namespace locr::runtime
