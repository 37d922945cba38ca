#include "model/qwen35/processor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/file.h"

namespace locr::model::qwen35 {

using nlohmann::json;

ProcessorConfig load_processor_config(const std::string& dir) {
  ProcessorConfig c;
  const std::string path = dir + "/preprocessor_config.json";
  if (!io::file_exists(path)) return c;
  json j;
  try {
    j = json::parse(io::read_file(path));
  } catch (const json::exception& e) {
    fail(ErrorKind::kInvalidArgument, "invalid JSON in ", path, ": ", e.what());
  }
  auto num = [&](const json& o, const char* key, auto* out) {
    if (o.contains(key) && o[key].is_number()) *out = o[key].get<std::remove_pointer_t<decltype(out)>>();
  };
  if (j.contains("size") && j["size"].is_object()) {
    num(j["size"], "shortest_edge", &c.min_pixels);
    num(j["size"], "longest_edge", &c.max_pixels);
  }
  num(j, "min_pixels", &c.min_pixels);  // older files: top-level keys win, as transformers' __init__
  num(j, "max_pixels", &c.max_pixels);
  num(j, "patch_size", &c.patch_size);
  num(j, "merge_size", &c.merge_size);
  num(j, "temporal_patch_size", &c.temporal_patch_size);
  num(j, "rescale_factor", &c.rescale_factor);
  for (const char* key : {"image_mean", "image_std"}) {
    if (!j.contains(key)) continue;
    auto& dst = std::string(key) == "image_mean" ? c.image_mean : c.image_std;
    if (j[key].is_array() && j[key].size() == 3) {
      for (int i = 0; i < 3; ++i) dst[i] = j[key][i].get<float>();
    } else if (j[key].is_number()) {
      dst.fill(j[key].get<float>());
    }
  }
  if (c.patch_size <= 0 || c.merge_size <= 0 || c.temporal_patch_size <= 0 || c.min_pixels <= 0 ||
      c.max_pixels < c.min_pixels)
    fail(ErrorKind::kInvalidArgument, path, ": invalid patch/merge sizes or pixel bounds");
  return c;
}

std::array<int, 2> smart_resize(int height, int width, const ProcessorConfig& cfg) {
  if (height <= 0 || width <= 0) fail(ErrorKind::kInvalidArgument, "image of ", width, "x", height, " pixels");
  const double ratio = static_cast<double>(std::max(height, width)) / std::min(height, width);
  if (ratio > 200)
    fail(ErrorKind::kInvalidArgument, "image of ", width, "x", height,
         " pixels: absolute aspect ratio must be smaller than 200, got ", ratio);
  const double f = cfg.factor();
  // Python's round(): half to even (std::nearbyint in the default rounding mode).
  int64_t h = static_cast<int64_t>(std::nearbyint(height / f)) * cfg.factor();
  int64_t w = static_cast<int64_t>(std::nearbyint(width / f)) * cfg.factor();
  const double hw = static_cast<double>(height) * width;
  if (h * w > cfg.max_pixels) {
    const double beta = std::sqrt(hw / static_cast<double>(cfg.max_pixels));
    h = std::max<int64_t>(cfg.factor(), static_cast<int64_t>(std::floor(height / beta / f)) * cfg.factor());
    w = std::max<int64_t>(cfg.factor(), static_cast<int64_t>(std::floor(width / beta / f)) * cfg.factor());
  } else if (h * w < cfg.min_pixels) {
    const double beta = std::sqrt(static_cast<double>(cfg.min_pixels) / hw);
    h = static_cast<int64_t>(std::ceil(height * beta / f)) * cfg.factor();
    w = static_cast<int64_t>(std::ceil(width * beta / f)) * cfg.factor();
  }
  return {static_cast<int>(h), static_cast<int>(w)};
}

ProcessedImage preprocess(const io::Image& image, const ProcessorConfig& cfg) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3)
    fail(ErrorKind::kInvalidArgument, "preprocess: the image buffer does not hold ", image.width, "x", image.height,
         " RGB pixels");
  const uint8_t* rgb = image.rgb.data();
  io::Image flat;
  if (image.has_alpha()) {  // convert_to_rgb: transparency composited onto white
    flat = image;
    io::flatten_alpha_on_white(flat);
    rgb = flat.rgb.data();
  }
  const auto [th, tw] = smart_resize(image.height, image.width, cfg);
  ProcessedImage out;
  out.height = th;
  out.width = tw;
  out.grid_h = th / cfg.patch_size;
  out.grid_w = tw / cfg.patch_size;
  if (th != image.height || tw != image.width) {
    out.rgb = model::resize_bicubic_aa(rgb, image.height, image.width, th, tw);
  } else {
    out.rgb.assign(rgb, rgb + static_cast<size_t>(th) * tw * 3);
  }
  // Rescale fused into normalize, as transformers does: mean and std times 1 / rescale_factor.
  const float inv_rescale = static_cast<float>(1.0 / cfg.rescale_factor);
  for (int c = 0; c < 3; ++c) {
    out.norm_mean[c] = cfg.image_mean[c] * inv_rescale;
    out.norm_std[c] = cfg.image_std[c] * inv_rescale;
  }
  return out;
}

int image_tokens(int height, int width, const ProcessorConfig& cfg) {
  const auto [h, w] = smart_resize(height, width, cfg);
  return (h / cfg.factor()) * (w / cfg.factor());
}

std::vector<float> patches(const ProcessedImage& img, const ProcessorConfig& cfg) {
  const int p = cfg.patch_size, m = cfg.merge_size, T = cfg.temporal_patch_size;
  LOCR_CHECK(img.grid_h % m == 0 && img.grid_w % m == 0 && img.height == img.grid_h * p && img.width == img.grid_w * p);
  const std::vector<float> px = model::normalized_pixels(img);  // [3, H', W']
  const size_t plane = static_cast<size_t>(img.height) * img.width;
  const size_t pp = static_cast<size_t>(p) * p, row_len = 3 * T * pp;
  std::vector<float> out(static_cast<size_t>(img.grid_h) * img.grid_w * row_len);
  size_t r = 0;
  for (int by = 0; by < img.grid_h / m; ++by)
    for (int bx = 0; bx < img.grid_w / m; ++bx)
      for (int iy = 0; iy < m; ++iy)
        for (int ix = 0; ix < m; ++ix, ++r) {
          const int gy = by * m + iy, gx = bx * m + ix;
          float* dst = &out[r * row_len];
          for (int c = 0; c < 3; ++c)
            for (int t = 0; t < T; ++t)
              for (int y = 0; y < p; ++y) {
                const float* src = &px[plane * c + static_cast<size_t>(gy * p + y) * img.width + gx * p];
                std::memcpy(dst + ((static_cast<size_t>(c) * T + t) * p + y) * p, src, sizeof(float) * p);
              }
        }
  return out;
}

}  // namespace locr::model::qwen35
