// The defaults of Ops' memory, fused and batched ops: host memory, and compositions of the
// primitive ops in exactly the order the model made them before they existed (so the CPU backends'
// results did not change when the model began calling them). Device backends override these.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/heap.h"
#include "kernels/ops.h"

namespace locr::kernels {

std::shared_ptr<void> Ops::alloc(size_t bytes) {
  void* p = alloc_aligned(bytes);
  if (!p) fail(ErrorKind::kLimit, "out of memory allocating ", bytes, " bytes of activations");
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

void Ops::run_matmul_argmax(const View& x, const Matrix& w, int32_t* out) { argmax_of_matmul(x, w, out); }

void Ops::argmax_of_matmul(const View& x, const Matrix& w, int32_t* out) {
  const int64_t M = x.rows, N = w.rows;
  std::shared_ptr<void> y = alloc(static_cast<size_t>(M * N) * sizeof(float));
  matmul(x, w, View(y.get(), DType::kF32, memory(), M, N));
  std::vector<float> row(static_cast<size_t>(N));
  for (int64_t m = 0; m < M; ++m) {
    to_host(row.data(), static_cast<const float*>(y.get()) + m * N, static_cast<size_t>(N) * sizeof(float));
    int64_t best = 0;
    for (int64_t r = 1; r < N; ++r)
      if (row[r] > row[best]) best = r;  // the first maximum wins, as torch.argmax and Sampler::argmax
    out[m] = static_cast<int32_t>(best);
  }
}

void Ops::to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void Ops::from_host(void* dst, const void* host_src, size_t bytes) {
  if (bytes) std::memcpy(dst, host_src, bytes);
}

void Ops::run_add_rms_norm(const View& x, const View& delta, const Matrix& w, float eps, const View& y) {
  add(x, delta);
  rms_norm(x, w, eps, y);
}

void Ops::run_kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv) {
  kv_store_host(k.f32(), k.stride, v.f32(), v.stride, slots.as<const int32_t>(), k.rows, kv);
}

void Ops::run_paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale, const View& out) {
  const View k(kv.k, kv.dtype, memory(), kv.rows, kv.width());
  const View v(kv.v, kv.dtype, memory(), kv.rows, kv.width());
  for (int64_t i = 0; i < b.n_seqs; ++i) {
    const int64_t row = b.host_cu_q[i], n_new = b.host_cu_q[i + 1] - row;
    if (n_new <= 0) continue;
    AttentionParams ap;
    ap.n_kv = b.host_seq_lens[i];
    ap.n_heads = q.cols / kv.head_dim;
    ap.n_kv_heads = kv.n_kv_heads;
    ap.head_dim = kv.head_dim;
    ap.scale = scale;
    ap.causal = true;
    ap.q_offset = ap.n_kv - n_new;
    ap.prompt_rows = b.host_prompt != nullptr && b.host_prompt[i] != 0;
    ap.block_table = b.host_tables + i * b.max_blocks;
    ap.block_size = b.block_size;
    ap.k_scale = kv.k_scale;
    ap.v_scale = kv.v_scale;
    attention(q.rows_range(row, n_new), k, v, out.rows_range(row, n_new), ap);
  }
}

void Ops::run_patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out) {
  patch_merge_host(in.f32(), grid_h, grid_w, in.cols, m, out.f32());
}

namespace {

// One head of head_dim values to FP8 E4M3 with its scale (core/fp8.h fp8_e4m3_head_scale: amax / 448;
// the CUDA backend's kv_store computes the same scale and bytes, kernels/cuda/kv_fp8.cu).
void store_fp8_head(const float* x, int64_t n, uint8_t* q, float* scale) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    finite = finite && a <= std::numeric_limits<float>::max();
    amax = a > amax ? a : amax;
  }
  const float s = fp8_e4m3_head_scale(amax, finite);
  const float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i) q[i] = f32_to_fp8_e4m3(x[i] * inv);  // |x| * inv may round past 448: saturates
  *scale = s;
}

}  // namespace

void kv_store_host(const float* k, int64_t k_stride, const float* v, int64_t v_stride, const int32_t* slots,
                   int64_t n, const KvLayer& kv) {
  const int64_t width = kv.width(), nkv = kv.n_kv_heads, hd = kv.head_dim;
  for (int64_t r = 0; r < n; ++r) {
    const float* kr = k + r * k_stride;
    const float* vr = v + r * v_stride;
    const int64_t slot = slots[r];
    LOCR_CHECK(slot >= 0 && slot < kv.rows, "KV slot ", slot, " outside the pool of ", kv.rows,
               " rows");
    switch (kv.dtype) {
      case DType::kF32:
        std::memcpy(static_cast<float*>(kv.k) + slot * width, kr, width * sizeof(float));
        std::memcpy(static_cast<float*>(kv.v) + slot * width, vr, width * sizeof(float));
        break;
      case DType::kBF16: {
        uint16_t* kd = static_cast<uint16_t*>(kv.k) + slot * width;
        uint16_t* vd = static_cast<uint16_t*>(kv.v) + slot * width;
        for (int64_t i = 0; i < width; ++i) {
          kd[i] = f32_to_bf16(kr[i]);
          vd[i] = f32_to_bf16(vr[i]);
        }
        break;
      }
      case DType::kF8E4M3: {
        uint8_t* kd = static_cast<uint8_t*>(kv.k) + slot * width;
        uint8_t* vd = static_cast<uint8_t*>(kv.v) + slot * width;
        for (int64_t h = 0; h < nkv; ++h) {
          store_fp8_head(kr + h * hd, hd, kd + h * hd, kv.k_scale + slot * nkv + h);
          store_fp8_head(vr + h * hd, hd, vd + h * hd, kv.v_scale + slot * nkv + h);
        }
        break;
      }
      default:
        LOCR_CHECK(false, "KV cache dtype ", dtype_name(kv.dtype));
    }
  }
}

void patch_merge_host(const float* in, int grid_h, int grid_w, int64_t d, int m, float* out) {
  const int oh = grid_h / m, ow = grid_w / m;
  const int64_t mm = static_cast<int64_t>(m) * m;
  for (int i = 0; i < oh; ++i)
    for (int j = 0; j < ow; ++j) {
      float* o = out + (static_cast<int64_t>(i) * ow + j) * d * mm;
      for (int a = 0; a < m; ++a)
        for (int b = 0; b < m; ++b) {
          const float* src = in + (static_cast<int64_t>(m * i + a) * grid_w + (m * j + b)) * d;
          for (int64_t c = 0; c < d; ++c) o[c * mm + a * m + b] = src[c];
        }
    }
}

}  // namespace locr::kernels
