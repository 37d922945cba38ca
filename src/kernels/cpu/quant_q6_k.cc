#include "kernels/cpu/quant_q6_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/q6_k_block.h"
#include "kernels/cpu/quant_gemm.h"
#include "kernels/cpu/quant_q4_k.h"

namespace locr::kernels {

namespace {

using cpu::kQ6KBlock;
using cpu::kQ6KBlockBytes;
using cpu::kQ8KBlockBytes;

void check_multiple(int64_t n, const char* what) {
  if (n % kQ6KBlock != 0)
    fail(ErrorKind::kInvalidArgument, what, ": ", n, " elements is not a whole number of Q6_K super-blocks (256)");
}

// ggml's nearest_int: round to nearest, ties to even, by the 1.5 * 2^23 trick (|v| < 2^22).
inline int nearest_int(float v) {
  const float f = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &f, 4);
  return (i & 0x007fffff) - 0x00400000;
}

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS

// make_qx_quants(16, 32, x, L, rmse_type = 1, qw = NULL): the scale of one group of 16 (L in 0..63,
// offset 32) maximising sum(w x l)^2 / sum(w l^2) with w = x^2 over 18 trial scales around
// -32 / max. The float operations are written in llama.cpp's order (so the bytes match it).
float group_scale(const float* x, int8_t* L) {
  constexpr int n = 16, nmax = 32;
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace

void quantize_row_q6_K(const float* x, void* y, int64_t n) {
  check_multiple(n, "quantize_row_q6_K");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQ6KBlock; ++b, x += kQ6KBlock, out += kQ6KBlockBytes) {
    int8_t L[kQ6KBlock];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int g = 0; g < 16; ++g) {
      scales[g] = group_scale(x + 16 * g, L + 16 * g);
      const float a = std::fabs(scales[g]);
      if (a > max_abs_scale) {
        max_abs_scale = a;
        max_scale = scales[g];
      }
    }
    std::memset(out, 0, kQ6KBlockBytes);
    if (max_abs_scale < kGroupMaxEps) continue;  // all zero (f16 0 is the zero bytes)
    const float iscale = -128.f / max_scale;
    const uint16_t hd = f32_to_f16(1 / iscale);
    std::memcpy(out + cpu::kQ6KD, &hd, 2);
    auto* sc = reinterpret_cast<int8_t*>(out + cpu::kQ6KScales);
    for (int g = 0; g < 16; ++g) sc[g] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[g])));
    for (int g = 0; g < 16; ++g) {
      const float d = f16_to_f32(hd) * sc[g];
      if (d == 0) continue;  // the quants of this group keep make_qx_quants' values
      for (int i = 0; i < 16; ++i) {
        const int l = std::max(-32, std::min(31, nearest_int(x[16 * g + i] / d)));
        L[16 * g + i] = static_cast<int8_t>(l + 32);
      }
    }
    uint8_t* ql = out;
    uint8_t* qh = out + cpu::kQ6KQh;
    for (int j = 0; j < kQ6KBlock; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

namespace {

// Super-block b of an activation row in the kernels' layout (q6_k_block.h) from a GGUF Q8_K block.
void act_from_q8_k(const uint8_t* q8k, int64_t n_blocks, int64_t b, uint8_t* out) {
  std::memcpy(out + 256 * b, q8k + cpu::kQ8KQs, 256);
  std::memcpy(out + 256 * n_blocks + 4 * b, q8k, 4);
  for (int g = 0; g < 16; ++g) {
    int16_t bsum;
    std::memcpy(&bsum, q8k + cpu::kQ8KBsums + 2 * g, 2);
    const int32_t corr = -32 * int32_t{bsum};
    std::memcpy(out + 260 * n_blocks + 64 * b + 4 * g, &corr, 4);
  }
}

// quantize_row_q8_K's values in the kernels' activation layout (n / 256 * 324 bytes).
void quantize_act_q6_k(const float* x, uint8_t* out, int64_t n) {
  const int64_t n_blocks = n / kQ6KBlock;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t blk[kQ8KBlockBytes];
    quantize_row_q8_K(x + b * kQ6KBlock, blk, kQ6KBlock);
    act_from_q8_k(blk, n_blocks, b, out);
  }
}

// Groups g0..g1 of the packed matrix from GGUF rows.
void pack_groups(const uint8_t* w, int64_t rows, int64_t n_blocks, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t row_bytes = n_blocks * kQ6KBlockBytes;
  for (int64_t grp = g0; grp < g1; ++grp) {
    uint8_t* dst = out + grp * n_blocks * cpu::kQ6KGroupBlockBytes;
    std::memset(dst, 0, static_cast<size_t>(n_blocks * cpu::kQ6KGroupBlockBytes));  // pad rows: all zero
    for (int r = 0; r < cpu::kQ6KGroupRows && grp * cpu::kQ6KGroupRows + r < rows; ++r) {
      const uint8_t* src = w + (grp * cpu::kQ6KGroupRows + r) * row_bytes;
      for (int64_t b = 0; b < n_blocks; ++b, src += kQ6KBlockBytes) {
        uint8_t* blk = dst + b * cpu::kQ6KGroupBlockBytes;
        std::memcpy(blk + cpu::kQ6KGD + 2 * r, src + cpu::kQ6KD, 2);
        for (int g = 0; g < 16; ++g) {
          blk[cpu::kQ6KGScales + 16 * g + r] = src[cpu::kQ6KScales + g];
          uint8_t* q = blk + cpu::kQ6KGQuants + 192 * g;
          for (int c = 0; c < 4; ++c)
            for (int k = 0; k < 4; ++k) {
              const int v = cpu::q6_k_quant(src, 16 * g + 4 * c + k);
              q[64 * (c % 2) + 4 * r + k] |= static_cast<uint8_t>((v & 0xF) << (c < 2 ? 0 : 4));
              q[128 + 4 * r + k] |= static_cast<uint8_t>((v >> 4) << (2 * c));
            }
        }
      }
    }
  }
}

}  // namespace

std::unique_ptr<QuantPacked> pack_q6_k(const void* w, int64_t rows, int64_t cols) {
  check_multiple(cols, "pack_q6_k");
  const int64_t n_blocks = cols / kQ6KBlock;
  return cpu::pack_in_groups(DType::kQ6_K, rows, cols, n_blocks * cpu::kQ6KGroupBlockBytes, [&](int64_t g0, int64_t g1, uint8_t* out) {
    pack_groups(static_cast<const uint8_t*>(w), rows, n_blocks, g0, g1, out);
  });
}

void gemm_q6_K(CpuIsa isa, const QuantPacked& w, const float* x, int64_t m, float* y) {
  if (w.rows() <= 0 || m <= 0) return;
  const int64_t cols = w.cols();
  cpu::packed_gemm(cpu_kernel_table(isa)->gemm_q6_k, w, kQ6KBlock, cpu::kQ6KGroupBlockBytes, cpu::kQ6KActBlockBytes, x, m, y,
                   [&](const float* xr, uint8_t* out) { quantize_act_q6_k(xr, out, cols); });
}

void gemm_q6_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y) {
  check_multiple(cols, "gemm_q6_K");
  if (rows <= 0 || m <= 0) return;
  gemm_q6_K(isa, *pack_q6_k(w, rows, cols), x, m, y);
}

void gemv_q6_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y) {
  gemm_q6_K(isa, w, rows, cols, x, 1, y);
}

float dot_q6_K(CpuIsa isa, const void* w, const void* x, int64_t n) {
  check_multiple(n, "dot_q6_K");
  const int64_t n_blocks = n / kQ6KBlock;
  const auto packed = pack_q6_k(w, 1, n);
  std::vector<uint8_t> act(static_cast<size_t>(n_blocks * cpu::kQ6KActBlockBytes));
  for (int64_t b = 0; b < n_blocks; ++b) act_from_q8_k(static_cast<const uint8_t*>(x) + b * kQ8KBlockBytes, n_blocks, b, act.data());
  float y = 0;
  cpu_kernel_table(isa)->gemm_q6_k(packed->data(), 1, 1, act.data(), 1, n_blocks, &y, 1);
  return y;
}

}  // namespace locr::kernels
