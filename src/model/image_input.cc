// The image input both families share: torch's uint8 antialiased bicubic kernel
// (aten/src/ATen/native/cpu/UpSampleKernel.cpp: _compute_index_ranges_int16_weights,
// basic_loop_aa_horizontal/vertical<uint8_t>), as both families' image processors (transformers'
// torchvision backend) run it, and the normalisation of a preprocessed image. Everything here is
// plain scalar code; it is run once per request image, outside the model's hot path.
#include "model/image_input.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

// The weight polynomial must be evaluated with separate multiply and add roundings, as torch does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace locr::model {

namespace {

// torch HelperInterpCubic::aa_filter<double> with Keys' a = -0.5 (the antialias variant).
double cubic_aa_filter(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

// Taps of one output position along one axis.
struct AxisWeights {
  int64_t taps = 0;                 // max taps per output (torch's max_interp_size)
  int precision = 0;                // fixed-point bits of the int16 weights
  std::vector<int64_t> start, size;  // [out] first input index and number of taps
  std::vector<int16_t> w;           // [out, taps]
};

// torch _compute_index_ranges_weights (antialias, align_corners=false, no explicit scale) followed
// by _compute_index_ranges_int16_weights.
AxisWeights axis_weights(int64_t in_size, int64_t out_size) {
  AxisWeights aw;
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double support = (scale >= 1.0) ? (4 * 0.5) * scale : 4 * 0.5;
  aw.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  aw.start.resize(out_size);
  aw.size.resize(out_size);
  std::vector<double> wd(static_cast<size_t>(out_size * aw.taps), 0.0);
  double wt_max = 0.0;
  const double invscale = (scale >= 1.0) ? 1.0 / scale : 1.0;
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    int64_t xsize = std::min(static_cast<int64_t>(center + support + 0.5), in_size) - xmin;
    xsize = std::clamp(xsize, int64_t{0}, aw.taps);
    double* w = &wd[static_cast<size_t>(i * aw.taps)];
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      const double v = cubic_aa_filter((static_cast<double>(j + xmin) - center + 0.5) * invscale);
      w[j] = v;
      total += v;
    }
    if (total != 0.0) {
      for (int64_t j = 0; j < xsize; ++j) {
        w[j] /= total;
        wt_max = std::max(wt_max, w[j]);
      }
    }
    aw.start[i] = xmin;
    aw.size[i] = xsize;
  }
  int p = 0;
  for (p = 0; p < 22; ++p) {
    const int next_value = static_cast<int>(0.5 + wt_max * (1 << (p + 1)));
    if (next_value >= (1 << 15)) break;
  }
  aw.precision = p;
  aw.w.resize(wd.size());
  for (size_t k = 0; k < wd.size(); ++k) {
    const double v = wd[k] * (1 << p);
    aw.w[k] = static_cast<int16_t>((v < 0) ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
  }
  return aw;
}

inline uint8_t finish(int acc, int precision) {
  return static_cast<uint8_t>(std::clamp(acc >> precision, 0, 255));
}

}  // namespace

std::vector<uint8_t> resize_bicubic_aa(const uint8_t* rgb, int height, int width, int out_h, int out_w) {
  LOCR_CHECK(height > 0 && width > 0 && out_h > 0 && out_w > 0);
  const size_t in_row = static_cast<size_t>(width) * 3;
  // Horizontal pass (the contiguous dimension first, as torch does), only if the width changes.
  std::vector<uint8_t> tmp;
  const uint8_t* src = rgb;
  int src_w = width;
  if (out_w != width) {
    const AxisWeights aw = axis_weights(width, out_w);
    tmp.resize(static_cast<size_t>(height) * out_w * 3);
    const int round = 1 << (aw.precision - 1);
    for (int y = 0; y < height; ++y) {
      const uint8_t* row = rgb + static_cast<size_t>(y) * in_row;
      uint8_t* out = &tmp[static_cast<size_t>(y) * out_w * 3];
      for (int x = 0; x < out_w; ++x) {
        const int16_t* w = &aw.w[static_cast<size_t>(x * aw.taps)];
        const uint8_t* in = row + aw.start[x] * 3;
        int acc0 = round, acc1 = round, acc2 = round;
        for (int64_t j = 0; j < aw.size[x]; ++j) {
          acc0 += in[3 * j] * w[j];
          acc1 += in[3 * j + 1] * w[j];
          acc2 += in[3 * j + 2] * w[j];
        }
        out[3 * x] = finish(acc0, aw.precision);
        out[3 * x + 1] = finish(acc1, aw.precision);
        out[3 * x + 2] = finish(acc2, aw.precision);
      }
    }
    src = tmp.data();
    src_w = out_w;
  }
  const size_t row_len = static_cast<size_t>(src_w) * 3;
  if (out_h == height) return std::vector<uint8_t>(src, src + static_cast<size_t>(height) * row_len);
  // Vertical pass.
  const AxisWeights aw = axis_weights(height, out_h);
  std::vector<uint8_t> dst(static_cast<size_t>(out_h) * row_len);
  std::vector<int> acc(row_len);
  const int round = 1 << (aw.precision - 1);
  for (int y = 0; y < out_h; ++y) {
    std::fill(acc.begin(), acc.end(), round);
    const int16_t* w = &aw.w[static_cast<size_t>(y * aw.taps)];
    for (int64_t j = 0; j < aw.size[y]; ++j) {
      const uint8_t* row = src + static_cast<size_t>(aw.start[y] + j) * row_len;
      const int wj = w[j];
      for (size_t k = 0; k < row_len; ++k) acc[k] += row[k] * wj;
    }
    uint8_t* out = &dst[static_cast<size_t>(y) * row_len];
    for (size_t k = 0; k < row_len; ++k) out[k] = finish(acc[k], aw.precision);
  }
  return dst;
}

std::vector<float> normalized_pixels(const ProcessedImage& img) {
  if (!img.pixels.empty()) return img.pixels;
  const size_t plane = static_cast<size_t>(img.height) * img.width;
  LOCR_CHECK(img.rgb.size() == plane * 3);
  std::vector<float> out(plane * 3);
  for (int c = 0; c < 3; ++c) {
    float* dst = &out[plane * c];
    for (size_t i = 0; i < plane; ++i) dst[i] = normalize(img.rgb[3 * i + c], img.norm_mean[c], img.norm_std[c]);
  }
  return out;
}

}  // namespace locr::model
