// The GGUF reader (io/gguf.cc) over any bytes: it parses or throws locr::Error with a message;
// what it parses is consistent (every tensor's bytes inside the input, of the size its type and
// shape give, offsets aligned), and dequantizing a parsed tensor of a type it reads does not fault.
// What parses is also handed to the GGUF tokenizer (tokenizer/from_gguf.h): it builds or throws
// locr::Error, and what it builds encodes and decodes without faulting.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/from_gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr::io;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<GgufFile> f;
  try {
    f = GgufFile::parse(bytes, "fuzz.gguf");
  } catch (const locr::Error& e) {
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
    return 0;
  }
  LOCR_FUZZ_CHECK(f->version() == 2 || f->version() == 3);
  for (const GgufTensor& t : f->tensors()) {
    const GgmlTypeInfo* ti = ggml_type_info(t.type);
    LOCR_FUZZ_CHECK(ti != nullptr);
    LOCR_FUZZ_CHECK(t.offset % f->alignment() == 0);
    const std::string_view d = f->data(t);
    LOCR_FUZZ_CHECK(d.size() == t.bytes);
    LOCR_FUZZ_CHECK(d.data() >= bytes.data() && d.data() + d.size() <= bytes.data() + bytes.size());
    LOCR_FUZZ_CHECK(t.bytes == static_cast<uint64_t>(t.elements / ti->block * ti->block_bytes));
    if (ti->dequantize && t.elements <= (1 << 16)) {
      const std::vector<float> v = f->dequantize(t);
      LOCR_FUZZ_CHECK(v.size() == static_cast<size_t>(t.elements));
    }
  }
  try {
    (void)locr::tokenizer::read_gguf_tokenizer_metadata(*f);
    const auto tok = locr::tokenizer::Tokenizer::from_gguf(*f);
    const std::vector<int32_t> ids = tok->encode("Hello <|im_end|> w\xC3\xB6rld 12");
    for (int32_t id : ids) LOCR_FUZZ_CHECK(tok->has_id(id));
    (void)tok->decode(ids, true);
  } catch (const locr::Error& e) {
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
  }
  return 0;
}
