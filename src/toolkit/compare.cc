#include "toolkit/compare.h"

#include <algorithm>
#include <cmath>

namespace locr::toolkit {

CompareStats compare_tensors(const float* c, const float* r, int64_t n) {
  CompareStats s;
  s.n = n;
  double sum_abs = 0, sum_rel = 0, dot = 0, cc = 0, rr = 0, dd = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = c[i], b = r[i], d = a - b, ad = std::fabs(d);
    if (!(ad <= s.max_abs_error)) s.max_abs_error = ad;  // NaN propagates
    sum_abs += ad;
    sum_rel += ad / std::max(std::fabs(b), 1e-6);
    dot += a * b, cc += a * a, rr += b * b, dd += d * d;
  }
  if (n > 0) {
    s.mean_abs_error = sum_abs / static_cast<double>(n);
    s.relative_error = sum_rel / static_cast<double>(n);
  }
  s.relative_l2_error = rr > 0 ? std::sqrt(dd / rr) : (dd > 0 ? INFINITY : 0.0);
  if (cc > 0 && rr > 0) s.cosine_similarity = dot / std::sqrt(cc * rr);
  else s.cosine_similarity = (cc == 0 && rr == 0) ? 1.0 : 0.0;
  if (std::isnan(dot) || std::isnan(cc)) s.cosine_similarity = NAN;
  return s;
}

bool passes(const CompareStats& s, const Thresholds& t) {
  return s.max_abs_error < t.max_abs_error && s.cosine_similarity > t.min_cosine;  // false on NaN
}

nlohmann::ordered_json to_json(const CompareStats& s) {
  nlohmann::ordered_json j;
  j["elements"] = s.n;
  j["max_abs_error"] = s.max_abs_error;
  j["mean_abs_error"] = s.mean_abs_error;
  j["relative_error"] = s.relative_error;
  j["relative_l2_error"] = s.relative_l2_error;
  j["cosine_similarity"] = s.cosine_similarity;
  return j;
}

void StatsSummary::add(const CompareStats& s, bool pass) {
  ++tensors;
  if (!pass) ++failed;
  elements += s.n;
  if (!(s.max_abs_error <= max_abs_error)) max_abs_error = s.max_abs_error;
  sum_abs += s.mean_abs_error * static_cast<double>(s.n);
  sum_rel += s.relative_error * static_cast<double>(s.n);
  if (!(s.cosine_similarity >= min_cosine)) min_cosine = s.cosine_similarity;
  max_relative_l2 = std::max(max_relative_l2, s.relative_l2_error);
}

nlohmann::ordered_json StatsSummary::to_json() const {
  nlohmann::ordered_json j;
  j["tensors"] = tensors;
  j["failed_tensors"] = failed;
  j["elements"] = elements;
  j["max_abs_error"] = max_abs_error;
  j["mean_abs_error"] = elements ? sum_abs / static_cast<double>(elements) : 0.0;
  j["relative_error"] = elements ? sum_rel / static_cast<double>(elements) : 0.0;
  j["max_relative_l2_error"] = max_relative_l2;
  j["min_cosine_similarity"] = min_cosine;
  j["pass"] = failed == 0;
  return j;
}

}  // namespace locr::toolkit
