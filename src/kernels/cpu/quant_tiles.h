// How the quantized GEMM entries of kernel_table.h (gemm_q8_0, gemm_q4_k) walk their n x m output:
// tiles of 4 weight rows x 2 activation rows (4 x 1 for a last odd row), the remainders one weight
// row at a time. `tile(nr, mx, w, x, c)` computes one tile, nr and mx given as
// std::integral_constant so it can instantiate its kernel on them. Every element is the same
// canonical dot product whatever the tiling, so the result does not depend on n or m.
#pragma once

#include <cstdint>
#include <type_traits>

namespace locr::kernels::cpu {

template <class Tile>
inline void walk_quant_tiles(const uint8_t* w, int64_t w_stride, int64_t n, const uint8_t* x, int64_t x_stride,
                             int64_t m, float* c, int64_t ldc, Tile tile) {
  using R4 = std::integral_constant<int, 4>;
  using R1 = std::integral_constant<int, 1>;
  using M2 = std::integral_constant<int, 2>;
  using M1 = std::integral_constant<int, 1>;
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) {
    int64_t r = 0;
    for (; r + 4 <= n; r += 4) tile(R4{}, M2{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r);
    for (; r < n; ++r) tile(R1{}, M2{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r);
  }
  for (; i < m; ++i) {
    int64_t r = 0;
    for (; r + 4 <= n; r += 4) tile(R4{}, M1{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r);
    for (; r < n; ++r) tile(R1{}, M1{}, w + r * w_stride, x + i * x_stride, c + i * ldc + r);
  }
}

}  // namespace locr::kernels::cpu
