#include "kernels/cpu/quant_q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/q8_0_block.h"
#include "kernels/cpu/quant_gemm.h"

namespace locr::kernels {

namespace {

using cpu::kQ8ActBlockBytes;
using cpu::kQ8Block;
using cpu::kQ8BlockBytes;
using cpu::kQ8GroupBlockBytes;
using cpu::kQ8GroupRows;

void check_multiple(int64_t n, const char* what) {
  if (n % kQ8Block != 0) fail(ErrorKind::kInvalidArgument, what, ": ", n, " elements is not a whole number of Q8_0 blocks (32)");
}

// std::round (halves away from zero, as llama.cpp's roundf) without the libm call: v - trunc(v) is
// exact for |v| < 2^23, and quantized values stay within +-127.5. Without branches: on activations
// the fraction is random, and mispredicted branches made this loop most of a large-M Q8_0 GEMM.
inline int round_half_away(float v) {
  const int i = static_cast<int>(v);
  const float f = v - static_cast<float>(i);
  return i + static_cast<int>(f >= 0.5f) - static_cast<int>(f <= -0.5f);
}

// One block of llama.cpp's quantize_row_q8_0: the f16 scale, and the 32 quants into q.
uint16_t quantize_block(const float* x, int8_t* q) {
  float amax = 0;
  for (int j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQ8Block; ++j) q[j] = static_cast<int8_t>(round_half_away(x[j] * id));
  return f32_to_f16(d);
}

// The activation row of q8_0_block.h (Q8Act) from quants and f16 scales, n_blocks blocks.
template <class Block>
void write_act(int64_t n_blocks, uint8_t* out, Block block) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    auto* q = reinterpret_cast<int8_t*>(out + 32 * b);
    const uint16_t h = block(b, q);
    const float d = f16_to_f32(h);
    int32_t sum = 0;
    for (int j = 0; j < kQ8Block; ++j) sum += q[j];
    const int32_t corr = -128 * sum;
    std::memcpy(out + 32 * n_blocks + 4 * b, &d, 4);
    std::memcpy(out + 36 * n_blocks + 4 * b, &corr, 4);
  }
}

// quantize_row_q8_0's values in the kernels' activation layout (n_blocks * 40 bytes).
void quantize_act_q8_0(const float* x, uint8_t* out, int64_t n) {
  write_act(n / kQ8Block, out, [&](int64_t b, int8_t* q) { return quantize_block(x + b * kQ8Block, q); });
}

// Groups g0..g1 of the packed matrix from GGUF rows.
void pack_groups(const uint8_t* w, int64_t rows, int64_t n_blocks, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t row_bytes = n_blocks * kQ8BlockBytes, g_stride = n_blocks * kQ8GroupBlockBytes;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* dst = out + g * g_stride;
    std::memset(dst, 0, static_cast<size_t>(32 * n_blocks));  // pad rows: scale 0
    std::memset(dst + 32 * n_blocks, 0x80, static_cast<size_t>(512 * n_blocks));  // and quants 0
    for (int r = 0; r < kQ8GroupRows && g * kQ8GroupRows + r < rows; ++r) {
      const uint8_t* src = w + (g * kQ8GroupRows + r) * row_bytes;
      for (int64_t b = 0; b < n_blocks; ++b, src += kQ8BlockBytes) {
        std::memcpy(dst + 32 * b + 2 * r, src, 2);
        uint8_t* q = dst + 32 * n_blocks + 512 * b + 4 * r;
        for (int k = 0; k < kQ8Block; ++k) q[(k / 4) * 64 + k % 4] = src[2 + k] ^ 0x80;
      }
    }
  }
}

}  // namespace

void quantize_row_q8_0(const float* x, void* y, int64_t n) {
  check_multiple(n, "quantize_row_q8_0");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQ8Block; ++b, x += kQ8Block, out += kQ8BlockBytes) {
    const uint16_t h = quantize_block(x, reinterpret_cast<int8_t*>(out + 2));
    std::memcpy(out, &h, 2);
  }
}

std::unique_ptr<QuantPacked> pack_q8_0(const void* w, int64_t rows, int64_t cols) {
  check_multiple(cols, "pack_q8_0");
  const int64_t n_blocks = cols / kQ8Block;
  return cpu::pack_in_groups(DType::kQ8_0, rows, cols, n_blocks * kQ8GroupBlockBytes,
                             [&](int64_t g0, int64_t g1, uint8_t* out) {
                               pack_groups(static_cast<const uint8_t*>(w), rows, n_blocks, g0, g1, out);
                             });
}

void gemm_q8_0(CpuIsa isa, const QuantPacked& w, const float* x, int64_t m, float* y) {
  if (w.rows() <= 0 || m <= 0) return;
  const int64_t cols = w.cols();
  cpu::packed_gemm(cpu_kernel_table(isa)->gemm_q8_0, w, kQ8Block, kQ8GroupBlockBytes, kQ8ActBlockBytes, x, m, y,
                   [&](const float* xr, uint8_t* out) { quantize_act_q8_0(xr, out, cols); });
}

void gemm_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y) {
  check_multiple(cols, "gemm_q8_0");
  if (rows <= 0 || m <= 0) return;
  gemm_q8_0(isa, *pack_q8_0(w, rows, cols), x, m, y);
}

void gemv_q8_0(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y) {
  gemm_q8_0(isa, w, rows, cols, x, 1, y);
}

float dot_q8_0(CpuIsa isa, const void* w, const void* x, int64_t n) {
  check_multiple(n, "dot_q8_0");
  const int64_t n_blocks = n / kQ8Block;
  const auto packed = pack_q8_0(w, 1, n);
  std::vector<uint8_t> act(static_cast<size_t>(n_blocks * kQ8ActBlockBytes));
  const auto* xb = static_cast<const uint8_t*>(x);
  write_act(n_blocks, act.data(), [&](int64_t b, int8_t* q) {
    std::memcpy(q, xb + b * kQ8BlockBytes + 2, kQ8Block);
    uint16_t h;
    std::memcpy(&h, xb + b * kQ8BlockBytes, 2);
    return h;
  });
  float y = 0;
  cpu_kernel_table(isa)->gemm_q8_0(packed->data(), 1, 1, act.data(), 1, n_blocks, &y, 1);
  return y;
}

}  // namespace locr::kernels
