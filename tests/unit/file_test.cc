#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "io/file.h"

namespace locr::io {
namespace {

TEST(ReleasePages, MappedAndHeapMemoryKeepTheirContents) {
  const std::string path = (std::filesystem::temp_directory_path() / ("locr_pages_" + std::to_string(::getpid()))).string();
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + 7);
  write_file_atomic(path, data);
  auto m = MappedFile::open(path);
  ASSERT_EQ(std::string(m->data(), m->size()), data);
  release_pages(m->data() + 100, m->size() - 200);  // partial pages at both ends stay
  EXPECT_EQ(std::string(m->data(), m->size()), data);  // re-read from the file
  // Anonymous memory is never zeroed (MADV_PAGEOUT, not MADV_DONTNEED).
  std::vector<float> heap(1 << 18, 3.5f);
  release_pages(heap.data(), heap.size() * sizeof(float));
  for (float v : heap) ASSERT_EQ(v, 3.5f);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace locr::io
