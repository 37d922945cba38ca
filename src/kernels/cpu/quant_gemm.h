// The threaded driver the quantized GEMMs share (quant_q8_0.cc, quant_q4_k.cc): the activation rows
// quantized once into a per-thread buffer (in parallel when there are several), then tiles of
// tile_rows weight rows (16 or 64: tens of KB, cache-resident while up to 64 activation rows,
// themselves L2-sized, stream past them) spread over the thread pool; with at most 64 activation
// rows, each thread's chunk of rows in one call (the weights are read once: one run for the tile's
// prefetch).
// Each output element is written by one tile call, so the result does not depend on the thread
// count or the tiling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace locr::kernels::cpu {

// y[m, rows] = x[m, cols] . W[rows, cols]^T for a block-quantized W of w_row bytes per row:
//   quantize_act(const float* x_row, uint8_t* out) writes one activation row of x_row bytes;
//   tile(w, nr, xq, mr, y) computes nr weight rows against mr quantized activation rows into y
//   (row stride `rows`), reading w with stride w_row and xq with stride x_row.
template <class QuantizeAct, class Tile>
void quantized_gemm(const uint8_t* w, int64_t rows, int64_t w_row, const float* x, int64_t cols, int64_t m,
                    int64_t x_row, float* y, int64_t tile_rows, QuantizeAct quantize_act, Tile tile) {
  if (rows <= 0 || m <= 0) return;
  thread_local std::vector<uint8_t> xq;
  xq.resize(static_cast<size_t>(m * x_row));
  uint8_t* const xb = xq.data();  // the caller's buffer (a thread_local named inside a job is the worker's)
  ThreadPool& pool = ThreadPool::global();
  if (m == 1) {
    quantize_act(x, xb);
  } else {
    pool.parallel_for(m, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) quantize_act(x + i * cols, xb + i * x_row);
    });
  }
  const int64_t kRows = tile_rows;
  constexpr int64_t kActRows = 64;
  pool.parallel_for((rows + kRows - 1) / kRows, 1, [&](int64_t b, int64_t e, int) {
    if (m <= kActRows) {  // one pass over the chunk's rows: a GEMV's weights stream as one run
      const int64_t r0 = b * kRows;
      tile(w + r0 * w_row, std::min(e * kRows, rows) - r0, xb, m, y + r0);
      return;
    }
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t r0 = blk * kRows, nr = std::min(kRows, rows - r0);
      for (int64_t i0 = 0; i0 < m; i0 += kActRows)
        tile(w + r0 * w_row, nr, xb + i0 * x_row, std::min(kActRows, m - i0), y + i0 * rows + r0);
    }
  });
}

}  // namespace locr::kernels::cpu
