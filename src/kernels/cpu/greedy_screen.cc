#include "kernels/cpu/greedy_screen.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_driver.h"

namespace locr::kernels::cpu {

namespace {

// x (> 0, finite) as bf16, rounded up.
uint16_t bf16_up(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, INFINITY);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0xffffu) != 0) u = (u & 0xffff0000u) + 0x10000u;
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace

GreedyScreen::~GreedyScreen() {
  std::free(q);
  std::free(dc);
}

size_t GreedyScreen::bytes() const {
  return static_cast<size_t>(groups * kScreenRows) * static_cast<size_t>(k + k / kScreenBlock * 4);
}

std::shared_ptr<GreedyScreen> build_greedy_screen(int64_t n, int64_t k,
                                                  const std::function<void(int64_t, float*)>& row) {
  if (n <= 0 || k <= 0 || k % kScreenBlock != 0) return nullptr;
  auto sc = std::make_shared<GreedyScreen>();
  sc->n = n;
  sc->k = k;
  sc->groups = ceil_div(n, kScreenRows);
  const int64_t nb = k / kScreenBlock;
  sc->q = static_cast<int8_t*>(aligned_bytes(static_cast<size_t>(sc->groups * k * kScreenRows)));
  sc->dc = static_cast<uint16_t*>(aligned_bytes(static_cast<size_t>(sc->groups * nb * 2 * kScreenRows) * 2));
  const double gamma = 2.05 * static_cast<double>(k + 64) * std::ldexp(1.0, -24);
  std::atomic<bool> finite{true};  // a weight that is not finite: no screen (the full product then)
  ThreadPool::global().parallel_for(sc->groups, 1, [&](int64_t g0, int64_t g1, int) {
    std::vector<float> w(static_cast<size_t>(k));
    for (int64_t g = g0; g < g1; ++g) {
      int8_t* q = sc->q + g * k * kScreenRows;
      uint16_t* dc = sc->dc + g * nb * 2 * kScreenRows;
      for (int c = 0; c < kScreenRows; ++c) {
        const int64_t r = g * kScreenRows + c;
        if (r < n) {
          row(r, w.data());
        } else {
          std::fill(w.begin(), w.end(), 0.0f);  // padding rows: exactly 0, never candidates
        }
        for (int64_t b = 0; b < nb; ++b) {
          const float* wb = w.data() + b * kScreenBlock;
          double amax = 0;
          bool ok = true;
          for (int i = 0; i < kScreenBlock; ++i) {
            ok = ok && std::fabs(wb[i]) <= 1e30f;  // false for inf and NaN
            amax = std::max(amax, std::fabs(static_cast<double>(wb[i])));
          }
          if (!ok) {  // the bounds below would not hold
            finite = false;
            amax = 0;
          }
          uint16_t d16 = 0;
          double d = 0, err = 0;
          if (amax > 0) {
            d16 = bf16_up(amax / 127.0);
            d = static_cast<double>(bf16_to_f32(d16));
          }
          for (int i = 0; i < kScreenBlock; ++i) {
            int qi = 0;
            if (d > 0) qi = static_cast<int>(std::clamp(std::nearbyint(static_cast<double>(wb[i]) / d), -127.0, 127.0));
            q[(b * kScreenBlock + i) * kScreenRows + c] = static_cast<int8_t>(qi);
            err = std::max(err, std::fabs(static_cast<double>(wb[i]) - d * qi));
          }
          const double coef = err + gamma * (254.0 * d + err);
          dc[b * 2 * kScreenRows + c] = d16;
          dc[b * 2 * kScreenRows + kScreenRows + c] = coef > 0 ? bf16_up(coef) : 0;
        }
      }
    }
  });
  return finite ? sc : nullptr;
}

bool screen_inputs(const float* x, int64_t ldx, int64_t m, int64_t k, bool round_bf16, float* h, float* l1) {
  const int64_t nb = k / kScreenBlock;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t b = 0; b < nb; ++b) {
      float sum = 0;
      for (int64_t j = b * kScreenBlock; j < (b + 1) * kScreenBlock; ++j) {
        float v = x[i * ldx + j];
        if (round_bf16) v = bf16_to_f32(f32_to_bf16(v));
        if (!std::isfinite(v)) return false;
        h[i * k + j] = v;
        sum += std::fabs(v);
      }
      l1[i * nb + b] = sum;
    }
  return true;
}

bool screen_candidates(const float* s, const float* e, int64_t n, std::vector<int64_t>* rows) {
  auto bound = [&](int64_t r) { return static_cast<double>(e[r]) * (1.0 + 1.0 / 1024) + 1e-30; };
  double t = -INFINITY;
  for (int64_t r = 0; r < n; ++r) {
    if (!std::isfinite(s[r]) || !std::isfinite(e[r])) return false;
    t = std::max(t, static_cast<double>(s[r]) - bound(r));
  }
  for (int64_t r = 0; r < n; ++r)
    if (static_cast<double>(s[r]) + bound(r) >= t) rows->push_back(r);
  return true;
}

}  // namespace locr::kernels::cpu
