// Process-wide malloc settings for long-running commands (serve), and the allocator of the large
// buffers (weights packed at load, activations, kernel scratch).
//
// glibc raises its mmap threshold each time a large mmapped block is freed (up to 32 MiB), so
// after the first page image or vision buffer is freed, later buffers of that size come from the
// per-thread arenas instead, and an arena gives freed memory back only from its top and only once
// the free top exceeds twice that threshold. A server that keeps allocating and freeing
// multi-megabyte buffers on several threads (page renders on HTTP threads, patches and activations
// on the engine thread) then holds hundreds of MiB of freed, fragmented arena memory as RSS.
#pragma once

#include <cstddef>

namespace locr {

// Fixes the mmap threshold at `bytes` (glibc's initial 128 KiB by default), which also turns the
// dynamic adjustment of the threshold and of the trim threshold off: every buffer at least that
// large is mapped on its own and unmapped when freed. Does nothing where the C library is not
// glibc, or where MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES already choose a threshold. Returns
// whether it set the threshold.
bool pin_mmap_threshold(size_t bytes = size_t{128} << 10);

// Buffers of at least this many bytes are aligned to it and backed by transparent huge pages.
constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` (rounded up to 64) of memory aligned to 64 bytes, for std::free; null when out of memory.
// From kHugePageBytes up the buffer is aligned to 2 MiB and, before anything touches it, advised
// MADV_HUGEPAGE (Linux with transparent_hugepage "madvise" or "always"): a packed weight streamed by
// a decode step then costs one TLB entry per 2 MiB instead of per 4 KiB, and a fresh activation
// buffer one page fault per 2 MiB instead of 512 (each fault zeroes its page either way).
// LOCR_HUGE_PAGES=0 in the environment turns the advice off (small pages, as the C library gives).
void* alloc_aligned(size_t bytes);

// Whether alloc_aligned advises huge pages in this process (LOCR_HUGE_PAGES, read once).
bool huge_pages_enabled();

}  // namespace locr
