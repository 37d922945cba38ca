// Image -> normalised pixels for the Pixtral encoder, mirroring transformers'
// PixtralImageProcessor (models/pixtral/image_processing_pixtral.py, torchvision backend in
// image_processing_backends.py); the resize and the normalisation are the shared ones
// (model/image_input.cc). Everything here is plain scalar code; it is run once per request image,
// outside the model's hot path. Not here: batching/padding of several images (the model takes one
// image per sequence) and the patch embedding itself.
#include "model/lightonocr/processor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace locr::model {

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
