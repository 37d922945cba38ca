#include "kernels/cpu/quant_q4_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/quant_gemm.h"

namespace locr::kernels {

namespace {

using cpu::kQ4KBlock;
using cpu::kQ4KBlockBytes;
using cpu::kQ8KBlockBytes;

void check_multiple(int64_t n, const char* what) {
  if (n % kQ4KBlock != 0)
    fail(ErrorKind::kInvalidArgument, what, ": ", n, " elements is not a whole number of Q4_K super-blocks (256)");
}

// Super-block b of an activation row in the kernels' layout (q4_k_block.h) from a GGUF Q8_K block.
void act_from_q8_k(const uint8_t* q8k, int64_t n_blocks, int64_t b, uint8_t* out) {
  std::memcpy(out + 256 * b, q8k + cpu::kQ8KQs, 256);
  std::memcpy(out + 256 * n_blocks + 4 * b, q8k, 4);
  for (int j = 0; j < 8; ++j) {
    int16_t b0, b1;
    std::memcpy(&b0, q8k + cpu::kQ8KBsums + 4 * j, 2);
    std::memcpy(&b1, q8k + cpu::kQ8KBsums + 4 * j + 2, 2);
    const auto sum = static_cast<int16_t>(b0 + b1);  // |.| <= 32 * 127
    std::memcpy(out + 260 * n_blocks + 16 * b + 2 * j, &sum, 2);
  }
}

// ggml's nearest_int: round to nearest, ties to even, by the 1.5 * 2^23 trick (|v| < 2^22).
inline int nearest_int(float v) {
  const float f = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &f, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// make_qkx2_quants(32, 15, x, w, L, &min, Laux, -1, 0.1, 20, false): the scale and (returned as
// -min, >= 0) offset of one sub-block minimising the weighted squared error over a 21-step scale
// search. The float operations are written in llama.cpp's order (so the bytes match it).
float sub_block_scale_min(const float* x, const float* w, uint8_t* L, float* the_min) {
  constexpr int n = 32, nmax = 15, nstep = 20;
  constexpr float rmin = -1.0f, rdelta = 0.1f;
  float mn = x[0], mx = x[0], sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -mn;
    return 0.0f;
  }
  float iscale = nmax / (mx - mn);
  float scale = 1 / iscale;
  float best = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - mn))));
    L[i] = static_cast<uint8_t>(l);
    const float diff = scale * L[i] + mn - x[i];
    best += w[i] * (diff * diff);
  }
  uint8_t aux[n];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - mn))));
      aux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float err = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * aux[i] + this_min - x[i];
        err += w[i] * (diff * diff);
      }
      if (err < best) {
        std::memcpy(L, aux, n);
        best = err;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *the_min = -mn;
  return scale;
}

}  // namespace

void quantize_row_q4_K(const float* x, void* y, int64_t n) {
  check_multiple(n, "quantize_row_q4_K");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQ4KBlock; ++b, x += kQ4KBlock, out += kQ4KBlockBytes) {
    uint8_t L[kQ4KBlock];
    float scales[8], mins[8], w[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      const float* xs = x + 32 * j;
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(xs[l]);
      scales[j] = sub_block_scale_min(xs, w, L + 32 * j, &mins[j]);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t* packed = out + 4;
    std::memset(packed, 0, 12);
    for (int j = 0; j < 8; ++j) {
      // ggml stores nearest_int's result in a uint8_t before clamping to 63.
      const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
      const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
      if (j < 4) {
        packed[j] = ls;
        packed[j + 4] = lm;
      } else {
        packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
      }
    }
    const uint16_t hd = f32_to_f16(max_scale / 63.f), hm = f32_to_f16(max_min / 63.f);
    std::memcpy(out, &hd, 2);
    std::memcpy(out + 2, &hm, 2);
    uint8_t sc[8], m[8];
    cpu::q4_k_scales_mins(packed, sc, m);
    for (int j = 0; j < 8; ++j) {
      const float d = f16_to_f32(hd) * sc[j];
      if (d == 0) continue;  // the quants of this sub-block keep make_qkx2_quants' values
      const float dm = f16_to_f32(hm) * m[j];
      for (int l = 0; l < 32; ++l)
        L[32 * j + l] = static_cast<uint8_t>(std::max(0, std::min(15, nearest_int((x[32 * j + l] + dm) / d))));
    }
    uint8_t* q = out + 16;
    for (int g = 0; g < 4; ++g, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[64 * g + l] | (L[64 * g + l + 32] << 4));
  }
}

void quantize_row_q8_K(const float* x, void* y, int64_t n) {
  check_multiple(n, "quantize_row_q8_K");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQ4KBlock; ++b, x += kQ4KBlock, out += kQ8KBlockBytes) {
    float amax = 0, extreme = 0;
    for (int j = 0; j < kQ4KBlock; ++j) {
      const float a = std::fabs(x[j]);
      if (a > amax) {
        amax = a;
        extreme = x[j];
      }
    }
    auto* qs = reinterpret_cast<int8_t*>(out + cpu::kQ8KQs);
    if (amax == 0) {
      std::memset(out, 0, kQ8KBlockBytes);
      continue;
    }
    const float iscale = -127.f / extreme;
    for (int j = 0; j < kQ4KBlock; ++j) qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < 16; ++j) {
      int16_t s = 0;
      for (int l = 0; l < 16; ++l) s = static_cast<int16_t>(s + qs[16 * j + l]);
      std::memcpy(out + cpu::kQ8KBsums + 2 * j, &s, 2);
    }
    const float d = 1 / iscale;
    std::memcpy(out, &d, 4);
  }
}

namespace {

// quantize_row_q8_K's values in the kernels' activation layout (q4_k_block.h: n / 256 * 276 bytes).
void quantize_act_q8_K(const float* x, uint8_t* out, int64_t n) {
  const int64_t n_blocks = n / kQ4KBlock;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t blk[kQ8KBlockBytes];
    quantize_row_q8_K(x + b * kQ4KBlock, blk, kQ4KBlock);
    act_from_q8_k(blk, n_blocks, b, out);
  }
}

// Groups g0..g1 of the packed matrix from GGUF rows.
void pack_groups(const uint8_t* w, int64_t rows, int64_t n_blocks, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t row_bytes = n_blocks * kQ4KBlockBytes;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* dst = out + g * n_blocks * cpu::kQ4KGroupBlockBytes;
    std::memset(dst, 0, static_cast<size_t>(n_blocks * cpu::kQ4KGroupBlockBytes));  // pad rows: all zero
    for (int r = 0; r < cpu::kQ4KGroupRows && g * cpu::kQ4KGroupRows + r < rows; ++r) {
      const uint8_t* src = w + (g * cpu::kQ4KGroupRows + r) * row_bytes;
      for (int64_t b = 0; b < n_blocks; ++b, src += kQ4KBlockBytes) {
        uint8_t* blk = dst + b * cpu::kQ4KGroupBlockBytes;
        std::memcpy(blk + cpu::kQ4KGD + 2 * r, src, 2);
        std::memcpy(blk + cpu::kQ4KGDmin + 2 * r, src + 2, 2);
        uint8_t sc[8], m[8];
        cpu::q4_k_scales_mins(src + 4, sc, m);
        for (int j = 0; j < 8; ++j) {
          blk[cpu::kQ4KGScales + 16 * j + r] = sc[j];
          blk[cpu::kQ4KGMins + 32 * (j / 2) + 2 * r + j % 2] = m[j];
          for (int t = 0; t < 4; ++t)
            for (int k = 0; k < 4; ++k)
              blk[cpu::kQ4KGQuants + 256 * j + 64 * t + 4 * r + k] = static_cast<uint8_t>(
                  cpu::q4_k_quant(src, 32 * j + 4 * t + k) | (cpu::q4_k_quant(src, 32 * j + 16 + 4 * t + k) << 4));
        }
      }
    }
  }
}

}  // namespace

std::unique_ptr<QuantPacked> pack_q4_k(const void* w, int64_t rows, int64_t cols) {
  check_multiple(cols, "pack_q4_k");
  const int64_t n_blocks = cols / kQ4KBlock;
  return cpu::pack_in_groups(DType::kQ4_K, rows, cols, n_blocks * cpu::kQ4KGroupBlockBytes, [&](int64_t g0, int64_t g1, uint8_t* out) {
    pack_groups(static_cast<const uint8_t*>(w), rows, n_blocks, g0, g1, out);
  });
}

void gemm_q4_K(CpuIsa isa, const QuantPacked& w, const float* x, int64_t m, float* y) {
  if (w.rows() <= 0 || m <= 0) return;
  const int64_t cols = w.cols();
  cpu::packed_gemm(cpu_kernel_table(isa)->gemm_q4_k, w, kQ4KBlock, cpu::kQ4KGroupBlockBytes, cpu::kQ4KActBlockBytes, x, m, y,
                   [&](const float* xr, uint8_t* out) { quantize_act_q8_K(xr, out, cols); });
}

void gemm_q4_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y) {
  check_multiple(cols, "gemm_q4_K");
  if (rows <= 0 || m <= 0) return;
  gemm_q4_K(isa, *pack_q4_k(w, rows, cols), x, m, y);
}

void gemv_q4_K(CpuIsa isa, const void* w, int64_t rows, int64_t cols, const float* x, float* y) {
  gemm_q4_K(isa, w, rows, cols, x, 1, y);
}

float dot_q4_K(CpuIsa isa, const void* w, const void* x, int64_t n) {
  check_multiple(n, "dot_q4_K");
  const int64_t n_blocks = n / kQ4KBlock;
  const auto packed = pack_q4_k(w, 1, n);
  std::vector<uint8_t> act(static_cast<size_t>(n_blocks * cpu::kQ4KActBlockBytes));
  for (int64_t b = 0; b < n_blocks; ++b) act_from_q8_k(static_cast<const uint8_t*>(x) + b * kQ8KBlockBytes, n_blocks, b, act.data());
  float y = 0;
  cpu_kernel_table(isa)->gemm_q4_k(packed->data(), 1, 1, act.data(), 1, n_blocks, &y, 1);
  return y;
}

}  // namespace locr::kernels
