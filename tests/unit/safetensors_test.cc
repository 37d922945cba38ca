#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/file.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace locr::io {
namespace {

std::string tmpdir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("locr_st_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write_raw(const std::string& path, const std::string& header, size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  out << std::string(data_bytes, '\0');
}

ErrorKind error_kind_of(const std::function<void()>& fn, std::string* msg) {
  try {
    fn();
  } catch (const Error& e) {
    *msg = e.what();
    return e.kind();
  }
  *msg = "";
  return ErrorKind::kInternal;
}

TEST(Safetensors, RoundTripAllDtypes) {
  const std::string dir = tmpdir("rt");
  Tensor a = Tensor::empty(DType::kF32, {2, 3});
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = i * 0.5f;
  Tensor b = Tensor::empty(DType::kBF16, {4});
  for (int i = 0; i < 4; ++i) b.data<uint16_t>()[i] = f32_to_bf16(i - 1.5f);
  Tensor c = Tensor::empty(DType::kI64, {3});
  for (int i = 0; i < 3; ++i) c.data<int64_t>()[i] = 151655 + i;
  Tensor d = Tensor::empty(DType::kF16, {1, 2});
  d.data<uint16_t>()[0] = f32_to_f16(2.0f);
  d.data<uint16_t>()[1] = f32_to_f16(-0.25f);
  write_safetensors(dir + "/model.safetensors", {{"a", a}, {"b", b}, {"c", c}, {"d", d}}, {{"format", "pt"}});
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  Tensor a2 = f->get("a");
  EXPECT_EQ(a2.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a2.data<float>()[5], 2.5f);
  EXPECT_EQ(f->get("b").to_f32().data<float>()[0], -1.5f);
  EXPECT_EQ(f->get("c").data<int64_t>()[2], 151657);
  EXPECT_EQ(f->get("d").to_f32().data<float>()[1], -0.25f);
  std::string msg;
  EXPECT_EQ(error_kind_of([&] { f->get("zz"); }, &msg), ErrorKind::kNotFound);
  EXPECT_NE(msg.find("'zz'"), std::string::npos);
  // The directory loader finds the single file.
  auto set = SafetensorsSet::open_dir(dir);
  EXPECT_TRUE(set.has("a"));
  EXPECT_EQ(set.names().size(), 4u);
}

TEST(Safetensors, ShardedIndex) {
  const std::string dir = tmpdir("shard");
  Tensor a = Tensor::zeros(DType::kF32, {2});
  Tensor b = Tensor::zeros(DType::kF32, {3});
  write_safetensors(dir + "/model-00001-of-00002.safetensors", {{"x.a", a}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {{"x.b", b}});
  {
    std::ofstream idx(dir + "/model.safetensors.index.json");
    idx << R"({"metadata": {"total_size": 20}, "weight_map": {"x.a": "model-00001-of-00002.safetensors",
             "x.b": "model-00002-of-00002.safetensors"}})";
  }
  auto set = SafetensorsSet::open_dir(dir);
  EXPECT_EQ(set.get("x.b").numel(), 3);
  EXPECT_EQ(set.info("x.a").shape, std::vector<int64_t>{2});
  // A shard listed but absent.
  {
    std::ofstream idx(dir + "/model.safetensors.index.json");
    idx << R"({"weight_map": {"x.a": "model-00003-of-00002.safetensors"}})";
  }
  std::string msg;
  EXPECT_EQ(error_kind_of([&] { SafetensorsSet::open_dir(dir); }, &msg), ErrorKind::kNotFound);
  EXPECT_NE(msg.find("model-00003-of-00002.safetensors"), std::string::npos) << msg;
  // A tensor listed in the index but not in its shard.
  {
    std::ofstream idx(dir + "/model.safetensors.index.json");
    idx << R"({"weight_map": {"x.zz": "model-00001-of-00002.safetensors"}})";
  }
  EXPECT_EQ(error_kind_of([&] { SafetensorsSet::open_dir(dir); }, &msg), ErrorKind::kNotFound);
  EXPECT_NE(msg.find("x.zz"), std::string::npos) << msg;
}

TEST(Safetensors, NoCheckpointInDirectory) {
  const std::string dir = tmpdir("empty");
  std::string msg;
  EXPECT_EQ(error_kind_of([&] { SafetensorsSet::open_dir(dir); }, &msg), ErrorKind::kNotFound);
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos);
}

TEST(Safetensors, CorruptFilesGiveClearErrors) {
  const std::string dir = tmpdir("bad");
  const std::string p = dir + "/m.safetensors";
  std::string msg;
  {  // shorter than the length prefix
    std::ofstream(p, std::ios::binary) << "abc";
  }
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("8-byte"), std::string::npos) << msg;
  // header length beyond the file
  write_raw(p, "{}", 0);
  {
    std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
    const uint64_t n = 4096;
    f.write(reinterpret_cast<const char*>(&n), 8);
  }
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("runs past the end"), std::string::npos) << msg;
  // not JSON
  write_raw(p, "{not json", 0);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  // truncated data section
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  // byte range inconsistent with the shape
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}})", 16);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("does not match shape"), std::string::npos) << msg;
  // a shape whose byte count wraps around 2^64 (2^32 * 2^32 * 4 bytes = 0 mod 2^64) must not match
  // an empty byte range (found by tests/fuzz/safetensors_fuzz.cc)
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;
  write_raw(p, R"({"w": {"dtype": "U8", "shape": [4611686018427387904, 8], "data_offsets": [0, 0]}})", 0);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;
  // a shape that is not a list (nlohmann would iterate a number as a one-element list)
  write_raw(p, R"({"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})", 16);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("not a list"), std::string::npos) << msg;
  // unsupported dtype
  write_raw(p, R"({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", 4);
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(p); }, &msg), ErrorKind::kUnsupported);
  EXPECT_NE(msg.find("F8_E4M3"), std::string::npos) << msg;
  // missing file
  EXPECT_EQ(error_kind_of([&] { SafetensorsFile::open(dir + "/nope.safetensors"); }, &msg), ErrorKind::kNotFound);
}

}  // namespace
}  // namespace locr::io
