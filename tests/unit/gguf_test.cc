// The GGUF reader (io/gguf.h) on files written by llama.cpp's `gguf` package and its dequantizer's
// results (tools/reference/make_gguf_fixtures.py), and on damaged copies of them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "io/file.h"
#include "io/gguf.h"

namespace locr::io {
namespace {

std::string fixture(const char* name) { return std::string(LOCR_FIXTURES_DIR) + "/gguf/" + name; }

TEST(Gguf, ReadsEveryMetadataTypeAsWritten) {
  const auto f = GgufFile::open(fixture("types.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 64u);
  const auto& m = f->metadata();
  EXPECT_EQ(m["general.architecture"], "qwen3");
  EXPECT_EQ(m["test.u8"], 200);
  EXPECT_EQ(m["test.i8"], -100);
  EXPECT_EQ(m["test.u16"], 60000);
  EXPECT_EQ(m["test.i16"], -30000);
  EXPECT_EQ(m["test.u32"], 4000000000u);
  EXPECT_EQ(m["test.i32"], -2000000000);
  EXPECT_EQ(m["test.f32"].get<double>(), 0.15625);
  EXPECT_EQ(m["test.u64"].get<uint64_t>(), 18000000000000000000ull);
  EXPECT_EQ(m["test.i64"].get<int64_t>(), -9000000000000000000ll);
  EXPECT_EQ(m["test.f64"].get<double>(), -2.5e300);
  EXPECT_EQ(m["test.bool"], true);
  EXPECT_EQ(m["test.string"], "Grüße, 世界");
  EXPECT_EQ(m["test.array_i32"], nlohmann::json({1, -2, 3}));
  EXPECT_EQ(m["test.array_str"], nlohmann::json({"<|im_start|>", "", "Ġhello"}));
  EXPECT_EQ(m["test.array_nested"], nlohmann::json({{1, 2}, {3}}));
  EXPECT_EQ(f->types().at("test.u8"), GgufValueType::kU8);
  EXPECT_EQ(f->types().at("test.f64"), GgufValueType::kF64);
  EXPECT_EQ(f->types().at("test.array_str"), GgufValueType::kArray);
  EXPECT_EQ(f->array_types().at("test.array_str"), GgufValueType::kString);
  EXPECT_EQ(f->array_types().at("test.array_nested"), GgufValueType::kArray);
}

TEST(Gguf, TensorInfosShapesAndAlignment) {
  const auto f = GgufFile::open(fixture("types.gguf"));
  std::vector<std::string> names;
  for (const auto& t : f->tensors()) {
    names.push_back(t.name);
    EXPECT_EQ(t.offset % 64, 0u) << t.name;
    EXPECT_EQ(f->data(t).size(), t.bytes) << t.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"f32", "f32_3d", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                             "q4_k", "q5_k", "q6_k", "q3_k"}));
  const GgufTensor* t = f->find("f32_3d");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne, (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 3, 4}));
  const std::vector<float> v = f->dequantize(*t);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], static_cast<float>(i));
  EXPECT_EQ(f->find("q8_0")->bytes, 3u * 2 * 34);
  EXPECT_EQ(f->find("q6_k")->bytes, 2u * 2 * 210);
  EXPECT_EQ(f->find("nope"), nullptr);
}

// Every type locr reads, against gguf.quants.dequantize (NumPy, llama.cpp's own Python package).
TEST(Gguf, DequantizationMatchesLlamaCppsReference) {
  const auto f = GgufFile::open(fixture("types.gguf"));
  const auto e = GgufFile::open(fixture("expected.gguf"));
  int checked = 0;
  for (const auto& want : e->tensors()) {
    const GgufTensor* t = f->find(want.name);
    ASSERT_NE(t, nullptr) << want.name;
    EXPECT_EQ(t->shape(), want.shape()) << want.name;
    const std::vector<float> got = f->dequantize(*t), ref = e->dequantize(want);
    ASSERT_EQ(got.size(), ref.size());
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_err = std::max(max_err, static_cast<double>(std::fabs(got[i] - ref[i])));
      max_ref = std::max(max_ref, static_cast<double>(std::fabs(ref[i])));
    }
    EXPECT_LE(max_err, 1e-6 * std::max(1.0, max_ref)) << want.name << " (" << ggml_type_info(t->type)->name << ")";
    EXPECT_GT(max_ref, 0) << want.name;
    ++checked;
  }
  EXPECT_EQ(checked, 12);  // f32, f32_3d, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k
}

TEST(Gguf, TypesLocrDoesNotReadAreNamed) {
  const auto f = GgufFile::open(fixture("types.gguf"));
  try {
    f->dequantize(*f->find("q3_k"));
    FAIL() << "Q3_K dequantized";
  } catch (const locr::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("Q3_K"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(ggml_type_info(12)->name, "Q4_K");
  EXPECT_EQ(ggml_type_info(4), nullptr);  // Q4_2, removed from ggml
  EXPECT_EQ(ggml_type_info(1000), nullptr);
}

// Throws locr::Error whose message contains `words`.
void expect_error(const std::string& bytes, const std::string& words) {
  try {
    GgufFile::parse(bytes, "damaged.gguf");
    ADD_FAILURE() << "parsed; expected an error with '" << words << "'";
  } catch (const locr::Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("damaged.gguf"), std::string::npos) << e.what();
  }
}

template <typename T>
void put(std::string& s, size_t at, T v) {
  std::memcpy(s.data() + at, &v, sizeof v);
}

TEST(Gguf, DamagedFilesAreClearErrors) {
  const std::string good = read_file(fixture("types.gguf"));
  GgufFile::parse(good, "ok");  // the undamaged bytes parse
  // Truncated anywhere: in the header, the metadata, the tensor infos or the data.
  for (size_t n : {size_t{0}, size_t{3}, size_t{4}, size_t{8}, size_t{20}, size_t{100}, size_t{700}, size_t{1100},
                   size_t{1300}, good.size() - 10})
    EXPECT_THROW(GgufFile::parse(good.substr(0, n), "damaged.gguf"), locr::Error) << n;
  expect_error(good.substr(0, 100), "claims 17 metadata entries");  // more than 100 bytes can hold
  expect_error(good.substr(0, 700), "truncated GGUF file");
  // The last tensor ends 8 bytes before the end (padding): 10 fewer cut into it.
  expect_error(good.substr(0, good.size() - 10), "past the end");
  EXPECT_NO_THROW(GgufFile::parse(good.substr(0, good.size() - 8), "ok"));
  std::string s = good;
  s[0] = 'X';
  expect_error(s, "not a GGUF file");
  s = good;
  put<uint32_t>(s, 4, 1);
  expect_error(s, "version 1");
  put<uint32_t>(s, 4, 0x03000000);
  expect_error(s, "big-endian");
  s = good;
  put<uint64_t>(s, 8, uint64_t{1} << 60);
  expect_error(s, "claims");
  s = good;
  put<uint64_t>(s, 16, uint64_t{1} << 40);
  expect_error(s, "claims");
  // The first tensor info: name "f32" (u64 length 3), 2 dims, ne, then its type and offset.
  const std::string marker = std::string("\x03\0\0\0\0\0\0\0f32\x02\0\0\0", 15);
  const size_t at = good.find(marker);
  ASSERT_NE(at, std::string::npos);
  const size_t type_at = at + marker.size() + 16, offset_at = type_at + 4;
  s = good;
  put<uint32_t>(s, type_at, 99);
  expect_error(s, "unknown ggml type 99");
  s = good;
  put<uint32_t>(s, at + 11, 9);
  expect_error(s, "9 dimensions");
  s = good;
  put<uint64_t>(s, offset_at, 32);  // not a multiple of 64
  expect_error(s, "not a multiple of the alignment");
  s = good;
  put<uint64_t>(s, offset_at, uint64_t{1} << 62);
  expect_error(s, "past the end");
  s = good;
  put<uint64_t>(s, at + 15, uint64_t{1} << 45);  // ne[0]
  expect_error(s, "absurd shape");
  s = good;
  put<uint64_t>(s, at + 15, 63);  // any row length is whole for F32 (a block of 1); still inside the file
  EXPECT_NO_THROW(GgufFile::parse(s, "damaged.gguf"));
}

TEST(Gguf, RowsThatAreNotWholeBlocksAreRefused) {
  std::string s = read_file(fixture("types.gguf"));
  const std::string marker = std::string("\x04\0\0\0\0\0\0\0q8_0\x02\0\0\0", 16);
  const size_t at = s.find(marker);
  ASSERT_NE(at, std::string::npos);
  put<uint64_t>(s, at + marker.size(), 48);  // 48 elements: not a whole Q8_0 block of 32
  expect_error(s, "not a multiple of its block");
}

}  // namespace
}  // namespace locr::io
