// The CUDA backend's quantized-weight and FP8-KV kernel bodies, run on the host: they are
// LOCR_HOST_DEVICE functions (kernels/cuda/quant_blocks.h, kv_fp8.h, core/fp8.h), so this is the
// source the device runs, with the kernels' index math (which lane takes which unit, which thread
// which unit of which row, which warp which head), emulated lane by lane. Checked against the
// host's own code: Matrix::at and io::dequantize_row for the weight blocks, kernels::ref's matmul,
// kernels::kv_store_host's bytes and scales. Runs in every build (no CUDA needed); tests/cuda runs
// the kernels themselves where a GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/fp8.h"
#include "io/gguf.h"
#include "kernels/cuda/kv_fp8.h"
#include "kernels/cuda/quant_blocks.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

namespace quant = cuda::quant;
namespace kvfp8 = cuda::kvfp8;
using testing_util::f32_matmul_tolerance;
using testing_util::make_quantized_matrix;
using testing_util::random_vec;

constexpr int kMaxRows = 8;  // cuda::kQuantGemvMaxRows (cuda_api.h is not reachable without CUDA)

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Same value, bit for bit (any NaN matches any NaN).
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits(a) == bits(b); }

io::GgmlType ggml_of(DType t) {
  return t == DType::kQ8_0 ? io::GgmlType::kQ8_0 : t == DType::kQ4_K ? io::GgmlType::kQ4_K : io::GgmlType::kQ6_K;
}

void dequantize_unit(DType t, const uint8_t* row, int64_t u, float out[quant::kUnit]) {
  if (t == DType::kQ8_0) quant::dequantize_unit<DType::kQ8_0>(row, u, out);
  else if (t == DType::kQ4_K) quant::dequantize_unit<DType::kQ4_K>(row, u, out);
  else quant::dequantize_unit<DType::kQ6_K>(row, u, out);
}

// A matrix of random bytes in dt's blocks (every scale, min and quant pattern), with its f16
// scales drawn finite so that the values are numbers.
Matrix random_blocks(DType dt, int64_t rows, int64_t cols, uint32_t seed) {
  const int64_t rb = dtype_row_bytes(dt, cols), block_bytes = dt == DType::kQ8_0 ? 34 : dt == DType::kQ4_K ? 144 : 210;
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(rows * rb));
  std::mt19937 rng(seed);
  for (auto& b : *buf) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (int64_t off = 0; off < static_cast<int64_t>(buf->size()); off += block_bytes) {
    auto put = [&](int64_t at) {
      const uint16_t h = f32_to_f16(d(rng) * 1e-2f);
      std::memcpy(buf->data() + off + at, &h, 2);
    };
    if (dt == DType::kQ6_K) put(208);
    else put(0);
    if (dt == DType::kQ4_K) put(2);
  }
  Matrix m;
  m.dtype = dt, m.rows = rows, m.cols = cols, m.data = buf->data(), m.holder = buf;
  return m;
}

TEST(CudaQuantEmulation, F16DecoderIsExactForEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = f16_to_f32(static_cast<uint16_t>(h)), got = quant::f16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_TRUE(same(got, want)) << "half 0x" << std::hex << h;
  }
}

TEST(CudaQuantEmulation, UnitsDecodeToMatrixAtAndGgufDequantizeBitForBit) {
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K})
    for (bool quantized : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (quantized ? " from the quantizer" : " random bytes"));
      const int64_t rows = 3, cols = dt == DType::kQ8_0 ? 96 : 512;
      const Matrix w = quantized ? make_quantized_matrix(dt, rows, cols, 41) : random_blocks(dt, rows, cols, 42);
      const int64_t rb = quant::row_bytes(dt, cols);
      ASSERT_EQ(rb, dtype_row_bytes(dt, cols));
      std::vector<float> gguf(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        const auto* row = static_cast<const uint8_t*>(w.data) + r * rb;
        io::dequantize_row(static_cast<uint32_t>(ggml_of(dt)), row, gguf.data(), cols);
        for (int64_t u = 0; u < cols / quant::kUnit; ++u) {
          float v[quant::kUnit];
          dequantize_unit(dt, row, u, v);
          for (int i = 0; i < quant::kUnit; ++i) {
            const int64_t c = u * quant::kUnit + i;
            ASSERT_TRUE(same(v[i], w.at(r, c))) << "row " << r << " col " << c << ": " << v[i] << " vs " << w.at(r, c);
            ASSERT_TRUE(same(v[i], gguf[c])) << "row " << r << " col " << c << ": " << v[i] << " vs " << gguf[c];
          }
        }
      }
    }
}

// The GEMV kernel's arithmetic: one warp per weight row, 32 lanes of gemv_lane, the lanes added
// (the device adds them by a shuffle tree; here in lane order: the same terms).
template <DType T>
std::vector<float> emulate_gemv(const Matrix& w, const std::vector<float>& x, int M) {
  const int64_t N = w.rows, K = w.cols, rb = quant::row_bytes(T, K);
  std::vector<float> y(static_cast<size_t>(M * N));
  for (int64_t n = 0; n < N; ++n) {
    double sum[kMaxRows] = {};
    for (int lane = 0; lane < 32; ++lane) {
      float acc[kMaxRows];
      quant::gemv_lane<T, kMaxRows>(static_cast<const uint8_t*>(w.data) + n * rb, K / quant::kUnit, x.data(), K, M,
                                    lane, acc);
      for (int m = 0; m < M; ++m) sum[m] += acc[m];
    }
    for (int m = 0; m < M; ++m) y[m * N + n] = static_cast<float>(sum[m]);
  }
  return y;
}

std::vector<float> emulate_gemv(const Matrix& w, const std::vector<float>& x, int M) {
  if (w.dtype == DType::kQ8_0) return emulate_gemv<DType::kQ8_0>(w, x, M);
  if (w.dtype == DType::kQ4_K) return emulate_gemv<DType::kQ4_K>(w, x, M);
  return emulate_gemv<DType::kQ6_K>(w, x, M);
}

// Fewer units than lanes (Q8_0 K = 96: 3 units; Q6_K K = 256: 8), more (Q8_0 K = 1184: 37, so
// lanes 0..4 take two), and every row count up to kMaxRows. The bound is the F32 one of
// docs/numerics.md (8 sqrt(K) u32 sum |x w|): the weights decode exactly, so only F32 sums differ
// from ref's double ones.
TEST(CudaQuantEmulation, GemvLanesSumToRefMatmul) {
  auto ref = make_ops("ref");
  struct Shape {
    DType dt;
    int64_t N, K;
  };
  for (const Shape& s : {Shape{DType::kQ8_0, 37, 96}, Shape{DType::kQ8_0, 5, 1184}, Shape{DType::kQ4_K, 11, 512},
                         Shape{DType::kQ6_K, 13, 256}, Shape{DType::kQ6_K, 3, 768}})
    for (int M : {1, 2, 5, kMaxRows}) {
      SCOPED_TRACE(std::string(dtype_name(s.dt)) + " N " + std::to_string(s.N) + " K " + std::to_string(s.K) +
                   " M " + std::to_string(M));
      const Matrix w = make_quantized_matrix(s.dt, s.N, s.K, 7 + static_cast<uint32_t>(M));
      const auto x = random_vec(static_cast<size_t>(M * s.K), 9 + static_cast<uint32_t>(s.K));
      std::vector<float> want(static_cast<size_t>(M * s.N));
      ref->matmul(ref->f32(x.data(), M, s.K), w, ref->f32(want.data(), M, s.N));
      const auto got = emulate_gemv(w, x, M);
      for (int m = 0; m < M; ++m)
        for (int64_t n = 0; n < s.N; ++n)
          ASSERT_NEAR(got[m * s.N + n], want[m * s.N + n], f32_matmul_tolerance(w, x.data(), m, n))
              << "m " << m << " n " << n;
    }
}

// The dequantizing kernel: thread g writes unit g (row g / units_per_row); every thread of the
// grid-stride loop emulated, the output compared with Matrix::at rounded to BF16.
TEST(CudaQuantEmulation, DequantizeToBf16ThreadsCoverTheMatrixOnce) {
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t N = 7, K = dt == DType::kQ8_0 ? 160 : 512, upr = K / quant::kUnit;
    const Matrix w = make_quantized_matrix(dt, N, K, 21);
    const uint16_t poison = 0xffff;
    std::vector<uint16_t> out(static_cast<size_t>(N * K), poison);
    const auto* wb = static_cast<const uint8_t*>(w.data);
    for (int64_t g = 0; g < N * upr; ++g) {
      if (dt == DType::kQ8_0) quant::dequantize_unit_bf16<DType::kQ8_0>(wb, upr, quant::row_bytes(dt, K), g, out.data());
      else if (dt == DType::kQ4_K) quant::dequantize_unit_bf16<DType::kQ4_K>(wb, upr, quant::row_bytes(dt, K), g, out.data());
      else quant::dequantize_unit_bf16<DType::kQ6_K>(wb, upr, quant::row_bytes(dt, K), g, out.data());
    }
    for (int64_t r = 0; r < N; ++r)
      for (int64_t c = 0; c < K; ++c) ASSERT_EQ(out[r * K + c], f32_to_bf16(w.at(r, c))) << "row " << r << " col " << c;
  }
}

// The quantized embedding kernel: thread g writes unit g % units_per_row of output row
// g / units_per_row from table row ids[...]; every thread emulated, against ref's embed.
TEST(CudaQuantEmulation, EmbedThreadsGatherTheRowsRefGathers) {
  auto ref = make_ops("ref");
  const std::vector<int32_t> ids{3, 0, 49, 3, 17};
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t dim = dt == DType::kQ8_0 ? 96 : 256, upr = dim / quant::kUnit, n = static_cast<int64_t>(ids.size());
    const Matrix t = make_quantized_matrix(dt, 50, dim, 23);
    std::vector<float> got(static_cast<size_t>(n * dim), -12345.0f), want(got.size());
    const auto* tb = static_cast<const uint8_t*>(t.data);
    const int64_t rb = quant::row_bytes(dt, dim);
    for (int64_t g = 0; g < n * upr; ++g) {
      if (dt == DType::kQ8_0) quant::embed_unit<DType::kQ8_0>(tb, upr, rb, ids.data(), g, got.data());
      else if (dt == DType::kQ4_K) quant::embed_unit<DType::kQ4_K>(tb, upr, rb, ids.data(), g, got.data());
      else quant::embed_unit<DType::kQ6_K>(tb, upr, rb, ids.data(), g, got.data());
    }
    ref->embed(t, ref->i32(ids.data(), n), ref->f32(want.data(), n, dim));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same(got[i], want[i])) << i;
  }
}

// The FP8 kv_store kernel's arithmetic, one warp per (row, head, k or v): the lanes' amax and
// finiteness combined as the warp does (max, AND), the scale, then every lane's bytes.
void emulate_store_head(const float* x, int head_dim, uint8_t* q, float* scale) {
  float amax = 0.0f;
  bool finite = true;
  for (int lane = 0; lane < 32; ++lane) {
    float a;
    bool f;
    kvfp8::head_lane_amax(x, head_dim, lane, &a, &f);
    amax = std::fmax(amax, a);
    finite = finite && f;
  }
  *scale = fp8_e4m3_head_scale(amax, finite);
  const float inv = 1.0f / *scale;
  for (int lane = 0; lane < 32; ++lane) kvfp8::head_lane_store(x, head_dim, lane, inv, q);
}

TEST(CudaQuantEmulation, Fp8StoreWritesKvStoreHostsBytesAndScales) {
  for (int hd : {64, 128, 40}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    const int nkv = 3, n = 8, width = nkv * hd;
    std::vector<float> x = random_vec(static_cast<size_t>(n * width), 31, -5, 5);
    // Special heads: all zero, tiny (subnormal after scaling), huge, one infinity, one NaN, a tie.
    for (int d = 0; d < hd; ++d) {
      x[1 * width + d] = 0.0f;
      x[2 * width + d] *= 1e-30f;
      x[3 * width + d] *= 1e30f;
    }
    x[4 * width + 5] = std::numeric_limits<float>::infinity();
    x[5 * width + hd + 7] = std::numeric_limits<float>::quiet_NaN();
    x[6 * width + 2 * hd] = 448.0f, x[6 * width + 2 * hd + 1] = 232.0f;  // scale 1; 232 is halfway 224 - 240
    KvLayer kv;
    kv.dtype = DType::kF8E4M3, kv.n_kv_heads = nkv, kv.head_dim = hd, kv.rows = n;
    std::vector<uint8_t> k(static_cast<size_t>(n * width)), v(k.size());
    std::vector<float> ks(static_cast<size_t>(n * nkv)), vs(ks.size());
    kv.k = k.data(), kv.v = v.data(), kv.k_scale = ks.data(), kv.v_scale = vs.data();
    std::vector<int32_t> slots(n);
    for (int r = 0; r < n; ++r) slots[r] = (r * 5 + 3) % n;
    kv_store_host(x.data(), width, x.data(), width, slots.data(), n, kv);
    for (int r = 0; r < n; ++r)
      for (int h = 0; h < nkv; ++h) {
        std::vector<uint8_t> q(static_cast<size_t>(hd));
        float sc;
        emulate_store_head(x.data() + r * width + h * hd, hd, q.data(), &sc);
        const int64_t head = static_cast<int64_t>(slots[r]) * nkv + h;
        ASSERT_TRUE(same(sc, ks[head])) << "row " << r << " head " << h << ": " << sc << " vs " << ks[head];
        for (int d = 0; d < hd; ++d)
          ASSERT_EQ(q[d], k[head * hd + d]) << "row " << r << " head " << h << " d " << d;
        // The attention kernels' read of the stored element: the value the ops.h layout defines.
        for (int d = 0; d < hd; ++d)
          ASSERT_TRUE(same(kvfp8::element(k.data(), ks.data(), slots[r], nkv, hd, h, d),
                           fp8_e4m3_to_f32(k[static_cast<int64_t>(slots[r]) * width + h * hd + d]) * ks[head]));
      }
  }
}

}  // namespace
}  // namespace locr::kernels
