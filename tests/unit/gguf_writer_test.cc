// The GGUF writer (io/gguf_writer.h): read back by io::GgufFile (every metadata type, alignment,
// tensors), and byte for byte the file llama.cpp's own gguf-py writer made of the same content
// (tests/fixtures/gguf/types.gguf, tools/reference/make_gguf_fixtures.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <filesystem>

#include "core/error.h"
#include "io/file.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "../common/error_of.h"

namespace fs = std::filesystem;

namespace locr::io {
namespace {

using json = nlohmann::json;

std::string fixture(const char* name) { return std::string(LOCR_FIXTURES_DIR) + "/gguf/" + name; }

std::string tmp_path(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("locr_gguf_writer_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

void add_every_type(GgufWriter& w) {
  w.add_string("general.architecture", "qwen3");
  w.add_u8("t.u8", 200);
  w.add_i8("t.i8", -100);
  w.add_u16("t.u16", 60000);
  w.add_i16("t.i16", -30000);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -2000000000);
  w.add_f32("t.f32", 0.15625f);
  w.add_u64("t.u64", 18000000000000000000ull);
  w.add_i64("t.i64", -9000000000000000000ll);
  w.add_f64("t.f64", -2.5e300);
  w.add_bool("t.bool", true);
  w.add_bool("t.false", false);
  w.add_string("t.string", "Grüße, 世界");
  w.add_string("t.empty", "");
  w.add_array("t.a_u8", GgufValueType::kU8, json::array({0, 255}));
  w.add_array("t.a_i16", GgufValueType::kI16, json::array({-32768, 32767}));
  w.add_array("t.a_f32", GgufValueType::kF32, json::array({0.5, -1.25}));
  w.add_array("t.a_u64", GgufValueType::kU64, json::array({18000000000000000000ull}));
  w.add_array("t.a_f64", GgufValueType::kF64, json::array({1e300}));
  w.add_array("t.a_bool", GgufValueType::kBool, json::array({true, false}));
  w.add_array("t.a_str", GgufValueType::kString, json::array({"<|im_start|>", "", "Ġhello"}));
  w.add_array("t.a_empty", GgufValueType::kI32, json::array());
  w.add_array("t.a_nested", GgufValueType::kArray, json::array({json::array({1, 2}), json::array({3})}),
              GgufValueType::kI64);
}

TEST(GgufWriter, EveryMetadataTypeReadsBack) {
  GgufWriter w;
  add_every_type(w);
  const std::string path = tmp_path("types.gguf");
  const uint64_t size = w.write(path);
  EXPECT_EQ(size, fs::file_size(path));  // (written first: the call above)
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  const auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  const json& m = f->metadata();
  EXPECT_EQ(m.size(), 24u);
  EXPECT_EQ(m["t.u8"], 200);
  EXPECT_EQ(m["t.i8"], -100);
  EXPECT_EQ(m["t.u16"], 60000);
  EXPECT_EQ(m["t.i16"], -30000);
  EXPECT_EQ(m["t.u32"], 4000000000u);
  EXPECT_EQ(m["t.i32"], -2000000000);
  EXPECT_EQ(m["t.f32"].get<double>(), 0.15625);
  EXPECT_EQ(m["t.u64"].get<uint64_t>(), 18000000000000000000ull);
  EXPECT_EQ(m["t.i64"].get<int64_t>(), -9000000000000000000ll);
  EXPECT_EQ(m["t.f64"].get<double>(), -2.5e300);
  EXPECT_EQ(m["t.bool"], true);
  EXPECT_EQ(m["t.false"], false);
  EXPECT_EQ(m["t.string"], "Grüße, 世界");
  EXPECT_EQ(m["t.empty"], "");
  EXPECT_EQ(m["t.a_u8"], json({0, 255}));
  EXPECT_EQ(m["t.a_i16"], json({-32768, 32767}));
  EXPECT_EQ(m["t.a_f32"], json({0.5, -1.25}));
  EXPECT_EQ(m["t.a_u64"][0].get<uint64_t>(), 18000000000000000000ull);
  EXPECT_EQ(m["t.a_f64"][0].get<double>(), 1e300);
  EXPECT_EQ(m["t.a_bool"], json({true, false}));
  EXPECT_EQ(m["t.a_str"], json({"<|im_start|>", "", "Ġhello"}));
  EXPECT_EQ(m["t.a_empty"], json::array());
  EXPECT_EQ(m["t.a_nested"], json({{1, 2}, {3}}));
  const std::pair<const char*, GgufValueType> types[] = {
      {"t.u8", GgufValueType::kU8},    {"t.i8", GgufValueType::kI8},     {"t.u16", GgufValueType::kU16},
      {"t.i16", GgufValueType::kI16},  {"t.u32", GgufValueType::kU32},   {"t.i32", GgufValueType::kI32},
      {"t.f32", GgufValueType::kF32},  {"t.u64", GgufValueType::kU64},   {"t.i64", GgufValueType::kI64},
      {"t.f64", GgufValueType::kF64},  {"t.bool", GgufValueType::kBool}, {"t.string", GgufValueType::kString},
      {"t.a_u8", GgufValueType::kArray}};
  for (const auto& [k, t] : types) EXPECT_EQ(f->types().at(k), t) << k;
  for (const auto& [k, t] : std::vector<std::pair<const char*, GgufValueType>>{
           {"t.a_u8", GgufValueType::kU8}, {"t.a_i16", GgufValueType::kI16}, {"t.a_f32", GgufValueType::kF32},
           {"t.a_u64", GgufValueType::kU64}, {"t.a_f64", GgufValueType::kF64}, {"t.a_bool", GgufValueType::kBool},
           {"t.a_str", GgufValueType::kString}, {"t.a_empty", GgufValueType::kI32},
           {"t.a_nested", GgufValueType::kArray}})
    EXPECT_EQ(f->array_types().at(k), t) << k;
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufWriter, TensorsAreAlignedAndReadBack) {
  for (uint32_t align : {0u, 64u, 256u}) {
    SCOPED_TRACE(align);
    GgufWriter w;
    w.add_string("general.architecture", "test");
    if (align) w.set_alignment(align);
    const uint64_t a = align ? align : 32;
    std::string f32(3 * 5 * 4, '\0'), q8(2 * 2 * 34, '\0'), f16(7 * 2, '\0');
    for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<char>(i * 7 + 1);
    for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<char>(i * 3 + 2);
    for (size_t i = 0; i < f16.size(); ++i) f16[i] = static_cast<char>(i + 5);
    w.add_tensor("a.f32_3d", GgmlType::kF32, {5, 3, 1}, f32);
    int produced = 0;
    w.add_tensor("b.q8_0", GgmlType::kQ8_0, {64, 2}, [&] {
      ++produced;
      return q8;
    });
    w.add_tensor("c.f16", GgmlType::kF16, {7}, f16);
    EXPECT_EQ(produced, 0);  // bytes are made while writing, not when added
    const std::string path = tmp_path("tensors.gguf");
    const uint64_t written = w.write(path);
    EXPECT_EQ(written, fs::file_size(path));
    EXPECT_EQ(produced, 1);
    EXPECT_EQ(fs::file_size(path) % a, 0u);  // every tensor, the last too, is padded
    const auto f = GgufFile::open(path);
    EXPECT_EQ(f->alignment(), a);
    ASSERT_EQ(f->tensors().size(), 3u);
    const std::string want[] = {f32, q8, f16};
    const std::vector<int64_t> ne[] = {{5, 3, 1}, {64, 2}, {7}};
    const uint32_t type[] = {0, 8, 1};
    for (size_t i = 0; i < 3; ++i) {
      const GgufTensor& t = f->tensors()[i];
      EXPECT_EQ(t.offset % a, 0u) << t.name;
      EXPECT_EQ(t.ne, ne[i]) << t.name;
      EXPECT_EQ(t.type, type[i]) << t.name;
      EXPECT_EQ(std::string(f->data(t)), want[i]) << t.name;
    }
    EXPECT_EQ(f->tensors()[0].offset, 0u);
    EXPECT_EQ(f->tensors()[1].offset, (60 + a - 1) / a * a);
  }
}

// types.gguf was written by gguf-py (convert_hf_to_gguf.py's writer): the same metadata and tensors
// through locr's writer give the same bytes.
TEST(GgufWriter, SameBytesAsLlamaCppsGgufPyWriter) {
  const auto src = GgufFile::open(fixture("types.gguf"));
  const json& m = src->metadata();
  GgufWriter w;
  w.add_string("general.architecture", m["general.architecture"].get<std::string>());
  w.set_alignment(64);
  w.add_u8("test.u8", m["test.u8"].get<uint8_t>());
  w.add_i8("test.i8", m["test.i8"].get<int8_t>());
  w.add_u16("test.u16", m["test.u16"].get<uint16_t>());
  w.add_i16("test.i16", m["test.i16"].get<int16_t>());
  w.add_u32("test.u32", m["test.u32"].get<uint32_t>());
  w.add_i32("test.i32", m["test.i32"].get<int32_t>());
  w.add_f32("test.f32", m["test.f32"].get<float>());
  w.add_u64("test.u64", m["test.u64"].get<uint64_t>());
  w.add_i64("test.i64", m["test.i64"].get<int64_t>());
  w.add_f64("test.f64", m["test.f64"].get<double>());
  w.add_bool("test.bool", m["test.bool"].get<bool>());
  w.add_string("test.string", m["test.string"].get<std::string>());
  w.add_array("test.array_i32", GgufValueType::kI32, m["test.array_i32"]);
  w.add_array("test.array_str", GgufValueType::kString, m["test.array_str"]);
  w.add_array("test.array_nested", GgufValueType::kArray, m["test.array_nested"], GgufValueType::kI32);
  for (const GgufTensor& t : src->tensors())
    w.add_tensor(t.name, static_cast<GgmlType>(t.type), t.ne, std::string(src->data(t)));
  const std::string path = tmp_path("types_again.gguf");
  w.write(path);
  const std::string a = read_file(path), b = read_file(fixture("types.gguf"));
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "first difference at byte "
                      << std::distance(a.begin(), std::mismatch(a.begin(), a.end(), b.begin()).first);
}

TEST(GgufWriter, BadInputIsAClearErrorAndNoFile) {
  GgufWriter w;
  w.add_u32("k", 1);
  EXPECT_NE(error_of([&] { w.add_string("k", "again"); }).find("'k' added twice"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add_array("a", GgufValueType::kU8, json::array({256})); }).find("does not fit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { w.add_array("a", GgufValueType::kString, json::array({1})); }).find("not a string"),
            std::string::npos);
  EXPECT_NE(error_of([&] { w.set_alignment(48); }).find("power of two"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add_tensor("q", GgmlType::kQ8_0, {48, 2}, std::string(102, '\0')); })
                .find("rows of 48 elements, not a multiple of its block (32)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { w.add_tensor("x", GgmlType::kF32, {1, 1, 1, 1, 1}, std::string(4, '\0')); })
                .find("5 dimensions"),
            std::string::npos);
  w.add_tensor("t", GgmlType::kF32, {4}, std::string(16, '\0'));
  EXPECT_NE(error_of([&] { w.add_tensor("t", GgmlType::kF32, {4}, std::string(16, '\0')); }).find("added twice"),
            std::string::npos);
  // A tensor whose bytes are the wrong size: the write fails, the old file stays, no temporary is left.
  const std::string path = tmp_path("bad.gguf");
  write_file_atomic(path, "old");
  w.add_tensor("short", GgmlType::kF32, {4}, std::string(12, '\0'));
  EXPECT_NE(error_of([&] { w.write(path); }).find("'short': 12 bytes produced, 16 expected"), std::string::npos);
  EXPECT_EQ(read_file(path), "old");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  // A directory that does not exist.
  GgufWriter ok;
  EXPECT_NE(error_of([&] { ok.write(tmp_path("no/such/dir.gguf")); }).find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace locr::io
