// Shared access to test fixtures: gzip-compressed files and the real Qwen tokenizer (built from
// the Qwen vocabulary by tools/reference/make_tokenizer_goldens.py).
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace locr::test {

inline std::string read_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << "cannot open " << path;
  if (f == nullptr) return {};
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

inline const std::string& qwen_tokenizer_json() {
  static const std::string j = read_gzip(std::string(LOCR_FIXTURES_DIR) + "/tokenizer/qwen2_tokenizer.json.gz");
  return j;
}

inline const tokenizer::Tokenizer& qwen_tokenizer() {
  static const std::unique_ptr<tokenizer::Tokenizer> t = tokenizer::Tokenizer::from_json(qwen_tokenizer_json());
  return *t;
}

}  // namespace locr::test
