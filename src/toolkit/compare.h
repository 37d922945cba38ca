// Tensor comparison for `locr eval` (the seeds' eval_accuracy.py metrics): candidate vs reference.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace locr::toolkit {

struct CompareStats {
  int64_t n = 0;
  double max_abs_error = 0;
  double mean_abs_error = 0;
  // Mean of |c - r| / max(|r|, 1e-6) over elements: large where the reference is near zero
  // (reported, never judged, as in the seeds).
  double relative_error = 0;
  double relative_l2_error = 0;  // ||c - r|| / ||r||
  double cosine_similarity = 1;  // of the flattened tensors (1 when both are all zero)
};

CompareStats compare_tensors(const float* candidate, const float* reference, int64_t n);

struct Thresholds {
  double max_abs_error = 1.0;       // pass: max_abs_error < this
  double min_cosine = 0.999;        // pass: cosine_similarity > this
};

bool passes(const CompareStats& s, const Thresholds& t);

nlohmann::ordered_json to_json(const CompareStats& s);

// Accumulates stats of many tensors into overall ones (max of max, element-weighted means,
// min cosine).
struct StatsSummary {
  int64_t tensors = 0, failed = 0, elements = 0;
  double max_abs_error = 0, sum_abs = 0, sum_rel = 0, min_cosine = 1, max_relative_l2 = 0;
  void add(const CompareStats& s, bool pass);
  nlohmann::ordered_json to_json() const;
};

}  // namespace locr::toolkit
