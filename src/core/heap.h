// Process-wide malloc settings for long-running commands (serve).
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

}  // namespace locr
