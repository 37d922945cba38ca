// How the quantized GEMM entries of kernel_table.h (gemm_q8_0, gemm_q4_k, gemm_q6_k) walk their n x m
// output: tiles of 4 weight rows x 2 activation rows (4 x 1 for a last odd row), the remainders one
// weight row at a time. `tile(nr, mx, w, x, c, w_end)` computes one tile, nr and mx given as
// std::integral_constant so it can instantiate its kernel on them. Every element is the same
// canonical dot product whatever the tiling, so the result does not depend on n or m.
//
// One activation row (decode's GEMV), or a decode batch of up to 8, reads the weights from DRAM:
// there the tile prefetches the bytes after it (the next tile: rows are contiguous) while it works,
// through a WeightStream bounded by w_end (null in the GEMM tiles, whose weights stay in cache). The hardware
// prefetchers do not follow four rows read side by side: measured on Zen 5, one thread, Q8_0 at
// K = 1024 streamed 9.4 GB/s from DRAM without it and 33.6 GB/s with it (49 GB/s from cache).
#pragma once

#include <cstdint>
#include <type_traits>

namespace locr::kernels::cpu {

// The bytes [from, end) prefetched in order, `per_block` more each time block() is called: a tile of
// NR rows and n_blocks blocks per row calls it once per block with per_block = NR * block bytes, so
// the next tile is in cache when it starts. A null `end` (a GEMM tile) prefetches nothing. Only a
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

template <class Tile>
inline void walk_quant_tiles(const uint8_t* w, int64_t w_stride, int64_t n, const uint8_t* x, int64_t x_stride,
                             int64_t m, float* c, int64_t ldc, Tile tile) {
  using R4 = std::integral_constant<int, 4>;
  using R1 = std::integral_constant<int, 1>;
  using M2 = std::integral_constant<int, 2>;
  using M1 = std::integral_constant<int, 1>;
  // The GEMV and a decode batch of a few rows stream the weights from DRAM: the first pass over them
  // prefetches (later passes find them in the last-level cache, where prefetching costs nothing).
  const uint8_t* w_end = m <= 8 ? w + n * w_stride : nullptr;
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) {
    int64_t r = 0;
    for (; r + 4 <= n; r += 4) tile(R4{}, M2{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r, w_end);
    for (; r < n; ++r) tile(R1{}, M2{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r, w_end);
  }
  for (; i < m; ++i) {
    int64_t r = 0;
    for (; r + 4 <= n; r += 4) tile(R4{}, M1{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r, w_end);
    for (; r < n; ++r) tile(R1{}, M1{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r, w_end);
  }
}

}  // namespace locr::kernels::cpu
