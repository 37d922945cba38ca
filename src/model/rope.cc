#include "model/rope.h"

#include <cmath>

namespace locr::model {

std::vector<float> rope_inv_freq(double theta, int head_dim) {
  // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all in float32.
  std::vector<float> f(head_dim / 2);
  for (int d = 0; d < head_dim / 2; ++d) {
    const float e = static_cast<float>(2 * d) / static_cast<float>(head_dim);
    const float p = std::pow(static_cast<float>(theta), e);
    f[d] = 1.0f / p;
  }
  return f;
}

RopeTable text_rope(double theta, int head_dim, int64_t pos0, int64_t n) {
  const std::vector<float> inv = rope_inv_freq(theta, head_dim);
  const int half = head_dim / 2;
  RopeTable t;
  t.cos.resize(n * half);
  t.sin.resize(n * half);
  for (int64_t i = 0; i < n; ++i) {
    const float pos = static_cast<float>(pos0 + i);
    for (int d = 0; d < half; ++d) {
      const float a = pos * inv[d];
      t.cos[i * half + d] = std::cos(a);
      t.sin[i * half + d] = std::sin(a);
    }
  }
  return t;
}

RopeTable vision_rope(double theta, int head_dim, int grid_h, int grid_w) {
  const std::vector<float> w = rope_inv_freq(theta, head_dim);  // head_dim/2 frequencies
  const int half = head_dim / 2, quarter = head_dim / 4;
  RopeTable t;
  const int64_t n = static_cast<int64_t>(grid_h) * grid_w;
  t.cos.resize(n * half);
  t.sin.resize(n * half);
  for (int r = 0; r < grid_h; ++r)
    for (int c = 0; c < grid_w; ++c) {
      const int64_t row = static_cast<int64_t>(r) * grid_w + c;
      for (int d = 0; d < quarter; ++d) {
        const float ah = static_cast<float>(r) * w[2 * d];
        const float aw = static_cast<float>(c) * w[2 * d + 1];
        t.cos[row * half + d] = std::cos(ah);
        t.sin[row * half + d] = std::sin(ah);
        t.cos[row * half + quarter + d] = std::cos(aw);
        t.sin[row * half + quarter + d] = std::sin(aw);
      }
    }
  return t;
}

}  // namespace locr::model
