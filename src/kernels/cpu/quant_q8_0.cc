#include "kernels/cpu/quant_q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/kernel_table.h"

namespace locr::kernels {

namespace {

constexpr int64_t kBlock = 32, kBlockBytes = 34;

void check_multiple(int64_t n, const char* what) {
  if (n % kBlock != 0) fail(ErrorKind::kInvalidArgument, what, ": ", n, " elements is not a whole number of Q8_0 blocks (32)");
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
    for (int j = 0; j < kBlock; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
  }
}

float dot_q8_0(CpuIsa isa, const void* a, const void* b, int64_t n) {
  check_multiple(n, "dot_q8_0");
  return cpu_kernel_table(isa)->dot_q8_0(a, b, n / kBlock);
}

void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y) {
  check_multiple(cols, "gemv_q8_0");
  const cpu::KernelTable* t = cpu_kernel_table(isa);
  thread_local std::vector<uint8_t> xq;
  xq.resize(static_cast<size_t>(cols / kBlock * kBlockBytes));
  quantize_row_q8_0(x, xq.data(), cols);
  const auto* row = static_cast<const uint8_t*>(w);
  const int64_t row_bytes = cols / kBlock * kBlockBytes;
  for (int64_t r = 0; r < rows; ++r, row += row_bytes) y[r] = t->dot_q8_0(row, xq.data(), cols / kBlock);
}

}  // namespace locr::kernels
