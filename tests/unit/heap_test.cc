#include "core/heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOCR_SANITIZED_HEAP 1  // the sanitizer's allocator replaces glibc malloc (no mallopt)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LOCR_SANITIZED_HEAP 1
#endif
#endif

namespace {

#if defined(__GLIBC__) && !defined(LOCR_SANITIZED_HEAP)
void* volatile g_sink;  // keeps the compiler from pairing and eliding malloc/free

void* touch(size_t n) {
  void* p = std::malloc(n);
  std::memset(p, 1, n);
  g_sink = p;
  return p;
}

// In a fresh process (a heap with no large free chunk yet, as locr serve's at start): pins the
// threshold, frees an 8 MiB block, then checks that a 1 MiB buffer is mapped on its own.
[[noreturn]] void pin_then_allocate() {
  if (!locr::pin_mmap_threshold()) std::_Exit(2);
  std::free(touch(size_t{8} << 20));  // would raise a dynamic threshold to 8 MiB
  const size_t before = mallinfo2().hblks;
  void* p = touch(size_t{1} << 20);
  const bool mapped = mallinfo2().hblks == before + 1;
  std::free(p);
  std::_Exit(mapped && mallinfo2().hblks == before ? 0 : 1);
}
#endif

}  // namespace

// After a large mapped block is freed, glibc's dynamic threshold would serve a 1 MiB buffer from
// an arena (kept as RSS once freed); with the threshold pinned it is mapped on its own.
TEST(Heap, PinnedMmapThresholdMapsLargeBuffersAfterALargerFree) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#elif defined(LOCR_SANITIZED_HEAP)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc malloc in this build";
#else
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("GLIBC_TUNABLES"))
    GTEST_SKIP() << "the environment sets malloc tunables";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-executes the binary: a fresh heap
  EXPECT_EXIT(pin_then_allocate(), ::testing::ExitedWithCode(0), "")
      << "exit 1: the 1 MiB buffer after an 8 MiB free came from the arena, not its own mapping";
#endif
}
