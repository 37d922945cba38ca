// The fast CPU backends against the scalar oracle (make_ops("ref")), for every precision x every
// ISA path this machine can run, at awkward sizes. Tolerances (see docs/numerics.md):
//   f32:  |y - ref| <= 8 sqrt(K) 2^-24 sum_k |x_k w_k|  (f32 rounding of a K-term sum; the oracle
//         accumulates in f64, so the whole difference is ours)
//   bf16: + 6 * 2^-8 * sqrt(2/3) * sqrt(sum_k (x_k w_k)^2) for each operand rounded to bf16
//         (relative rounding error uniform in +-2^-8, independent across k: a 6 sigma bound)
#include <cpuid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/fp8.h"
#include "core/thread_pool.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

struct Backend {
  CpuPrecision precision;
  CpuIsa isa;
};

std::vector<Backend> all_backends() {
  std::vector<Backend> out;
  // Every ISA path is instantiated; the ones this CPU lacks skip (reported as skipped by CTest).
  for (CpuIsa isa : kAllCpuIsas) {
    out.push_back({CpuPrecision::kF32, isa});
    out.push_back({CpuPrecision::kBF16, isa});
  }
  return out;
}

std::string backend_name(const testing::TestParamInfo<Backend>& info) {
  std::string s = std::string(info.param.precision == CpuPrecision::kF32 ? "f32_" : "bf16_") +
                  cpu_isa_name(info.param.isa);
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

using testing_util::make_matrix;
using testing_util::random_vec;
using testing_util::hv;
using testing_util::hv_i32;
using testing_util::hv_kv;

class CpuOpsTest : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (!cpu_isa_supported(GetParam().isa)) GTEST_SKIP() << "this CPU lacks " << cpu_isa_name(GetParam().isa);
    ops_ = make_cpu_ops(GetParam().precision, GetParam().isa);
    ref_ = make_ops("ref");
  }
  bool bf16() const { return GetParam().precision == CpuPrecision::kBF16; }

  void check_matmul(int64_t M, int64_t N, int64_t K, DType dt, bool prepare, int64_t seed) {
    SCOPED_TRACE(testing::Message() << "M=" << M << " N=" << N << " K=" << K << " dtype=" << dtype_name(dt)
                                    << " prepare=" << prepare);
    Matrix w = make_matrix(dt, N, K, static_cast<uint32_t>(seed));
    const auto x = random_vec(static_cast<size_t>(M * K), static_cast<uint32_t>(seed + 1));
    if (prepare) ops_->prepare(w);
    std::vector<float> y(M * N, NAN), yr(M * N);
    ops_->matmul(hv(x, M, K), w, hv(y, M, N));
    ref_->matmul(hv(x, M, K), w, hv(yr, M, N));
    const bool w_rounded = bf16() && dt != DType::kBF16;
    int bad = 0;
    for (int64_t m = 0; m < M && bad < 5; ++m) {
      for (int64_t n = 0; n < N && bad < 5; ++n) {
        double sabs = 0, ssq = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(x[m * K + k]) * w.at(n, k);
          sabs += std::fabs(p);
          ssq += p * p;
        }
        double tol = 8 * std::sqrt(static_cast<double>(K)) * std::ldexp(1.0, -24) * sabs + 1e-30;
        if (bf16()) tol += (w_rounded ? 2 : 1) * 6 * std::ldexp(1.0, -8) * std::sqrt(2.0 / 3.0) * std::sqrt(ssq);
        const double err = std::fabs(static_cast<double>(y[m * N + n]) - yr[m * N + n]);
        if (!(err <= tol)) {
          ++bad;
          ADD_FAILURE() << "y[" << m << "," << n << "] = " << y[m * N + n] << " ref " << yr[m * N + n] << " err "
                        << err << " tol " << tol;
        }
      }
    }
  }

  void check_attention(int64_t n_q, int64_t n_kv, int64_t heads, int64_t kv_heads, int64_t hd, bool causal,
                       int64_t q_offset, int64_t pad, int64_t block_size = 0, DType kv_dtype = DType::kF32) {
    SCOPED_TRACE(testing::Message() << "n_q=" << n_q << " n_kv=" << n_kv << " heads=" << heads << "/" << kv_heads
                                    << " hd=" << hd << " causal=" << causal << " q_offset=" << q_offset
                                    << " pad=" << pad << " block_size=" << block_size
                                    << " kv=" << dtype_name(kv_dtype));
    const bool kv_bf16 = kv_dtype == DType::kBF16, kv_fp8 = kv_dtype == DType::kF8E4M3;
    AttentionParams p;
    p.n_q = n_q;
    p.n_kv = n_kv;
    p.n_heads = heads;
    p.n_kv_heads = kv_heads;
    p.head_dim = hd;
    p.q_stride = heads * hd + pad;
    p.kv_stride = kv_heads * hd + 2 * pad;
    p.out_stride = heads * hd + 3 * pad;
    p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    p.causal = causal;
    p.q_offset = q_offset;
    // Larger q, k make the softmax peaky, as real attention often is.
    const auto q = random_vec(n_q * p.q_stride, 11, -2.0f, 2.0f);
    const auto k = random_vec(n_kv * p.kv_stride, 12, -2.0f, 2.0f);
    const auto v = random_vec(n_kv * p.kv_stride, 13);
    std::vector<float> out(n_q * p.out_stride, 7.0f), outr(n_q * p.out_stride, 7.0f);
    // A BF16 KV cache: both sides read the same BF16 keys and values.
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k16[i] = f32_to_bf16(k[i]);
      v16[i] = f32_to_bf16(v[i]);
    }
    // An FP8 KV cache: E4M3 codes with a scale per row and kv head (amax / 448, as model::KvPool
    // writes them); the padding between rows holds NaN codes, so reading it shows up.
    std::vector<uint8_t> k8(k.size(), 0x7f), v8(v.size(), 0x7f);
    std::vector<float> ks(n_kv * kv_heads), vs(n_kv * kv_heads);
    for (int64_t j = 0; j < n_kv; ++j)
      for (int64_t kh = 0; kh < kv_heads; ++kh) {
        const int64_t o = j * p.kv_stride + kh * hd;
        float ka = 0, va = 0;
        for (int64_t d = 0; d < hd; ++d) {
          ka = std::max(ka, std::fabs(k[o + d]));
          va = std::max(va, std::fabs(v[o + d]));
        }
        ks[j * kv_heads + kh] = ka / 448.0f;
        vs[j * kv_heads + kh] = va / 448.0f;
        for (int64_t d = 0; d < hd; ++d) {
          k8[o + d] = f32_to_fp8_e4m3(k[o + d] / ks[j * kv_heads + kh]);
          v8[o + d] = f32_to_fp8_e4m3(v[o + d] / vs[j * kv_heads + kh]);
        }
      }
    auto kv_ptr = [&](const std::vector<float>& f, const std::vector<uint16_t>& b, const std::vector<uint8_t>& e) {
      return kv_fp8 ? static_cast<const void*>(e.data())
                    : kv_bf16 ? static_cast<const void*>(b.data()) : static_cast<const void*>(f.data());
    };
    p.kv_dtype = kv_dtype;
    if (kv_fp8) {
      p.k_scale = ks.data();
      p.v_scale = vs.data();
    }
    const int64_t qw = heads * hd, kvw = kv_heads * hd;
    const View qv = hv(q, n_q, qw, p.q_stride);
    ref_->attention(qv, hv_kv(kv_ptr(k, k16, k8), kv_dtype, n_kv, kvw, p.kv_stride),
                    hv_kv(kv_ptr(v, v16, v8), kv_dtype, n_kv, kvw, p.kv_stride), hv(outr, n_q, qw, p.out_stride), p);
    if (block_size > 0) {
      // Paged KV: scatter the rows over a pool in reversed block order (plus a spare block), with
      // NaN in the unused rows so a wrong read shows up.
      const int64_t n_blocks = (n_kv + block_size - 1) / block_size;
      std::vector<int32_t> table(n_blocks);
      for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(n_blocks - b);
      std::vector<float> kp((n_blocks + 1) * block_size * p.kv_stride, NAN), vp(kp.size(), NAN);
      std::vector<uint16_t> kp16(kp.size(), 0x7fc0), vp16(kp.size(), 0x7fc0);  // bf16 NaN
      std::vector<uint8_t> kp8(kp.size(), 0x7f), vp8(kp.size(), 0x7f);           // E4M3 NaN
      std::vector<float> ksp((n_blocks + 1) * block_size * kv_heads, NAN), vsp(ksp.size(), NAN);
      for (int64_t j = 0; j < n_kv; ++j) {
        const int64_t row = table[j / block_size] * block_size + j % block_size;
        std::copy(k8.begin() + j * p.kv_stride, k8.begin() + (j + 1) * p.kv_stride, kp8.begin() + row * p.kv_stride);
        std::copy(v8.begin() + j * p.kv_stride, v8.begin() + (j + 1) * p.kv_stride, vp8.begin() + row * p.kv_stride);
        std::copy(ks.begin() + j * kv_heads, ks.begin() + (j + 1) * kv_heads, ksp.begin() + row * kv_heads);
        std::copy(vs.begin() + j * kv_heads, vs.begin() + (j + 1) * kv_heads, vsp.begin() + row * kv_heads);
        std::copy(k.begin() + j * p.kv_stride, k.begin() + (j + 1) * p.kv_stride, kp.begin() + row * p.kv_stride);
        std::copy(v.begin() + j * p.kv_stride, v.begin() + (j + 1) * p.kv_stride, vp.begin() + row * p.kv_stride);
        std::copy(k16.begin() + j * p.kv_stride, k16.begin() + (j + 1) * p.kv_stride, kp16.begin() + row * p.kv_stride);
        std::copy(v16.begin() + j * p.kv_stride, v16.begin() + (j + 1) * p.kv_stride, vp16.begin() + row * p.kv_stride);
      }
      p.block_table = table.data();
      p.block_size = block_size;
      if (kv_fp8) {
        p.k_scale = ksp.data();
        p.v_scale = vsp.data();
      }
      const int64_t pool = (n_blocks + 1) * block_size;
      ops_->attention(qv, hv_kv(kv_ptr(kp, kp16, kp8), kv_dtype, pool, kvw, p.kv_stride),
                      hv_kv(kv_ptr(vp, vp16, vp8), kv_dtype, pool, kvw, p.kv_stride), hv(out, n_q, qw, p.out_stride),
                      p);
    } else {
      ops_->attention(qv, hv_kv(kv_ptr(k, k16, k8), kv_dtype, n_kv, kvw, p.kv_stride),
                      hv_kv(kv_ptr(v, v16, v8), kv_dtype, n_kv, kvw, p.kv_stride), hv(out, n_q, qw, p.out_stride), p);
    }
    // Outputs are convex combinations of v rows (|v| <= 1). f32: score errors ~1e-6 relative.
    // bf16: q, k, p and v rounded to bf16 (2^-8 relative each).
    const double tol = bf16() ? 1.5e-2 : 2e-5;
    int bad = 0;
    for (int64_t i = 0; i < n_q && bad < 5; ++i) {
      for (int64_t c = 0; c < p.out_stride && bad < 5; ++c) {
        const double err = std::fabs(static_cast<double>(out[i * p.out_stride + c]) - outr[i * p.out_stride + c]);
        if (!(err <= tol)) {
          ++bad;
          ADD_FAILURE() << "out[" << i << "," << c << "] = " << out[i * p.out_stride + c] << " ref "
                        << outr[i * p.out_stride + c];
        }
      }
    }
  }

  std::unique_ptr<Ops> ops_, ref_;
};

TEST_P(CpuOpsTest, MatmulAwkwardShapes) {
  const int64_t shapes[][3] = {{1, 1, 1},   {1, 17, 33},  {3, 15, 31},   {15, 33, 17},  {17, 31, 64},
                               {14, 32, 64}, {1, 96, 1024}, {8, 64, 130}, {29, 65, 47}};
  int64_t seed = 100;
  for (const auto& s : shapes) {
    for (DType dt : {DType::kBF16, DType::kF32, DType::kF16}) {
      check_matmul(s[0], s[1], s[2], dt, true, seed++);
      check_matmul(s[0], s[1], s[2], dt, false, seed++);
    }
  }
}

TEST_P(CpuOpsTest, MatmulManyRowsAndKBlocks) {
  // M beyond one row block, K beyond one K block (f32: 1024, bf16 pairs: 2048) and odd.
  check_matmul(250, 70, 2051, DType::kBF16, true, 7);
  check_matmul(131, 33, 1100, DType::kF32, true, 8);
  check_matmul(300, 16, 9, DType::kF16, true, 9);
}

TEST_P(CpuOpsTest, MatmulWithWeightPreparedByAnotherBackend) {
  Matrix w = make_matrix(DType::kBF16, 40, 70, 21);
  auto other = make_cpu_ops(bf16() ? CpuPrecision::kF32 : CpuPrecision::kBF16, CpuIsa::kGeneric);
  other->prepare(w);
  const auto x = random_vec(5 * 70, 22);
  std::vector<float> y(5 * 40), yr(5 * 40);
  ops_->matmul(hv(x, 5, 70), w, hv(y, 5, 40));
  ref_->matmul(hv(x, 5, 70), w, hv(yr, 5, 40));
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yr[i], bf16() ? 0.1 : 1e-4) << i;
  ops_->prepare(w);  // replaces it with our own layout
  ops_->matmul(hv(x, 5, 70), w, hv(y, 5, 40));
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yr[i], bf16() ? 0.1 : 1e-4) << i;
}

// Batch invariance: a row's result is bit-identical whether it is multiplied alone, with a few
// other rows (the decode path, grouped panels) or with many (the blocked GEMM path), at any
// position in its tile. Shapes: several panel groups with a partial last panel, K across blocks.
TEST_P(CpuOpsTest, MatmulRowsDoNotDependOnTheBatch) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    for (int64_t K : {37, 600, 2100}) {
      const int64_t N = 150, M = 131;
      SCOPED_TRACE(testing::Message() << "dtype=" << dtype_name(dt) << " K=" << K);
      Matrix w = make_matrix(dt, N, K, 91);
      ops_->prepare(w);
      const auto x = random_vec(static_cast<size_t>(M * K), 92);
      std::vector<float> all(M * N);
      ops_->matmul(hv(x, M, K), w, hv(all, M, N));
      std::vector<float> part(M * N);
      for (int64_t rows : {1, 2, 3, 4, 5, 7, 15, 29}) {
        for (int64_t r0 = 0; r0 + rows <= M; r0 += 37) {
          ops_->matmul(hv(x.data() + r0 * K, rows, K), w, hv(part, rows, N));
          EXPECT_EQ(std::memcmp(part.data(), all.data() + r0 * N, sizeof(float) * rows * N), 0)
              << rows << " rows from row " << r0 << " differ from the same rows of a " << M << "-row product";
        }
      }
    }
  }
}

// Thread invariance: the blocked GEMM splits its rows into groups per thread and blocks per group
// (kernels/cpu/cpu_ops.cc); any split gives the same bits, from one thread to more threads than row
// tiles (empty groups), for row counts that leave a partial last tile.
TEST_P(CpuOpsTest, MatmulRowsDoNotDependOnTheThreads) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const int64_t N = 70, K = 600;
    Matrix w = make_matrix(dt, N, K, 93);
    ops_->prepare(w);
    for (int64_t M : {131, 700, 1501}) {
      const auto x = random_vec(static_cast<size_t>(M * K), 94);
      std::vector<float> one(M * N);
      {
        ThreadPool pool(1);
        ThreadPool::ScopedUse use(&pool);
        ops_->matmul(hv(x, M, K), w, hv(one, M, N));
      }
      for (int threads : {2, 3, 5, 16}) {
        SCOPED_TRACE(testing::Message() << "dtype=" << dtype_name(dt) << " M=" << M << " threads=" << threads);
        ThreadPool pool(threads);
        ThreadPool::ScopedUse use(&pool);
        std::vector<float> y(M * N, -1.0f);
        ops_->matmul(hv(x, M, K), w, hv(y, M, N));
        EXPECT_EQ(std::memcmp(y.data(), one.data(), sizeof(float) * M * N), 0);
      }
    }
  }
}

TEST_P(CpuOpsTest, AttentionVisionLike) {
  check_attention(77, 77, 3, 3, 64, false, 0, 0);
  check_attention(130, 130, 2, 2, 64, false, 0, 3);
}

// The tiled path at head dims that are not a multiple of the vector or of 32 (the vdpbf16ps tile,
// bidirectional attention only, pads them to 32 and packs keys in pairs: odd key counts, GQA), and
// causal, paged.
TEST_P(CpuOpsTest, AttentionTiledOddShapes) {
  check_attention(45, 47, 3, 3, 40, false, 0, 1);
  check_attention(70, 71, 2, 1, 72, false, 0, 0);
  check_attention(70, 71, 2, 1, 72, true, 1, 0);
  check_attention(33, 101, 4, 2, 96, true, 68, 2, 16);
  check_attention(21, 21, 2, 2, 18, true, 0, 0, 0, DType::kBF16);
}

TEST_P(CpuOpsTest, AttentionCausalPrefillGqa) {
  check_attention(45, 45, 4, 2, 128, true, 0, 0);
  check_attention(97, 97, 6, 2, 128, true, 0, 1);
}

TEST_P(CpuOpsTest, AttentionChunkWithOffset) {
  check_attention(33, 103, 6, 2, 128, true, 70, 0);
  check_attention(17, 150, 2, 1, 64, true, 133, 5);
}

TEST_P(CpuOpsTest, AttentionDecode) {
  check_attention(1, 131, 4, 2, 128, true, 130, 0);
  check_attention(1, 1, 4, 4, 64, true, 0, 1);
  check_attention(3, 70, 4, 2, 128, true, 67, 2);
  check_attention(2, 65, 3, 1, 64, false, 0, 0);
  // Most key chunks lie past the causal limit (empty partials must not disturb the merge).
  check_attention(2, 300, 4, 2, 128, true, 40, 0);
  check_attention(4, 1000, 2, 2, 64, false, 0, 3);
}

TEST_P(CpuOpsTest, AttentionPagedKv) {
  check_attention(1, 131, 4, 2, 128, true, 130, 0, 16);   // decode, partial last block
  check_attention(3, 70, 4, 2, 128, true, 67, 2, 16);
  check_attention(1, 5, 2, 1, 64, true, 4, 0, 16);        // fewer keys than one block
  check_attention(40, 103, 4, 2, 128, true, 63, 0, 16);   // chunked prefill (tiled path)
  check_attention(20, 64, 2, 2, 64, true, 44, 1, 32);
}

// A BF16 KV cache (cpu-bf16's default): decode, few-query and chunked prefill, contiguous and
// paged, against the oracle reading the same BF16 keys and values.
TEST_P(CpuOpsTest, AttentionBf16Kv) {
  check_attention(1, 131, 4, 2, 128, true, 130, 0, 16, DType::kBF16);  // decode, partial last block
  check_attention(1, 1, 4, 4, 64, true, 0, 1, 0, DType::kBF16);
  check_attention(3, 70, 4, 2, 128, true, 67, 2, 16, DType::kBF16);
  check_attention(2, 300, 4, 2, 128, true, 40, 0, 0, DType::kBF16);
  check_attention(1, 50, 2, 1, 18, true, 49, 0, 16, DType::kBF16);     // odd head_dim: masked tails
  check_attention(40, 103, 4, 2, 128, true, 63, 0, 16, DType::kBF16);  // chunked prefill (tiled path)
  check_attention(45, 45, 4, 2, 128, true, 0, 0, 0, DType::kBF16);
}

// Decode over key chunks longer than one block of the register paths (128 keys, rows looked up a
// block at a time, prefetched 16 keys ahead across the block's end): 2 threads split 1,500 keys
// into chunks of 188. GQA groups of 1 and 2 at head_dim 128 (8 AVX-512 vectors: queries and
// outputs held in registers), head_dim 64 and a group of 4 (the loops that load them per key),
// head_dim 256; on AVX2 the split paths of 16 and 32 vectors, groups of 1, 2 and 4; paged and not,
// BF16, FP8 and F32.
TEST_P(CpuOpsTest, AttentionDecodeLongChunks) {
  ThreadPool pool(2);
  ThreadPool::ScopedUse use(&pool);
  for (DType dt : {DType::kBF16, DType::kF8E4M3, DType::kF32}) {
    check_attention(1, 1500, 4, 2, 128, true, 1499, 0, 16, dt);
    check_attention(1, 1500, 2, 2, 128, true, 1499, 1, 0, dt);
    check_attention(2, 1500, 4, 2, 64, true, 1498, 0, 16, dt);
    check_attention(1, 1500, 8, 2, 128, true, 1499, 0, 32, dt);
    // head_dim 256 (LightOnOCR-3: groups of 4), and groups of 2 and 1 there (AVX2's split paths).
    check_attention(1, 700, 8, 2, 256, true, 699, 0, 16, dt);
    check_attention(2, 300, 4, 2, 256, true, 298, 1, 0, dt);
    check_attention(1, 150, 2, 2, 256, true, 149, 0, 16, dt);
  }
}

// An FP8 E4M3 KV cache (--kv-cache-dtype fp8) with a scale per row and kv head, against the oracle
// reading the same codes and scales: decode (the register paths at head_dim 64 / 128 and the
// generic loops with masked tails at odd head dims), several blocks, GQA, chunked prefill.
TEST_P(CpuOpsTest, AttentionFp8Kv) {
  const DType f8 = DType::kF8E4M3;
  check_attention(1, 131, 4, 2, 128, true, 130, 0, 16, f8);  // decode, partial last block
  check_attention(1, 1, 4, 4, 64, true, 0, 1, 0, f8);
  check_attention(3, 70, 4, 2, 128, true, 67, 2, 16, f8);
  check_attention(2, 300, 8, 2, 128, true, 40, 0, 0, f8);    // GQA group of 4
  check_attention(4, 1000, 2, 2, 64, false, 0, 3, 32, f8);   // many blocks, several key chunks
  check_attention(1, 50, 2, 1, 18, true, 49, 0, 16, f8);     // odd head_dim: masked tails
  check_attention(2, 77, 6, 3, 36, true, 75, 1, 16, f8);
  check_attention(1, 40, 2, 2, 32, true, 39, 0, 8, f8);      // 4 AVX2 vectors
  check_attention(1, 33, 3, 1, 100, true, 32, 2, 16, f8);
  check_attention(2, 20, 2, 1, 520, true, 18, 0, 16, f8);    // past the widening buffer: the generic loops
  check_attention(40, 103, 4, 2, 128, true, 63, 0, 16, f8);  // chunked prefill (tiled path)
  check_attention(45, 45, 4, 2, 128, true, 0, 0, 0, f8);
  check_attention(35, 50, 2, 1, 18, true, 15, 0, 16, f8);
}

TEST_P(CpuOpsTest, AttentionContiguousSingleKvHead) {
  // kv_stride == head_dim: the tiled path reads K and V in place (no head-major copy).
  check_attention(40, 40, 2, 1, 64, true, 0, 0);
  check_attention(70, 90, 3, 1, 128, false, 0, 0);
}

// Bidirectional attention over inputs far from 1 in both directions, and with a NaN. On an
// AVX512-FP16 CPU the bf16 paths take the fp16 tile (kernels_avx512_fp16.cc), whose inputs and sums
// leave fp16's range (6e-8 .. 65504) unless the driver scales q, k and v by powers of two first
// (cpu_attention.cc): queries up to 2e5 against keys down to 2e-5 (and the reverse; the scores are
// those of the other cases), values up to 3e4 (a sum of 64 would overflow) and down to 3e-5.
// Past 2^60 (queries times 1e20, values of 1e21 or 1e-21) no power of two is taken: the driver
// hands those calls to the other tiles, which must give the oracle's results as well.
TEST_P(CpuOpsTest, AttentionWideRangeInputs) {
  const int64_t n = 150, heads = 2, hd = 64, w = heads * hd;
  for (const float vscale : {3e4f, 3e-5f, 1e21f, 1e-21f}) {
    for (const float qscale : {1.0f, 1e5f, 1e-4f, 1e20f}) {
      SCOPED_TRACE(testing::Message() << "|v| up to " << vscale << ", q times " << qscale << ", k over it");
      auto q = random_vec(n * w, 51, -2.0f * qscale, 2.0f * qscale);
      auto k = random_vec(n * w, 52, -2.0f / qscale, 2.0f / qscale);
      auto v = random_vec(n * w, 53, -vscale, vscale);
      AttentionParams p;
      p.n_q = p.n_kv = n;
      p.n_heads = p.n_kv_heads = heads;
      p.head_dim = hd;
      p.q_stride = p.kv_stride = p.out_stride = w;
      p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
      std::vector<float> out(n * w, NAN), outr(n * w);
      ops_->attention(hv(q, n, w), hv(k, n, w), hv(v, n, w), hv(out, n, w), p);
      ref_->attention(hv(q, n, w), hv(k, n, w), hv(v, n, w), hv(outr, n, w), p);
      // check_attention's bounds, relative to the values' magnitude (outputs are convex combinations).
      const double tol = (bf16() ? 1.5e-2 : 2e-5) * vscale;
      int bad = 0;
      for (size_t i = 0; i < out.size() && bad < 5; ++i)
        if (!(std::fabs(static_cast<double>(out[i]) - outr[i]) <= tol)) {
          ++bad;
          ADD_FAILURE() << "out[" << i << "] = " << out[i] << " ref " << outr[i];
        }
      // A NaN value reaches the outputs of its head as it does in the oracle, on every path.
      v[7 * w + hd + 3] = NAN;
      ops_->attention(hv(q, n, w), hv(k, n, w), hv(v, n, w), hv(out, n, w), p);
      ref_->attention(hv(q, n, w), hv(k, n, w), hv(v, n, w), hv(outr, n, w), p);
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_EQ(std::isnan(out[i]), std::isnan(outr[i])) << "out[" << i << "] = " << out[i] << " ref " << outr[i];
    }
  }
}

TEST_P(CpuOpsTest, AttentionOddHeadDims) {
  check_attention(40, 40, 3, 3, 36, false, 0, 1);
  check_attention(35, 50, 2, 1, 18, true, 15, 0);
  check_attention(2, 50, 2, 1, 18, true, 48, 0);
}

// A prompt's rows (AttentionParams::prompt_rows) give the same bits however the prompt is split:
// all at once (the tiled path), or in pieces after a prefix already in the cache (q_offset > 0),
// down to single rows, which without prompt_rows would take the few-row decode path. So a prompt
// whose prefix came from the prefix cache, or that ran in chunks, gives the logits of one computed
// whole. Causal, GQA, head dims of 64 and 128, F32 and BF16 keys and values, contiguous or paged.
TEST_P(CpuOpsTest, AttentionPromptRowsDoNotDependOnTheSplit) {
  struct Case {
    int64_t n, heads, kv_heads, hd, block_size;
    DType kv_dtype;
  };
  for (const Case& c : {Case{150, 4, 2, 128, 0, DType::kF32}, Case{97, 3, 1, 64, 16, DType::kF32},
                        Case{150, 4, 2, 128, 16, DType::kBF16}, Case{70, 2, 2, 64, 0, DType::kBF16}}) {
    SCOPED_TRACE(testing::Message() << "n=" << c.n << " hd=" << c.hd << " block_size=" << c.block_size << " kv "
                                    << dtype_name(c.kv_dtype));
    const int64_t qw = c.heads * c.hd, kvw = c.kv_heads * c.hd;
    const auto q = random_vec(c.n * qw, 41, -2.0f, 2.0f);
    const auto kf = random_vec(c.n * kvw, 42, -2.0f, 2.0f);
    const auto vf = random_vec(c.n * kvw, 43);
    // Keys and values in the cache's type, in pool rows through a reversed block table when paged.
    const int64_t bs = c.block_size > 0 ? c.block_size : c.n, n_blocks = (c.n + bs - 1) / bs;
    std::vector<int32_t> table(n_blocks);
    for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(n_blocks - 1 - b);
    const size_t esz = c.kv_dtype == DType::kBF16 ? 2 : 4;
    std::vector<uint8_t> k(n_blocks * bs * kvw * esz), v(k.size());
    for (int64_t j = 0; j < c.n; ++j) {
      const int64_t row = c.block_size > 0 ? table[j / bs] * bs + j % bs : j;
      for (int64_t e = 0; e < kvw; ++e) {
        const size_t at = (row * kvw + e) * esz;
        if (esz == 2) {
          const uint16_t kb = f32_to_bf16(kf[j * kvw + e]), vb = f32_to_bf16(vf[j * kvw + e]);
          std::memcpy(&k[at], &kb, 2);
          std::memcpy(&v[at], &vb, 2);
        } else {
          std::memcpy(&k[at], &kf[j * kvw + e], 4);
          std::memcpy(&v[at], &vf[j * kvw + e], 4);
        }
      }
    }
    const int64_t pool_rows = n_blocks * bs;
    auto run = [&](int64_t r0, int64_t r1, float* out) {
      AttentionParams p;
      p.n_kv = r1;
      p.n_heads = c.heads;
      p.n_kv_heads = c.kv_heads;
      p.head_dim = c.hd;
      p.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
      p.causal = true;
      p.q_offset = r0;
      p.prompt_rows = true;
      if (c.block_size > 0) {
        p.block_table = table.data();
        p.block_size = bs;
      }
      const int64_t kv_rows = c.block_size > 0 ? pool_rows : r1;
      ops_->attention(hv(q, c.n, qw).rows_range(r0, r1 - r0), hv_kv(k.data(), c.kv_dtype, kv_rows, kvw, kvw),
                      hv_kv(v.data(), c.kv_dtype, kv_rows, kvw, kvw), hv(out + r0 * qw, r1 - r0, qw), p);
    };
    std::vector<float> whole(c.n * qw), split(c.n * qw, NAN);
    run(0, c.n, whole.data());
    for (int64_t piece : {1, 2, 5, 17, 18, 40, 64, 65}) {
      std::fill(split.begin(), split.end(), NAN);
      for (int64_t r0 = 0; r0 < c.n; r0 += piece) run(r0, std::min(c.n, r0 + piece), split.data());
      EXPECT_EQ(std::memcmp(split.data(), whole.data(), whole.size() * sizeof(float)), 0)
          << "the prompt in pieces of " << piece << " rows differs from the prompt at once";
    }
  }
}

TEST_P(CpuOpsTest, RmsNorm) {
  for (int64_t dim : {1, 15, 17, 33, 1024}) {
    for (DType dt : {DType::kF32, DType::kBF16}) {
      Matrix w = make_matrix(dt, 1, dim, 31);
      const int64_t rows = 5;
      auto x = random_vec(rows * dim, 32, -3.0f, 3.0f);
      std::vector<float> y(rows * dim), yr(rows * dim);
      ops_->rms_norm(hv(x, rows, dim), w, 1e-6f, hv(y, rows, dim));
      ref_->rms_norm(hv(x, rows, dim), w, 1e-6f, hv(yr, rows, dim));
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yr[i], 1e-5 * std::fabs(yr[i]) + 1e-7) << dim << " " << i;
      ops_->rms_norm(hv(x, rows, dim), w, 1e-6f, hv(x, rows, dim));  // in place
      for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(x[i], y[i]);
    }
  }
}

TEST_P(CpuOpsTest, Rope) {
  for (int64_t hd : {2, 34, 64, 128}) {
    const int64_t rows = 5, heads = 3, stride = heads * hd + 7, half = hd / 2;
    auto x = random_vec(rows * stride, 41, -2.0f, 2.0f);
    auto xr = x;
    std::vector<float> c(rows * half), s(rows * half);
    for (int64_t i = 0; i < rows * half; ++i) {
      c[i] = std::cos(0.37f * static_cast<float>(i));
      s[i] = std::sin(0.37f * static_cast<float>(i));
    }
    ops_->rope(hv(x, rows, heads * hd, stride), hv(c, rows, half), hv(s, rows, half));
    ref_->rope(hv(xr, rows, heads * hd, stride), hv(c, rows, half), hv(s, rows, half));
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], xr[i], 1e-6) << hd << " " << i;
  }
}

TEST_P(CpuOpsTest, SiluMulGeluAdd) {
  for (int64_t n : {1, 15, 17, 1000, 40000}) {
    const auto g = random_vec(n, 51, -12.0f, 12.0f), u = random_vec(n, 52, -3.0f, 3.0f);
    std::vector<float> o(n), orf(n);
    ops_->silu_mul(hv(g, 1, n), hv(u, 1, n), hv(o, 1, n));
    ref_->silu_mul(hv(g, 1, n), hv(u, 1, n), hv(orf, 1, n));
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(o[i], orf[i], 1e-6 * std::fabs(orf[i]) + 1e-30) << i;

    auto x = random_vec(n, 53, -10.0f, 10.0f), xr = x;
    ops_->gelu(hv(x, 1, n));
    ref_->gelu(hv(xr, 1, n));
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], xr[i], 4e-6 * std::fabs(xr[i]) + 1e-12) << i;

    auto y = random_vec(n, 54), yr = y;
    ops_->add(hv(y, 1, n), hv(u, 1, n));
    ref_->add(hv(yr, 1, n), hv(u, 1, n));
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], yr[i]) << i;
  }
}

TEST_P(CpuOpsTest, GeluExtremes) {
  std::vector<float> x = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 1.2374f, -1.2374f, 5.0f, -5.0f, 8.0f, -8.0f,
                          9.0f, -9.0f, 30.0f, -30.0f, 1e30f, -1e30f};
  auto xr = x;
  ops_->gelu(hv(x, 1, static_cast<int64_t>(x.size())));
  ref_->gelu(hv(xr, 1, static_cast<int64_t>(xr.size())));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], xr[i], 4e-6 * std::fabs(xr[i]) + 1e-12) << i;
}

TEST_P(CpuOpsTest, Embed) {
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int64_t dim : {1, 17, 64}) {
      Matrix t = make_matrix(dt, 50, dim, 61);
      const std::vector<int32_t> ids = {0, 49, 3, 3, 17};
      std::vector<float> o(ids.size() * dim), orf(ids.size() * dim);
      const int64_t n = static_cast<int64_t>(ids.size());
      ops_->embed(t, hv_i32(ids), hv(o, n, dim));
      ref_->embed(t, hv_i32(ids), hv(orf, n, dim));
      EXPECT_EQ(o, orf);
    }
  }
}

// A table whose prepared copy the model shares (a tied head): rows come from the panels where they
// hold them exactly, so the checkpoint's pages are not read. The table's data is swapped for
// zeros after prepare: the rows still come out where the panels are exact (f32 panels, or bf16
// panels of a BF16 table), and the data's zeros where they are not.
TEST_P(CpuOpsTest, EmbedFromTheHeadsPreparedCopy) {
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int64_t dim : {1, 17, 64, 130}) {
      SCOPED_TRACE(testing::Message() << dtype_name(dt) << " dim " << dim);
      const int64_t rows = 50;
      Matrix t = make_matrix(dt, rows, dim, 62);
      Matrix head = t;
      ops_->prepare(head);
      ASSERT_NE(head.packed, nullptr);
      std::vector<char> zeros(static_cast<size_t>(rows * dim) * dtype_size(dt), 0);
      Matrix shared = t;
      shared.data = zeros.data();
      shared.packed = head.packed;
      const std::vector<int32_t> ids = {0, 49, 31, 32, 3, 3, 17};
      const int64_t n = static_cast<int64_t>(ids.size());
      std::vector<float> o(ids.size() * dim, -1.0f), want(ids.size() * dim, 0.0f);
      ops_->embed(shared, hv_i32(ids), hv(o, n, dim));
      const bool exact = !bf16() || dt == DType::kBF16;
      if (exact) ref_->embed(t, hv_i32(ids), hv(want, n, dim));
      EXPECT_EQ(o, want) << (exact ? "rows from the panels" : "rows from the table's data");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuOpsTest, testing::ValuesIn(all_backends()), backend_name);

// ---------------------------------------------------------------------------------------------

class CpuMathTest : public testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpu_isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << cpu_isa_name(GetParam());
  }
};

double ulp_error(float got, double want) {
  const float wf = static_cast<float>(want);
  if (got == wf) return 0;
  const double ulp = std::fabs(static_cast<double>(std::nextafter(wf, INFINITY)) - wf);
  return std::fabs(got - want) / (ulp > 0 ? ulp : 1e-45);
}

// The largest ulp error seen over a sweep, and the input that gave it.
struct WorstUlp {
  double ulp = 0;
  float at = 0;
  void add(float got, double want, float x) {
    const double e = ulp_error(got, want);
    if (e > ulp) {
      ulp = e;
      at = x;
    }
  }
};

TEST_P(CpuMathTest, ErfWithinFewUlp) {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 4.5e-5f);  // [-9, 9]
  for (float e : {1e-30f, 1e-10f, 1e-5f, 20.0f, 1e30f, INFINITY}) {
    x.push_back(e);
    x.push_back(-e);
  }
  std::vector<float> y(x.size());
  cpu_erf_for_testing(GetParam(), x.data(), y.data(), static_cast<int64_t>(x.size()));
  WorstUlp worst;
  for (size_t i = 0; i < x.size(); ++i) worst.add(y[i], std::erf(static_cast<double>(x[i])), x[i]);
  EXPECT_LE(worst.ulp, 4.0) << "at x = " << worst.at;
  RecordProperty("max_ulp", std::to_string(worst.ulp));
}

TEST_P(CpuMathTest, ExpWithinFewUlp) {
  std::vector<float> x;
  for (int i = -87000; i <= 87990; ++i) x.push_back(static_cast<float>(i) * 1e-3f + 0.000123f);
  std::vector<float> y(x.size());
  cpu_exp_for_testing(GetParam(), x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    if (want < 1.2e-38) continue;  // subnormal results are not promised
    worst = std::max(worst, ulp_error(y[i], want));
  }
  EXPECT_LE(worst, 2.0);
}

// The attention softmax's 2^x (arguments <= 0, -inf where masked) against std::exp2 in double:
// within 2 ulp down to -126, and 2^-126 below it and for -inf (its documented clamp).
TEST_P(CpuMathTest, SoftmaxExp2WithinFewUlpAndClampedBelowMinus126) {
  std::vector<float> x;
  for (int i = -126000; i <= 0; ++i) x.push_back(static_cast<float>(i) * 1e-3f);
  for (float v : {-126.5f, -200.0f, -1e30f, -INFINITY}) x.push_back(v);
  std::vector<float> y(x.size());
  cpu_kernel_table(GetParam())->exp2_softmax(x.data(), y.data(), static_cast<int64_t>(x.size()));
  WorstUlp worst;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] < -126.0f) {
      EXPECT_EQ(y[i], std::ldexp(1.0f, -126)) << "at x = " << x[i];
      continue;
    }
    worst.add(y[i], std::exp2(static_cast<double>(x[i])), x[i]);
  }
  EXPECT_LE(worst.ulp, 2.0) << "at x = " << worst.at;
  RecordProperty("max_ulp", std::to_string(worst.ulp));
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuMathTest, testing::ValuesIn(kAllCpuIsas),
                         [](const testing::TestParamInfo<CpuIsa>& i) {
                           std::string s = cpu_isa_name(i.param);
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// Every ISA path widens all 256 E4M3 codes as core/fp8.h does (NaN codes to NaN), at every
// length (full vectors and masked tails).
TEST_P(CpuMathTest, Fp8DecodeMatchesScalar) {
  const cpu::KernelTable* t = cpu_kernel_table(GetParam());
  ASSERT_NE(t->fp8_to_f32, nullptr);
  std::vector<uint8_t> codes(256 + 37);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>((i * 7) & 0xff);  // every code, shuffled
  for (int64_t n : {int64_t(256 + 37), int64_t(1), int64_t(7), int64_t(15), int64_t(17), int64_t(256)}) {
    std::vector<float> y(n + 1, 12345.0f);
    t->fp8_to_f32(codes.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = fp8_e4m3_to_f32(codes[i]);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(y[i])) << "code " << int(codes[i]);
      else EXPECT_EQ(std::memcmp(&y[i], &want, 4), 0) << "code " << int(codes[i]) << ": " << y[i] << " vs " << want;
    }
    EXPECT_EQ(y[n], 12345.0f) << "wrote past n = " << n;
  }
}

// The vector f32 -> bf16 conversion (the BF16 KV cache's stores) is core/dtype.h's f32_to_bf16 bit
// for bit: ties to even, carries into the exponent, infinities, NaNs (quiet, top bits kept),
// subnormals, signed zeros, random values; tails of every length.
TEST_P(CpuMathTest, Bf16RoundingMatchesScalar) {
  const cpu::KernelTable* t = cpu_kernel_table(GetParam());
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu,
                                0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7f800001u, 0xffc00001u, 0x7fbfffffu,
                                0x00000001u, 0x807fffffu, 0x00008000u, 0x00018000u, 0x477fe000u, 0xc77fe000u};
  uint32_t s = 12345;
  for (int i = 0; i < 300; ++i) bits.push_back(s = s * 1664525u + 1013904223u);
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  for (int64_t n : {static_cast<int64_t>(x.size()), int64_t{1}, int64_t{7}, int64_t{15}, int64_t{17}, int64_t{33}}) {
    std::vector<uint16_t> y(n + 1, 0xabcd);
    t->f32_to_bf16_round(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(y[i], f32_to_bf16(x[i])) << std::hex << "bits 0x" << bits[i] << " (n = " << std::dec << n << ")";
    EXPECT_EQ(y[n], 0xabcd) << "wrote past n = " << n;
  }
}

// The AVX-512 tables carry the fp16 attention tile exactly where the CPU has AVX512-FP16 (CPUID
// leaf 7, EDX bit 23), so on such a CPU the bf16 attention cases above run it; the others have none.
TEST(CpuBackends, Fp16AttentionTileWhereTheCpuHasIt) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool fp16 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 23)) != 0;
  for (CpuIsa isa : kAllCpuIsas) {
    if (!cpu_isa_supported(isa)) continue;
    const cpu::KernelTable* t = cpu_kernel_table(isa);
    const bool avx512 = isa == CpuIsa::kAvx512 || isa == CpuIsa::kAvx512Vnni || isa == CpuIsa::kAvx512Bf16;
    EXPECT_EQ(t->attn_tile_f16 != nullptr, avx512 && fp16) << cpu_isa_name(isa);
    EXPECT_EQ(t->attn_pack_f16 != nullptr, avx512 && fp16) << cpu_isa_name(isa);
  }
}

// cpu_best_isa() is the widest supported path, or with LOCR_CPU_ISA set (CTest's isa_cap_* entries
// run this under each name) the widest supported one not after it in kAllCpuIsas' order; every
// path's kernel table says its own name.
TEST(CpuBackends, BestIsaIsTheWidestSupportedUpToTheCap) {
  const char* env = std::getenv("LOCR_CPU_ISA");
  CpuIsa cap = kAllCpuIsas[std::size(kAllCpuIsas) - 1];
  if (env && *env) {
    const auto* it = std::find_if(std::begin(kAllCpuIsas), std::end(kAllCpuIsas),
                                  [&](CpuIsa isa) { return std::string(env) == cpu_isa_name(isa); });
    ASSERT_NE(it, std::end(kAllCpuIsas)) << "LOCR_CPU_ISA=" << env << " names no path";
    cap = *it;
  }
  const CpuIsa best = cpu_best_isa();
  EXPECT_TRUE(cpu_isa_supported(best)) << cpu_isa_name(best);
  EXPECT_LE(static_cast<int>(best), static_cast<int>(cap));
  for (CpuIsa isa : kAllCpuIsas) {
    if (static_cast<int>(isa) > static_cast<int>(best) && static_cast<int>(isa) <= static_cast<int>(cap)) {
      EXPECT_FALSE(cpu_isa_supported(isa)) << cpu_isa_name(isa) << " is supported and wider than "
                                           << cpu_isa_name(best);
    }
    if (cpu_isa_supported(isa)) {
      EXPECT_STREQ(cpu_kernel_table(isa)->isa, cpu_isa_name(isa));
    }
  }
  if (env && *env && cpu_isa_supported(cap)) {
    EXPECT_EQ(best, cap);
  }
}

TEST(CpuBackends, RegisteredNames) {
  EXPECT_NE(make_ops("cpu"), nullptr);
  EXPECT_EQ(std::string(make_ops("cpu-f32")->name()).rfind("cpu-f32/", 0), 0u);
  EXPECT_NE(std::string(make_ops("cpu-bf16")->name()).find("cpu-bf16"), std::string::npos);
  EXPECT_TRUE(cpu_isa_supported(CpuIsa::kGeneric));
}

}  // namespace
}  // namespace locr::kernels
