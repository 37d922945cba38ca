#include "toolkit/synth_image.h"

#include <algorithm>

#include "core/error.h"
#include "io/image_encode.h"

namespace locr::toolkit {

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int uniform(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

void rect(io::Image& im, int x0, int y0, int x1, int y1, uint8_t r, uint8_t g, uint8_t b) {
  x0 = std::max(0, x0), y0 = std::max(0, y0), x1 = std::min(im.width, x1), y1 = std::min(im.height, y1);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      uint8_t* p = &im.rgb[(static_cast<size_t>(y) * im.width + x) * 3];
      p[0] = r, p[1] = g, p[2] = b;
    }
}

}  // namespace

io::Image synth_page(int width, int height, uint64_t seed) {
  if (width < 8 || height < 8) fail(ErrorKind::kInvalidArgument, "synthetic page too small: ", width, "x", height);
  io::Image im;
  im.width = width, im.height = height;
  im.rgb.assign(static_cast<size_t>(width) * height * 3, 255);
  Rng rng{seed * 7919 + 17};
  const int margin = std::max(2, width / 12);
  const int line_h = std::max(3, height / 40);
  int y = margin;
  // Heading.
  rect(im, margin, y, margin + (width - 2 * margin) * rng.uniform(40, 80) / 100, y + line_h * 3 / 2, 20, 20, 40);
  y += line_h * 3;
  const int table_at = rng.uniform(3, 8), figure_at = rng.uniform(10, 14);
  for (int line = 0; y + line_h < height - margin; ++line) {
    if (line == table_at) {  // a 4x3 ruled table
      const int rows = 4, th = line_h * 2 * rows, tw = width - 2 * margin;
      for (int r = 0; r <= rows; ++r) rect(im, margin, y + r * th / rows, margin + tw, y + r * th / rows + 1, 0, 0, 0);
      for (int c = 0; c <= 3; ++c) rect(im, margin + c * tw / 3, y, margin + c * tw / 3 + 1, y + th, 0, 0, 0);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < 3; ++c)
          rect(im, margin + c * tw / 3 + 3, y + r * th / rows + line_h / 2, margin + c * tw / 3 + 3 + rng.uniform(4, tw / 4),
               y + r * th / rows + line_h, 40, 40, 40);
      y += th + line_h;
      continue;
    }
    if (line == figure_at) {
      const int fh = line_h * 5;
      rect(im, margin, y, width - margin, y + fh, static_cast<uint8_t>(rng.uniform(60, 200)),
           static_cast<uint8_t>(rng.uniform(60, 200)), static_cast<uint8_t>(rng.uniform(60, 200)));
      y += fh + line_h;
      continue;
    }
    int x = margin + (line % 5 == 0 ? line_h * 2 : 0);
    const int end = width - margin - (rng.uniform(0, 4) == 0 ? rng.uniform(0, width / 3) : 0);
    while (x < end) {
      const int w = rng.uniform(line_h, line_h * 5);
      rect(im, x, y, std::min(x + w, end), y + line_h * 2 / 3, 30, 30, 30);
      x += w + std::max(2, line_h / 2);
    }
    y += line_h * 3 / 2;
  }
  return im;
}

std::string encode_png(const io::Image& im) { return io::encode_png(im); }

std::string base64_encode(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    out += k[v >> 18], out += k[(v >> 12) & 63], out += k[(v >> 6) & 63], out += k[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += k[v >> 18], out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string png_data_url(const std::string& png) { return "data:image/png;base64," + base64_encode(png); }

}  // namespace locr::toolkit
