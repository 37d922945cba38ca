// The text-layer normalisation (io/pdf_text.h) over any bytes, as Poppler's text could hold
// anything a PDF's fonts map to: no crash, invalid UTF-8 passed through, and the output shape the
// header promises (no form feed or carriage return added, no trailing newline, no blank-line runs
// longer than one).
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "io/pdf_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)io::normalize_text_chars(in);
  const std::string out = io::normalize_page_text(in);
  if (in.find('\f') == std::string_view::npos) LOCR_FUZZ_CHECK(out.find('\f') == std::string::npos);
  if (in.find('\r') == std::string_view::npos) LOCR_FUZZ_CHECK(out.find('\r') == std::string::npos);
  LOCR_FUZZ_CHECK(out.empty() || out.back() != '\n');
  LOCR_FUZZ_CHECK(out.find("\n\n\n") == std::string::npos);
  return 0;
}
