// Numeric comparison helpers shared by golden and kernel tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace locr::test {

struct Diff {
  double max_abs = 0, mean_abs = 0, cosine = 1, max_ref = 0;
  int64_t n = 0;
  std::string str() const {
    return "max_abs=" + std::to_string(max_abs) + " mean_abs=" + std::to_string(mean_abs) +
           " cosine=" + std::to_string(cosine) + " max|ref|=" + std::to_string(max_ref) + " n=" + std::to_string(n);
  }
};

inline Diff compare(const float* got, const float* ref, int64_t n) {
  Diff d;
  d.n = n;
  double dot = 0, ng = 0, nr = 0, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = got[i], b = ref[i];
    const double e = std::fabs(a - b);
    if (!(e <= d.max_abs)) d.max_abs = std::isnan(e) ? INFINITY : e;
    sum += e;
    dot += a * b;
    ng += a * a;
    nr += b * b;
    d.max_ref = std::fmax(d.max_ref, std::fabs(b));
  }
  d.mean_abs = n ? sum / n : 0;
  d.cosine = (ng == 0 && nr == 0) ? 1.0 : dot / (std::sqrt(ng) * std::sqrt(nr) + 1e-300);
  return d;
}

}  // namespace locr::test
