#include "kernels/cpu/quant_q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kernel_table.h"

namespace locr::kernels {

namespace {

constexpr int64_t kBlock = 32, kBlockBytes = 34;

void check_multiple(int64_t n, const char* what) {
  if (n % kBlock != 0) fail(ErrorKind::kInvalidArgument, what, ": ", n, " elements is not a whole number of Q8_0 blocks (32)");
}

// std::round (halves away from zero, as llama.cpp's roundf) without the libm call: v - trunc(v) is
// exact for |v| < 2^23, and quantized values stay within +-127.5.
inline int round_half_away(float v) {
  int i = static_cast<int>(v);
  const float f = v - static_cast<float>(i);
  if (f >= 0.5f) ++i;
  else if (f <= -0.5f) --i;
  return i;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* y, int64_t n) {
  check_multiple(n, "quantize_row_q8_0");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, out += kBlockBytes) {
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    const uint16_t h = f32_to_f16(d);
    std::memcpy(out, &h, 2);
    for (int j = 0; j < kBlock; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(round_half_away(x[j] * id)));
  }
}

float dot_q8_0(CpuIsa isa, const void* w, const void* x, int64_t n) {
  check_multiple(n, "dot_q8_0");
  float y = 0;
  cpu_kernel_table(isa)->gemm_q8_0(w, 0, 1, x, 0, 1, n / kBlock, &y, 1);
  return y;
}

void gemm_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y) {
  check_multiple(cols, "gemm_q8_0");
  if (rows <= 0 || m <= 0) return;
  const cpu::KernelTable* t = cpu_kernel_table(isa);
  const int64_t n_blocks = cols / kBlock, row_bytes = n_blocks * kBlockBytes;
  thread_local std::vector<uint8_t> xq;
  xq.resize(static_cast<size_t>(m * row_bytes));
  uint8_t* const xb = xq.data();  // the caller's buffer (a thread_local named inside a job is the worker's)
  ThreadPool& pool = ThreadPool::global();
  if (m == 1) {
    quantize_row_q8_0(x, xb, cols);
  } else {
    pool.parallel_for(m, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) quantize_row_q8_0(x + i * cols, xb + i * row_bytes, cols);
    });
  }
  // Blocks of 16 weight rows (a few tens of KB, cache-resident while up to 64 activation rows,
  // themselves L2-sized, stream past them).
  constexpr int64_t kRows = 16, kActRows = 64;
  const auto* wb = static_cast<const uint8_t*>(w);
  pool.parallel_for((rows + kRows - 1) / kRows, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t r0 = blk * kRows, nr = std::min(kRows, rows - r0);
      for (int64_t i0 = 0; i0 < m; i0 += kActRows)
        t->gemm_q8_0(wb + r0 * row_bytes, row_bytes, nr, xb + i0 * row_bytes, row_bytes, std::min(kActRows, m - i0),
                     n_blocks, y + i0 * rows + r0, rows);
    }
  });
}

void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y) {
  gemm_q8_0(isa, w, rows, cols, x, 1, y);
}

}  // namespace locr::kernels
