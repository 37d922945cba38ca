// The safetensors header parser (io/safetensors.cc) on any file contents (written to a memfd and
// opened by path, as a checkpoint is): either locr::Error, or every tensor's byte range lies in
// the data section and holds exactly shape x dtype bytes (computed without overflow), so get()
// and reading each tensor's first and last byte stay inside the map.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "fuzz_util.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr;
  const int fd = ::memfd_create("safetensors_fuzz", MFD_CLOEXEC);
  LOCR_FUZZ_CHECK(fd >= 0);
  for (size_t off = 0; off < size;) {
    const ssize_t n = ::write(fd, data + off, size - off);
    LOCR_FUZZ_CHECK(n > 0);
    off += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    auto f = io::SafetensorsFile::open(path);
    ::close(fd);
    uint64_t header = 0;
    std::memcpy(&header, data, 8);
    const size_t data_size = size - 8 - header;
    for (const auto& [name, info] : f->tensors()) {
      LOCR_FUZZ_CHECK(info.begin <= info.end && info.end <= data_size);
      uint64_t bytes = dtype_size(info.dtype);
      for (int64_t d : info.shape) {
        LOCR_FUZZ_CHECK(d >= 0);
        LOCR_FUZZ_CHECK(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes));
      }
      LOCR_FUZZ_CHECK(bytes == info.end - info.begin);
      const Tensor t = f->get(name);
      LOCR_FUZZ_CHECK(t.nbytes() == bytes);
      if (bytes > 0) {
        const volatile char* p = t.data<char>();
        (void)p[0];
        (void)p[bytes - 1];
      }
    }
  } catch (const Error& e) {
    ::close(fd);
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
  }
  return 0;
}
