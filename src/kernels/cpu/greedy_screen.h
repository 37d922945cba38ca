// The greedy head from an 8-bit screen: the exact argmax of x · Wᵀ (the bits matmul gives) while
// reading about 56% of a BF16 head's bytes. Decode at batch 1 is bound by streaming the weights,
// and the tied head of a Qwen3 / Qwen3.5 OCR model is a fifth to a third of them.
//
// Each head row r is stored as int8 q with, per block b of kScreenBlock columns, a scale d_b,r
// (bf16, rounded up from max|w| / 127 so that |q| <= 127) and a coefficient c_b,r: the block's
// largest |w - d q|, plus the FP32 rounding terms of both sums (below), rounded up. For an
// activation row h (as the exact GEMM multiplies it: rounded to bf16 where the backend computes
// in bf16) with l1_b = sum_{k in b} |h_k|:
//   s_r = sum_b d_b,r sum_{k in b} q_k,r h_k        (the screen, kernels_screen.h)
//   |exact_r - s_r| <= B_r = (1 + 2^-10) sum_b c_b,r l1_b + 1e-30
// where exact_r is the value matmul computes for row r. The rounding terms: the exact GEMM's
// accumulation over K (each step one rounding, two without a fused multiply-add) is within
// gamma * sum |w h| with gamma = 2.05 (K + 64) 2^-24, and |w| <= 127 d + err; the screen's within
// gamma * sum 127 d |h|. The (1 + 2^-10) covers the rounding of B's own sums, 1e-30 the flushing
// of denormal products. So with T = max_r (s_r - B_r), any row with s_r + B_r < T has
// exact_r < T <= the largest exact value: only the rest (the candidates) are computed exactly, by
// the same GEMM calls matmul makes, and their argmax (lowest index among equals) is matmul's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace locr::kernels::cpu {

struct GreedyScreen {
  int64_t n = 0, k = 0, groups = 0;
  int8_t* q = nullptr;     // [groups][k][kScreenRows]
  uint16_t* dc = nullptr;  // [groups][k / kScreenBlock][2][kScreenRows] bf16: d, then c
  GreedyScreen() = default;
  GreedyScreen(const GreedyScreen&) = delete;
  GreedyScreen& operator=(const GreedyScreen&) = delete;
  ~GreedyScreen();
  size_t bytes() const;
};

// The screen of an n x k weight whose row r, as the exact GEMM multiplies it (f32 values), `row`
// writes to its second argument. Null when k is not a multiple of kScreenBlock or a weight is not
// finite (or above 1e30). Rows are read from several threads.
std::shared_ptr<GreedyScreen> build_greedy_screen(int64_t n, int64_t k,
                                                  const std::function<void(int64_t, float*)>& row);

// Activation rows as the screen takes them: h[m][k] (`round_bf16`: rounded to bf16 as the exact
// GEMM rounds them) and l1[m][b]. False when a value is not finite (the caller then computes the
// full product).
bool screen_inputs(const float* x, int64_t ldx, int64_t m, int64_t k, bool round_bf16, float* h, float* l1);

// Candidates of activation row m from the screen's s and e ([m][ld], rows n): appends to `rows`
// the rows whose exact value may be the largest, in increasing order. False when a value is not
// finite.
bool screen_candidates(const float* s, const float* e, int64_t n, std::vector<int64_t>* rows);

}  // namespace locr::kernels::cpu
