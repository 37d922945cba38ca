// The greedy head's 8-bit screen (kernels/cpu/greedy_screen.h) and Ops::matmul_argmax on every
// precision x ISA path this CPU runs: the screen's bound holds for every row against the values
// matmul computes, it leaves few candidates, and matmul_argmax equals the argmax of matmul's output
// (the first maximum) bit for bit, ties and near-ties included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/greedy_screen.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

using testing_util::hv;
using testing_util::make_matrix;
using testing_util::random_vec;

struct Path {
  CpuPrecision precision;
  CpuIsa isa;
};

std::vector<Path> paths_here() {
  std::vector<Path> out;
  for (CpuIsa isa : kAllCpuIsas)
    if (cpu_isa_supported(isa))
      for (CpuPrecision p : {CpuPrecision::kF32, CpuPrecision::kBF16}) out.push_back({p, isa});
  return out;
}

std::string path_name(const Path& p) {
  return std::string(p.precision == CpuPrecision::kF32 ? "cpu-f32/" : "cpu-bf16/") + cpu_isa_name(p.isa);
}

int32_t first_max(const float* y, int64_t n) {
  int64_t best = 0;
  for (int64_t r = 1; r < n; ++r)
    if (y[r] > y[best]) best = r;
  return static_cast<int32_t>(best);
}

// The rows of w as the packed GEMM multiplies them (bf16 panels round F32 rows to bf16).
std::vector<float> gemm_rows(const Matrix& w, CpuPrecision p) {
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c) {
      float v = w.at(r, c);
      if (w.dtype == DType::kF32 && p == CpuPrecision::kBF16) v = bf16_to_f32(f32_to_bf16(v));
      out[r * w.cols + c] = v;
    }
  return out;
}

// Activation rows 0..2 are random; row 3 is the worst case for head row kAdv: h_k = the sign of
// (w_k - d q_k), so its quantization errors all add up and the bound's main term is nearly reached.
TEST(GreedyScreen, BoundHoldsForEveryRowAndLeavesFewCandidates) {
  const int64_t N = 4099, K = 256, M = 4, kAdv = 21;  // a partial last group of 16 rows
  for (const Path& path : paths_here())
    for (DType dt : {DType::kBF16, DType::kF32}) {
      SCOPED_TRACE(path_name(path) + " " + dtype_name(dt));
      auto ops = make_cpu_ops(path.precision, path.isa);
      Matrix w = make_matrix(dt, N, K, 31, 0.05f);
      ops->prepare(w);
      const std::vector<float> rows = gemm_rows(w, path.precision);
      auto sc = cpu::build_greedy_screen(N, K, [&](int64_t r, float* out) {
        std::copy(rows.begin() + r * K, rows.begin() + (r + 1) * K, out);
      });
      ASSERT_NE(sc, nullptr);
      const int64_t nb = K / cpu::kScreenBlock, ld = sc->groups * cpu::kScreenRows;
      auto x = random_vec(static_cast<size_t>(M * K), 32, -2.0f, 2.0f);
      const int64_t g = kAdv / cpu::kScreenRows, c = kAdv % cpu::kScreenRows;
      for (int64_t k = 0; k < K; ++k) {
        const float d = bf16_to_f32(sc->dc[(g * nb + k / cpu::kScreenBlock) * 2 * cpu::kScreenRows + c]);
        const float q = sc->q[(g * K + k) * cpu::kScreenRows + c];
        x[3 * K + k] = rows[kAdv * K + k] - d * q >= 0 ? 1.0f : -1.0f;
      }
      std::vector<float> y(static_cast<size_t>(M * N));
      ops->matmul(hv(x, M, K), w, hv(y, M, N));
      std::vector<float> h(M * K), l1(M * nb), s(M * ld), e(M * ld);
      ASSERT_TRUE(cpu::screen_inputs(x.data(), K, M, K, path.precision == CpuPrecision::kBF16, h.data(), l1.data()));
      const cpu::ScreenArgs a{sc->q, sc->dc, K, h.data(), l1.data(), M, s.data(), e.data(), ld};
      cpu_kernel_table(path.isa)->screen_rows(a, 0, sc->groups);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t r = 0; r < N; ++r) {
          const double err = std::fabs(static_cast<double>(y[m * N + r]) - s[m * ld + r]);
          ASSERT_LE(err, static_cast<double>(e[m * ld + r]) * (1.0 + 1.0 / 1024) + 1e-30) << "row " << r;
        }
        if (m == 3) {
          // Errors uniform within each block reach about half the bound here: a bound under half
          // as large fails this test (checked with 0.45 times it).
          const double err = std::fabs(static_cast<double>(y[3 * N + kAdv]) - s[3 * ld + kAdv]);
          EXPECT_GT(err, 0.35 * e[3 * ld + kAdv]);
          continue;
        }
        std::vector<int64_t> cand;
        ASSERT_TRUE(cpu::screen_candidates(s.data() + m * ld, e.data() + m * ld, N, &cand));
        EXPECT_TRUE(std::count(cand.begin(), cand.end(), first_max(y.data() + m * N, N)) == 1);
        EXPECT_LE(cand.size(), 40u) << "of " << N << " rows";
      }
    }
}

// matmul_argmax against the argmax of matmul, with exact ties (identical rows: the first wins) and
// near-ties (one element one bf16 step apart), at the decode batch sizes.
TEST(GreedyScreen, MatmulArgmaxIsTheArgmaxOfMatmul) {
  const int64_t N = 8195, K = 192;
  for (const Path& path : paths_here())
    for (DType dt : {DType::kBF16, DType::kF32}) {
      SCOPED_TRACE(path_name(path) + " " + dtype_name(dt));
      auto ops = make_cpu_ops(path.precision, path.isa);
      Matrix w = make_matrix(dt, N, K, 41, 0.05f);
      const auto x = random_vec(static_cast<size_t>(9 * K), 42, -2.0f, 2.0f);
      // Rows 700 and 6000: the same, pointing along x's row 0 (the largest logit of row 0); row
      // 6001: row 6000 with one element moved by a bf16 step.
      auto set = [&](int64_t r, int64_t c, float v) {
        if (dt == DType::kF32) {
          (*std::static_pointer_cast<std::vector<float>>(w.holder))[r * K + c] = v;
        } else {
          (*std::static_pointer_cast<std::vector<uint16_t>>(w.holder))[r * K + c] = f32_to_bf16(v);
        }
      };
      for (int64_t c = 0; c < K; ++c) {
        const float v = bf16_to_f32(f32_to_bf16(0.05f * x[c] / 2.0f));
        for (int64_t r : {700, 6000, 6001}) set(r, c, v);
      }
      set(6001, 5, bf16_to_f32(f32_to_bf16(w.at(6001, 5)) + (x[5] > 0 ? 1 : -1)));
      ops->prepare(w);
      ops->prepare_argmax(w);
      EXPECT_GT(ops->argmax_extra_bytes(w), 0u);
      for (int64_t M : {1, 2, 5, 9}) {
        std::vector<float> y(static_cast<size_t>(M * N));
        ops->matmul(hv(x, M, K), w, hv(y, M, N));
        std::vector<int32_t> got(static_cast<size_t>(M), -1);
        ops->matmul_argmax(hv(x, M, K), w, got.data());
        for (int64_t m = 0; m < M; ++m) EXPECT_EQ(got[m], first_max(y.data() + m * N, N)) << "M=" << M << " row " << m;
      }
    }
}

TEST(GreedyScreen, WithoutAScreenTheWholeHeadGivesTheSameAnswer) {
  for (const Path& path : paths_here()) {
    SCOPED_TRACE(path_name(path));
    auto ops = make_cpu_ops(path.precision, path.isa);
    // K not a multiple of the screen's block: no screen.
    Matrix w = make_matrix(DType::kBF16, 300, 100, 51);
    ops->prepare(w);
    ops->prepare_argmax(w);
    EXPECT_EQ(ops->argmax_extra_bytes(w), 0u);
    const auto x = random_vec(3 * 100, 52);
    std::vector<float> y(3 * 300);
    ops->matmul(hv(x, 3, 100), w, hv(y, 3, 300));
    std::vector<int32_t> got(3);
    ops->matmul_argmax(hv(x, 3, 100), w, got.data());
    for (int64_t m = 0; m < 3; ++m) EXPECT_EQ(got[m], first_max(y.data() + m * 300, 300));
    // Every row equal: every row a candidate (the full product), the first one wins.
    Matrix flat = make_matrix(DType::kBF16, 2000, 64, 53);
    auto& v = *std::static_pointer_cast<std::vector<uint16_t>>(flat.holder);
    for (int64_t r = 1; r < 2000; ++r) std::copy(v.begin(), v.begin() + 64, v.begin() + r * 64);
    ops->prepare(flat);
    ops->prepare_argmax(flat);
    const auto x2 = random_vec(64, 54);
    int32_t tok = -1;
    ops->matmul_argmax(hv(x2, 1, 64), flat, &tok);
    EXPECT_EQ(tok, 0);
  }
}

TEST(GreedyScreen, NoScreenOfAWeightThatIsNotFinite) {
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    auto sc = cpu::build_greedy_screen(40, 64, [&](int64_t r, float* out) {
      for (int64_t c = 0; c < 64; ++c) out[c] = 0.01f * static_cast<float>(c - r);
      if (r == 17) out[5] = bad;
    });
    EXPECT_EQ(sc, nullptr) << bad;
  }
}

// The oracle backend has no screen: the default (the whole product, then the argmax).
TEST(GreedyScreen, ReferenceBackendTakesTheDefault) {
  auto ops = make_ops("ref");
  Matrix w = make_matrix(DType::kBF16, 500, 64, 61);
  ops->prepare(w);
  ops->prepare_argmax(w);
  EXPECT_EQ(ops->argmax_extra_bytes(w), 0u);
  const auto x = random_vec(2 * 64, 62);
  std::vector<float> y(2 * 500);
  ops->matmul(hv(x, 2, 64), w, hv(y, 2, 500));
  std::vector<int32_t> got(2);
  ops->matmul_argmax(hv(x, 2, 64), w, got.data());
  for (int64_t m = 0; m < 2; ++m) EXPECT_EQ(got[m], first_max(y.data() + m * 500, 500));
}

}  // namespace
}  // namespace locr::kernels
