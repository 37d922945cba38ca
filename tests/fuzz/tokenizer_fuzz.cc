// The tokenizer (tokenizer/*.cc) on the tiny fixture model's byte-level BPE vocabulary (or the
// tokenizer.json named by $LOCR_FUZZ_TOKENIZER), as the file says and with the Qwen3.5 pipeline
// override (TokenizerOptions): encode() of any bytes gives in-vocabulary ids or throws locr::Error
// for invalid UTF-8; ASCII text without special-token markup decodes back to itself; decode() and
// token_bytes() of arbitrary ids never read outside the vocabulary. Every pre-tokenizer regex
// matcher (SplitRegex) cuts valid UTF-8 into non-empty pieces that end on character boundaries.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using namespace locr;

std::string tokenizer_path() {
  const char* path = std::getenv("LOCR_FUZZ_TOKENIZER");
  return path ? path : fuzz::fixture("models/tiny_a/tokenizer.json");
}

const tokenizer::Tokenizer& tiny_tokenizer() {
  static const tokenizer::Tokenizer* tok = tokenizer::Tokenizer::from_file(tokenizer_path()).release();
  return *tok;
}

// The same vocabulary with the pipeline transformers' Qwen3_5Tokenizer builds (NFC, Qwen3.5 regex).
const tokenizer::Tokenizer& qwen35_tokenizer() {
  static const tokenizer::Tokenizer* tok = [] {
    tokenizer::TokenizerOptions options;
    options.pre_tokenizer = tokenizer::PreTokenizerOverride::kQwen35;
    return tokenizer::Tokenizer::from_file(tokenizer_path(), options).release();
  }();
  return *tok;
}

// Pieces of every matcher: contiguous, non-empty, ending on character boundaries, covering the text.
void check_splits(std::string_view text) {
  if (tokenizer::unicode::find_invalid_utf8(text) != std::string_view::npos) return;
  for (tokenizer::SplitRegex re : {tokenizer::SplitRegex::kQwen2, tokenizer::SplitRegex::kQwen2Digits3,
                               tokenizer::SplitRegex::kQwen35, tokenizer::SplitRegex::kGpt2}) {
    std::vector<size_t> ends;
    tokenizer::split_with_regex(re, text, &ends);
    size_t prev = 0;
    for (size_t e : ends) {
      LOCR_FUZZ_CHECK(e > prev && e <= text.size());
      LOCR_FUZZ_CHECK(e == text.size() || (static_cast<unsigned char>(text[e]) & 0xC0) != 0x80);
      prev = e;
    }
    LOCR_FUZZ_CHECK(prev == text.size());
  }
}

bool plain_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80 || c == '<' || c == '>' || c == '|') return false;  // no added-token markup
  return true;
}

void check_tokenizer(const tokenizer::Tokenizer& tok, std::string_view text) {
  const int32_t vocab = tok.vocab_size();
  try {
    const std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids) LOCR_FUZZ_CHECK(id >= 0 && id < vocab && tok.has_id(id));
    const std::string back = tok.decode(ids);
    if (plain_ascii(text)) LOCR_FUZZ_CHECK(back == text);
  } catch (const Error& e) {
    LOCR_FUZZ_CHECK(e.kind() == ErrorKind::kInvalidArgument && e.what()[0] != '\0');
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tokenizer::Tokenizer& tok = tiny_tokenizer();
  const int32_t vocab = tok.vocab_size();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_tokenizer(tok, text);
  check_tokenizer(qwen35_tokenizer(), text);
  check_splits(text);
  // The same bytes read as little-endian ids, some of them out of range.
  std::vector<int32_t> ids(size / 4);
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
  for (int32_t& id : ids)
    if (id >= 0) id %= vocab + 8;
  for (bool skip : {false, true}) {
    try {
      tok.decode(ids, skip);
    } catch (const Error& e) {
      LOCR_FUZZ_CHECK(e.kind() == ErrorKind::kInvalidArgument);
    }
  }
  for (int32_t id : ids) {
    if (tok.has_id(id)) {
      tok.token_bytes(id);
      tok.is_special(id);
    }
  }
  return 0;
}
