#include "core/heap.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace locr {

bool pin_mmap_threshold(size_t bytes) {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_")) return false;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "mmap_threshold")) return false;
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes)) == 1;
#else
  (void)bytes;
  return false;
#endif
}

bool huge_pages_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("LOCR_HUGE_PAGES");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

void* alloc_aligned(size_t bytes) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  if (rounded < kHugePageBytes || !huge_pages_enabled()) return std::aligned_alloc(64, rounded);
  const size_t whole = (rounded + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, whole);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advisory: without transparent huge pages (or with "never") the call fails and the buffer keeps
  // small pages. The C library touched at most its header before p, outside [p, p + whole).
  if (p) ::madvise(p, whole, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace locr
