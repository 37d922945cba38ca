// Cosine similarity of two float vectors (over the shorter one's length), in double: what the tests
// that compare a quantized or converted model's outputs with a reference's use as the seeds'
// accuracy measure (locr eval's min_cosine).
#pragma once

#include <cmath>
#include <vector>

namespace locr::test {

inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace locr::test
