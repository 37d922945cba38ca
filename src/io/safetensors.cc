#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace locr::io {

using nlohmann::json;

namespace {
constexpr uint64_t kMaxHeader = 100ull << 20;  // 100 MiB, as the reference implementation caps it

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  fail(ErrorKind::kInvalidArgument, "invalid safetensors file ", path, ": ", what,
       ". The file may be truncated or corrupt; download it again.");
}
}  // namespace

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto f = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  f->map_ = MappedFile::open(path);
  const size_t size = f->map_->size();
  if (size < 8) bad(path, str("file is ", size, " bytes, shorter than the 8-byte header length"));
  uint64_t n = 0;
  std::memcpy(&n, f->map_->data(), 8);
  if (n > kMaxHeader) bad(path, str("header length ", n, " exceeds the 100 MiB limit"));
  if (8 + n > size) bad(path, str("header of ", n, " bytes runs past the end of the ", size, "-byte file"));
  f->data_start_ = 8 + n;
  json header;
  try {
    header = json::parse(f->map_->data() + 8, f->map_->data() + 8 + n);
  } catch (const json::exception& e) {
    bad(path, str("header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) bad(path, "header is not a JSON object");
  const size_t data_size = size - f->data_start_;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it.value().is_object())
        for (auto m = it.value().begin(); m != it.value().end(); ++m)
          if (m.value().is_string()) f->metadata_[m.key()] = m.value().get<std::string>();
      continue;
    }
    const json& v = it.value();
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      bad(path, str("entry '", it.key(), "' lacks dtype/shape/data_offsets"));
    TensorInfo info;
    info.file = path;
    const std::string dt = v["dtype"].is_string() ? v["dtype"].get<std::string>() : "";
    if (!parse_dtype(dt, &info.dtype))
      fail(ErrorKind::kUnsupported, "tensor '", it.key(), "' in ", path, " has unsupported dtype '", dt,
           "' (supported: F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
    if (!v["shape"].is_array()) bad(path, str("tensor '", it.key(), "' has a shape that is not a list"));
    // The byte count is computed without overflow: a shape whose product wraps around (e.g.
    // [2^32, 2^32]) would otherwise match a tiny byte range and describe a tensor far larger than
    // the data behind it.
    uint64_t nbytes = dtype_size(info.dtype);
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) bad(path, str("tensor '", it.key(), "' has a bad shape"));
      info.shape.push_back(d.get<int64_t>());
      if (__builtin_mul_overflow(nbytes, static_cast<uint64_t>(d.get<int64_t>()), &nbytes))
        bad(path, str("tensor '", it.key(), "' has a shape whose size overflows 64 bits"));
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad(path, str("tensor '", it.key(), "' has bad data_offsets"));
    info.begin = off[0].get<size_t>();
    info.end = off[1].get<size_t>();
    if (info.end < info.begin || info.end - info.begin != nbytes)
      bad(path, str("tensor '", it.key(), "' byte range [", info.begin, ", ", info.end, ") does not match shape ",
                    shape_to_string(info.shape), " of ", dtype_name(info.dtype)));
    if (info.end > data_size)
      bad(path, str("tensor '", it.key(), "' ends at byte ", info.end, " but the data section has only ", data_size,
                    " bytes (truncated file)"));
    f->tensors_.emplace(it.key(), std::move(info));
  }
  return f;
}

Tensor SafetensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(ErrorKind::kNotFound, "tensor '", name, "' not found in ", path());
  const TensorInfo& info = it->second;
  // The map is read-only (PROT_READ); callers must treat weight tensors as const.
  void* p = const_cast<char*>(map_->data() + data_start_ + info.begin);
  return Tensor(info.dtype, info.shape, p, map_);
}

SafetensorsSet SafetensorsSet::open_dir(const std::string& dir) {
  SafetensorsSet set;
  set.dir_ = dir;
  const std::string single = join_path(dir, "model.safetensors");
  const std::string index = join_path(dir, "model.safetensors.index.json");
  if (file_exists(index)) {
    json j;
    try {
      j = json::parse(read_file(index));
    } catch (const json::exception& e) {
      fail(ErrorKind::kInvalidArgument, "invalid JSON in ", index, ": ", e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      fail(ErrorKind::kInvalidArgument, index, " has no \"weight_map\" object");
    std::map<std::string, size_t> file_index;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail(ErrorKind::kInvalidArgument, index, ": weight_map value for '", it.key(), "' is not a string");
      const std::string shard = it.value().get<std::string>();
      if (!file_index.count(shard)) {
        const std::string p = join_path(dir, shard);
        if (!file_exists(p))
          fail(ErrorKind::kNotFound, "shard '", shard, "' listed in ", index, " is missing from ", dir);
        file_index[shard] = set.files_.size();
        set.files_.push_back(SafetensorsFile::open(p));
      }
      const size_t fi = file_index[shard];
      if (!set.files_[fi]->has(it.key()))
        fail(ErrorKind::kNotFound, "tensor '", it.key(), "' is listed in ", index, " but missing from shard ", shard);
      set.where_[it.key()] = fi;
    }
  } else if (file_exists(single)) {
    set.files_.push_back(SafetensorsFile::open(single));
    for (const auto& [name, info] : set.files_[0]->tensors()) set.where_[name] = 0;
  } else {
    fail(ErrorKind::kNotFound, "no model.safetensors or model.safetensors.index.json in ", dir,
         ": point --model at a Hugging Face model directory");
  }
  return set;
}

Tensor SafetensorsSet::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) fail(ErrorKind::kNotFound, "tensor '", name, "' not found in the checkpoint in ", dir_);
  return files_[it->second]->get(name);
}

const TensorInfo& SafetensorsSet::info(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) fail(ErrorKind::kNotFound, "tensor '", name, "' not found in the checkpoint in ", dir_);
  return files_[it->second]->tensors().at(name);
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  for (const auto& [n, i] : where_) out.push_back(n);
  return out;
}

std::vector<std::string> SafetensorsSet::names_by_file() const {
  std::vector<size_t> order(files_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return files_[a]->path() < files_[b]->path(); });
  std::vector<std::string> out;
  for (size_t i : order)
    for (const auto& [n, info] : files_[i]->tensors()) out.push_back(n);
  return out;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // align the data section to 8 bytes
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(ErrorKind::kIo, "cannot write ", tmp);
    const uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const auto& [name, t] : tensors) out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    if (!out) fail(ErrorKind::kIo, "write failed for ", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(ErrorKind::kIo, "cannot rename ", tmp, " to ", path);
}

}  // namespace locr::io
