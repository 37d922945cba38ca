// File helpers: whole-file reads, atomic writes, read-only memory maps.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace locr::io {

bool file_exists(const std::string& path);
bool is_directory(const std::string& path);
// Reads a whole file; throws Error(kNotFound / kIo) naming the path.
std::string read_file(const std::string& path);
// Writes to `path.tmp` then renames, so readers never see a half-written file.
void write_file_atomic(const std::string& path, const std::string& data);
std::string join_path(const std::string& a, const std::string& b);

// Asks the kernel to reclaim the pages of [p, p + n) now (whole pages inside the range only).
// Safe on any memory: file-backed pages are re-read on the next touch, anonymous ones are kept or
// swapped, never lost (MADV_PAGEOUT). Used to drop checkpoint pages once a backend has packed them.
void release_pages(const void* p, size_t n);

// A read-only private memory map of a whole file. Pages are loaded on first touch.
class MappedFile {
 public:
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace locr::io
