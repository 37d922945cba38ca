// How the quantized GEMM kernels of kernel_table.h (gemm_q8_0, gemm_q4_k, gemm_q6_k, on weights
// packed in groups of 16 rows) walk their output, and how they prefetch the weights. Every element
// is the same canonical dot product whatever the tiling, so the result does not depend on the
// number of rows nor on m.
//
// One activation row (decode's GEMV), or a decode batch of a few, reads the weights from DRAM:
// there a tile prefetches the bytes after it (the next tile: groups are contiguous) while it works,
// through a WeightStream bounded by w_end (null in the tiles after the first pass over a group,
// whose weights are in cache by then). The hardware prefetchers do not follow several rows read
// side by side: measured on Zen 5, one thread, Q8_0 at K = 1024 (then 4 rows at a time) streamed
// 9.4 GB/s from DRAM without it and 33.6 GB/s with it (49 GB/s from cache).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace locr::kernels::cpu {

// The bytes [from, end) prefetched in order, `per_block` more each time block() is called: a tile of
// NG groups calls it once per block with per_block = NG * a group's block bytes, so the next tile
// is in cache when it starts. A null `end` prefetches nothing. Only a
// hint: it changes no result.
// Locality: __builtin_prefetch's hint (3: into L1; 2: into L2, for a next tile larger than L1).
template <int Locality = 3>
class WeightStream {
 public:
  WeightStream(const uint8_t* from, const uint8_t* end, int64_t per_block)
      : line_(align_line(from)), target_(from), end_(end), per_block_(per_block) {}
  void block() {
    if (!end_) return;
    target_ += per_block_;
    const uint8_t* to = target_ < end_ ? target_ : end_;
    for (; line_ < to; line_ += 64) __builtin_prefetch(line_, 0, Locality);
  }

 private:
  static const uint8_t* align_line(const uint8_t* p) {
    return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63});
  }
  const uint8_t* line_;
  const uint8_t* target_;
  const uint8_t* end_;
  int64_t per_block_;
};

// The walk of the 512-bit kernels on weights packed in groups of 16 rows (q8_0_avx512.h,
// q4_k_avx512.h): tiles of two groups (one left over) walked once, each against every activation
// row in chunks of 4 (the last 1..3) while it is in cache, so the weights stream from memory once
// (prefetched ahead by the first chunk); eight float and eight integer accumulators at most. The
// GEMV and two activation rows take groups four at a time.
// `tile(ng, mx, g, i, last_rows, prefetch)`: groups g..g+ng-1 against activation rows i..i+mx-1
// (ng, mx as std::integral_constant), the last group holding last_rows rows; prefetch: the first
// chunk of the tile's groups, which should prefetch the weights after them.
template <class Tile>
inline void walk_group_tiles(int64_t groups, int64_t rows, int64_t m, Tile tile) {
  const auto tiles = [&](auto ng, int64_t g) {
    constexpr int kNg = decltype(ng)::value;
    const int last_rows = static_cast<int>(std::min<int64_t>(16, rows - 16 * (g + kNg - 1)));
    const auto run = [&](auto mx, int64_t i) { tile(ng, mx, g, i, last_rows, i == 0); };
    int64_t i = 0;
    if constexpr (kNg <= 2) {  // four groups take activation rows in pairs (eight accumulators each way)
      for (; i + 4 <= m; i += 4) run(std::integral_constant<int, 4>{}, i);
      if (m - i == 3) run(std::integral_constant<int, 3>{}, i);
    }
    for (; i + 2 <= m; i += 2) run(std::integral_constant<int, 2>{}, i);
    if (m - i == 1) run(std::integral_constant<int, 1>{}, i);
  };
  const auto walk = [&](auto ng) {
    constexpr int kNg = decltype(ng)::value;
    int64_t g = 0;
    for (; g + kNg <= groups; g += kNg) tiles(ng, g);
    for (; g < groups; ++g) tiles(std::integral_constant<int, 1>{}, g);
  };
  if (m <= 2) {
    walk(std::integral_constant<int, 4>{});
  } else {
    walk(std::integral_constant<int, 2>{});
  }
}

}  // namespace locr::kernels::cpu
