// expect_same_gguf: two GGUF files compared as llama.cpp reads them, then byte for byte (the
// `locr quantize` tests against llama.cpp's converter's files).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "io/file.h"
#include "io/gguf.h"

namespace locr::model {

// Every tensor (order, name, ne, type, bytes) and every metadata key (type, element type, value).
inline void expect_same_gguf(const std::string& got_path, const std::string& want_path) {
  SCOPED_TRACE(got_path + " vs " + want_path);
  const auto got = io::GgufFile::open(got_path), want = io::GgufFile::open(want_path);
  ASSERT_EQ(got->tensors().size(), want->tensors().size());
  for (size_t i = 0; i < want->tensors().size(); ++i) {
    const io::GgufTensor &g = got->tensors()[i], &w = want->tensors()[i];
    EXPECT_EQ(g.name, w.name) << i;
    EXPECT_EQ(g.ne, w.ne) << w.name;
    EXPECT_EQ(g.type, w.type) << w.name;
    EXPECT_EQ(g.offset, w.offset) << w.name;
    EXPECT_TRUE(got->data(g) == want->data(w)) << w.name << ": data bytes differ";
  }
  EXPECT_EQ(got->alignment(), want->alignment());
  for (const auto& [k, t] : want->types()) {
    ASSERT_TRUE(got->has(k)) << "missing key " << k;
    EXPECT_EQ(got->types().at(k), t) << k;
    if (want->array_types().count(k)) {
      EXPECT_EQ(got->array_types().at(k), want->array_types().at(k)) << k;
    }
    EXPECT_TRUE(got->metadata()[k] == want->metadata()[k]) << k << ": " << got->metadata()[k].dump().substr(0, 200)
                                                           << " vs " << want->metadata()[k].dump().substr(0, 200);
  }
  for (const auto& [k, t] : got->types()) EXPECT_TRUE(want->has(k)) << "extra key " << k;
  // And therefore (same key order too) the same file.
  EXPECT_TRUE(io::read_file(got_path) == io::read_file(want_path)) << "the files differ";
}

}  // namespace locr::model
