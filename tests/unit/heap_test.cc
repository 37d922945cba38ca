#include "core/heap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

namespace {

// The smaps entry of the mapping holding `p`: its "THPeligible:" value, or -1 when not found.
int thp_eligible(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool inside = false;
  int eligible = -1;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line ("Size:" and such do not parse)
      if (inside) break;  // the next mapping
      inside = addr >= lo && addr < hi;
      continue;
    }
    int v = 0;
    if (inside && std::sscanf(line, "THPeligible: %d", &v) == 1) eligible = v;
  }
  std::fclose(f);
  return eligible;
}

// transparent_hugepage/enabled's chosen mode ("always", "madvise", "never"), or "" when absent.
std::string thp_mode() {
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return "";
  char buf[128] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string s(buf, n);
  const size_t a = s.find('['), b = s.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : s.substr(a + 1, b - a - 1);
}

}  // namespace

TEST(Heap, AlignedAllocationsAreAlignedAndWritable) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{64} << 10, (size_t{2} << 20) - 64, size_t{2} << 20,
                   (size_t{5} << 20) + 3}) {
    auto* p = static_cast<unsigned char*>(locr::alloc_aligned(n));
    ASSERT_NE(p, nullptr) << n;
    const size_t align = n >= locr::kHugePageBytes && locr::huge_pages_enabled() ? locr::kHugePageBytes : 64;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << n << " bytes";
    std::memset(p, 0xA5, n);
    EXPECT_EQ(p[0], 0xA5);
    EXPECT_EQ(p[n - 1], 0xA5);
    std::free(p);
  }
}

// A buffer of 2 MiB or more is advised MADV_HUGEPAGE before it is touched: the kernel then lists
// its mapping as eligible for transparent huge pages (small buffers keep the C library's pages).
TEST(Heap, LargeBuffersMayUseTransparentHugePages) {
  const std::string mode = thp_mode();
  if (mode.empty() || mode == "never") GTEST_SKIP() << "transparent huge pages are off on this machine";
  if (!locr::huge_pages_enabled()) GTEST_SKIP() << "LOCR_HUGE_PAGES=0 in the environment";
#if defined(LOCR_SANITIZED_HEAP)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc malloc in this build";
#else
  const size_t n = size_t{6} << 20;
  auto* p = static_cast<unsigned char*>(locr::alloc_aligned(n));
  ASSERT_NE(p, nullptr);
  const int eligible = thp_eligible(p);
  std::memset(p, 1, n);
  std::free(p);
  ASSERT_NE(eligible, -1) << "no THPeligible line for the buffer's mapping in /proc/self/smaps";
  EXPECT_EQ(eligible, 1) << "transparent_hugepage mode " << mode;
#endif
}
