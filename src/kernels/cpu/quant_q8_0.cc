#include "kernels/cpu/quant_q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_gemm.h"

namespace locr::kernels {

namespace {

constexpr int64_t kBlock = 32, kBlockBytes = 34;

void check_multiple(int64_t n, const char* what) {
  if (n % kBlock != 0) fail(ErrorKind::kInvalidArgument, what, ": ", n, " elements is not a whole number of Q8_0 blocks (32)");
}

// std::round (halves away from zero, as llama.cpp's roundf) without the libm call: v - trunc(v) is
// exact for |v| < 2^23, and quantized values stay within +-127.5. Without branches: on activations
// the fraction is random, and mispredicted branches made this loop most of a large-M Q8_0 GEMM.
inline int round_half_away(float v) {
  const int i = static_cast<int>(v);
  const float f = v - static_cast<float>(i);
  return i + static_cast<int>(f >= 0.5f) - static_cast<int>(f <= -0.5f);
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
  cpu::quantized_gemm(
      static_cast<const uint8_t*>(w), rows, row_bytes, x, cols, m, row_bytes, y,
      [&](const float* xr, uint8_t* out) { quantize_row_q8_0(xr, out, cols); },
      [&](const uint8_t* wt, int64_t nr, const uint8_t* xt, int64_t mr, float* yt) {
        t->gemm_q8_0(wt, row_bytes, nr, xt, row_bytes, mr, n_blocks, yt, rows);
      });
}

void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y) {
  gemm_q8_0(isa, w, rows, cols, x, 1, y);
}

}  // namespace locr::kernels
