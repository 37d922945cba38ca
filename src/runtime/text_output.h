// Output processing of one request, the one implementation `locr serve` (server/generation),
// `locr ocr --model` and `locr generate` / `chat` share: generated token ids in, releasable UTF-8
// text out. Incremental detokenizing (runtime/detokenizer.h), the text of a token that ends the
// request (EOS unless ignore_eos, a stop token id) left out unless include_stop_str, and stop
// strings held back until they can no longer match (runtime/stop_matcher.h); a matched stop string
// ends the request (the caller cancels it: finish_reason "stop", stop_reason the string).
// Not here: choosing tokens (runtime/token_selector.h); page post-processing
// (runtime/postprocess.h), which the OCR front ends apply to a page's whole text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "runtime/detokenizer.h"
#include "runtime/finish.h"
#include "runtime/stop_matcher.h"
#include "runtime/token_selector.h"

namespace locr::runtime {

struct TextOptions {
  bool skip_special = true;        // special tokens decode to nothing
  std::vector<std::string> stop;   // stop strings
  bool include_stop_str = false;   // keep the matched stop string, and the text of EOS / stop token ids
};

class TextOutput {
 public:
  // `d`: the request's eos_ids, stop_token_ids and ignore_eos (which tokens end it).
  TextOutput(const tokenizer::Tokenizer& tok, const DecodeParams& d, TextOptions o);

  // The text released by one more generated token (`token` < 0: none) and, with `last` (the
  // request ended), everything still held back. Nothing once a stop string has matched.
  std::string push(int32_t token, bool last = false);
  // A stop string matched: the output is complete, the request should end.
  bool stopped() const { return stop_.matched(); }
  // The stop_reason of a stop string match.
  StopReason stop_reason() const { return StopReason::string(stop_.stop()); }

 private:
  bool ends_request(int32_t token) const;

  Detokenizer detok_;
  StopMatcher stop_;
  int32_t vocab_;
  std::vector<int32_t> eos_ids_, stop_token_ids_;
  bool ignore_eos_, include_stop_;
};

}  // namespace locr::runtime
