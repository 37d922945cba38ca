// Image -> normalised pixels for the Pixtral encoder, mirroring transformers'
// PixtralImageProcessor (models/pixtral/image_processing_pixtral.py, torchvision backend in
// image_processing_backends.py) and torch's uint8 antialiased bicubic kernel
// (aten/src/ATen/native/cpu/UpSampleKernel.cpp: _compute_index_ranges_int16_weights,
// basic_loop_aa_horizontal/vertical<uint8_t>). Everything here is plain scalar code; it is run
// once per request image, outside the model's hot path. Not here: batching/padding of several
// images (the model takes one image per sequence) and the patch embedding itself.
#include "model/processor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

// One normalised value, as transformers computes it: (x - mean) / std, two float32 roundings.
inline float normalize(uint8_t x, float mean, float sd) {
  const float centred = static_cast<float>(x) - mean;
  return centred / sd;
}

inline uint8_t finish(int acc, int precision) {
  return static_cast<uint8_t>(std::clamp(acc >> precision, 0, 255));
}

}  // namespace

std::array<int, 2> target_size(int height, int width, const ProcessorConfig& cfg) {
  LOCR_CHECK(height > 0 && width > 0 && cfg.longest_edge > 0 && cfg.align > 0);
  const double max_edge = static_cast<double>(cfg.longest_edge);
  const double ratio = std::max(static_cast<double>(height) / max_edge, static_cast<double>(width) / max_edge);
  int64_t h = height, w = width;
  if (ratio > 1) {
    h = static_cast<int64_t>(std::floor(static_cast<double>(height) / ratio));
    w = static_cast<int64_t>(std::floor(static_cast<double>(width) / ratio));
  }
  if (h < 1 || w < 1)
    fail(ErrorKind::kInvalidArgument, "the image is ", width, "x", height, " pixels; scaled to a longest side of ",
         cfg.longest_edge, " its short side would be 0 pixels; crop or pad it to a less extreme aspect ratio");
  const int64_t a = cfg.align;
  return {static_cast<int>(((h - 1) / a + 1) * a), static_cast<int>(((w - 1) / a + 1) * a)};
}

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

ProcessedImage preprocess(const io::Image& image, const ProcessorConfig& cfg) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3)
    fail(ErrorKind::kInvalidArgument, "preprocess: the image buffer does not hold ", image.width, "x", image.height,
         " RGB pixels");
  if (cfg.align % cfg.patch_size != 0)
    fail(ErrorKind::kInvalidArgument, "processor align (", cfg.align, ") must be a multiple of the patch size (",
         cfg.patch_size, ")");
  const uint8_t* rgb = image.rgb.data();
  io::Image flat;
  if (cfg.flatten_alpha_on_white && image.has_alpha()) {
    flat = image;
    io::flatten_alpha_on_white(flat);
    rgb = flat.rgb.data();
  }
  const auto [th, tw] = target_size(image.height, image.width, cfg);
  std::vector<uint8_t> resized;
  if (th != image.height || tw != image.width) {
    resized = resize_bicubic_aa(rgb, image.height, image.width, th, tw);
    rgb = resized.data();
  }

  ProcessedImage out;
  out.height = th;
  out.width = tw;
  out.grid_h = th / cfg.patch_size;
  out.grid_w = tw / cfg.patch_size;
  // transformers fuses rescale into normalize: mean and std become float32 tensors multiplied by
  // 1 / rescale_factor (= 255), then (x - mean) / std with two float32 roundings (normalize()).
  const float inv_rescale = static_cast<float>(1.0 / cfg.rescale_factor);
  for (int c = 0; c < 3; ++c) {
    out.norm_mean[c] = cfg.image_mean[c] * inv_rescale;
    out.norm_std[c] = cfg.image_std[c] * inv_rescale;
  }
  if (!resized.empty()) out.rgb = std::move(resized);
  else out.rgb.assign(rgb, rgb + static_cast<size_t>(th) * tw * 3);
  return out;
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

io::Image shrink_for_model(io::Image image, const ProcessorConfig& cfg) {
  if (image.width <= 0 || image.height <= 0) return image;
  const auto [th, tw] = target_size(image.height, image.width, cfg);
  if (target_size(th, tw, cfg) != std::array<int, 2>{th, tw}) return image;
  if (cfg.flatten_alpha_on_white) io::flatten_alpha_on_white(image);
  if (image.has_alpha() || (th == image.height && tw == image.width)) return image;
  io::Image out;
  out.height = th;
  out.width = tw;
  out.rgb = resize_bicubic_aa(image.rgb.data(), image.height, image.width, th, tw);
  return out;
}

int image_token_count(int height, int width, const ProcessorConfig& cfg, int merge) {
  const auto [th, tw] = target_size(height, width, cfg);
  return (th / cfg.patch_size / merge) * (tw / cfg.patch_size / merge);
}

std::vector<float> extract_patches(const ProcessedImage& img, int patch_size) {
  const int p = patch_size;
  LOCR_CHECK(p > 0 && img.height % p == 0 && img.width % p == 0);
  const int gh = img.height / p, gw = img.width / p;
  const size_t plane = static_cast<size_t>(img.height) * img.width;
  const bool given = !img.pixels.empty();
  LOCR_CHECK(given ? img.pixels.size() == plane * 3 : img.rgb.size() == plane * 3);
  const size_t patch_len = static_cast<size_t>(3) * p * p;
  std::vector<float> out(static_cast<size_t>(gh) * gw * patch_len);  // [gh * gw, 3 * p * p]
  for (int gy = 0; gy < gh; ++gy)
    for (int gx = 0; gx < gw; ++gx) {
      float* dst = &out[(static_cast<size_t>(gy) * gw + gx) * patch_len];
      for (int c = 0; c < 3; ++c)
        for (int ky = 0; ky < p; ++ky) {
          const size_t row = static_cast<size_t>(gy * p + ky) * img.width + static_cast<size_t>(gx) * p;
          float* d = dst + (static_cast<size_t>(c) * p + ky) * p;
          if (given) {
            std::memcpy(d, &img.pixels[plane * c + row], sizeof(float) * p);
          } else {
            const uint8_t* src = &img.rgb[row * 3 + c];
            for (int kx = 0; kx < p; ++kx) d[kx] = normalize(src[3 * kx], img.norm_mean[c], img.norm_std[c]);
          }
        }
    }
  return out;
}

}  // namespace locr::model
