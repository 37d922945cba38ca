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
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/quant_packed.h"

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

// The kernel-table entries on weights packed in groups of 16 rows (gemm_q8_0, gemm_q4_k, gemm_q6_k).
using PackedGemm = void (*)(const uint8_t* w, int64_t groups, int64_t rows, const uint8_t* x, int64_t m,
                            int64_t n_blocks, float* c, int64_t ldc);

// y[m, rows] = x[m, cols] . W^T for W packed in groups of 16 rows (quant_packed.h), group_block
// bytes per group and block of `block` columns, against activation rows of act_block bytes per
// block: quantized_gemm handing out whole groups, in tiles of 64 rows past 64 activation rows (row
// r0, a multiple of 16, starts r0 / 16 group strides in).
template <class QuantizeAct>
void packed_gemm(PackedGemm kernel, const QuantPacked& w, int64_t block, int64_t group_block, int64_t act_block,
                 const float* x, int64_t m, float* y, QuantizeAct quantize_act) {
  const int64_t rows = w.rows(), cols = w.cols(), n_blocks = cols / block;
  quantized_gemm(w.data(), rows, n_blocks * group_block / 16, x, cols, m, n_blocks * act_block, y, /*tile_rows=*/64,
                 quantize_act, [&](const uint8_t* wt, int64_t nr, const uint8_t* xt, int64_t mr, float* yt) {
                   kernel(wt, quant_groups_of(nr), nr, xt, mr, n_blocks, yt, rows);
                 });
}

// A rows x cols matrix packed in groups of 16 rows of group_bytes each over the thread pool:
// pack_groups(g0, g1, out) writes groups g0..g1 into the packed bytes.
template <class PackGroups>
std::unique_ptr<QuantPacked> pack_in_groups(DType dtype, int64_t rows, int64_t cols, int64_t group_bytes,
                                            PackGroups pack_groups) {
  auto p = std::make_unique<QuantPacked>(dtype, rows, cols, static_cast<size_t>(quant_groups_of(rows) * group_bytes));
  ThreadPool::global().parallel_for(quant_groups_of(rows), 1,
                                    [&](int64_t b, int64_t e, int) { pack_groups(b, e, p->data()); });
  return p;
}

}  // namespace locr::kernels::cpu
