// The tokenizer (model/tokenizer*.cc) on the tiny fixture model's byte-level BPE vocabulary (or the
// tokenizer.json named by $LOCR_FUZZ_TOKENIZER): encode() of any bytes gives in-vocabulary ids or
// throws locr::Error for invalid UTF-8; ASCII text without special-token markup decodes back to
// itself; decode() and token_bytes() of arbitrary ids never read outside the vocabulary.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/tokenizer.h"

namespace {

using namespace locr;

const model::Tokenizer& tokenizer() {
  static const model::Tokenizer* tok = [] {
    const char* path = std::getenv("LOCR_FUZZ_TOKENIZER");
    return model::Tokenizer::from_file(path ? path : fuzz::fixture("models/tiny_a/tokenizer.json")).release();
  }();
  return *tok;
}

bool plain_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80 || c == '<' || c == '>' || c == '|') return false;  // no added-token markup
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const model::Tokenizer& tok = tokenizer();
  const int32_t vocab = tok.vocab_size();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids) LOCR_FUZZ_CHECK(id >= 0 && id < vocab && tok.has_id(id));
    const std::string back = tok.decode(ids);
    if (plain_ascii(text)) LOCR_FUZZ_CHECK(back == text);
  } catch (const Error& e) {
    LOCR_FUZZ_CHECK(e.kind() == ErrorKind::kInvalidArgument && e.what()[0] != '\0');
  }
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
