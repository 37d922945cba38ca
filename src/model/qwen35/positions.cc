#include "model/qwen35/positions.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace locr::model::qwen35 {

std::vector<int64_t> rope_positions(const std::vector<int32_t>& ids, int image_token_id,
                                    const std::vector<Grid>& grids, int merge, int64_t* next) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> pos(3 * n);
  int64_t cur = 0;
  size_t image = 0;
  for (int64_t i = 0; i < n;) {
    if (ids[i] != image_token_id) {
      pos[i] = pos[n + i] = pos[2 * n + i] = cur++;
      ++i;
      continue;
    }
    int64_t run = 0;
    while (i + run < n && ids[i + run] == image_token_id) ++run;
    if (image >= grids.size())
      fail(ErrorKind::kInvalidArgument, "prompt has more image token runs than images (", grids.size(), ")");
    const Grid& g = grids[image++];
    const int gh = g.h / merge, gw = g.w / merge;
    if (run != static_cast<int64_t>(gh) * gw)
      fail(ErrorKind::kInvalidArgument, "image ", image, " takes ", static_cast<int64_t>(gh) * gw,
           " image tokens but the prompt has a run of ", run);
    for (int r = 0; r < gh; ++r)
      for (int c = 0; c < gw; ++c) {
        const int64_t k = i + static_cast<int64_t>(r) * gw + c;
        pos[k] = cur;
        pos[n + k] = cur + r;
        pos[2 * n + k] = cur + c;
      }
    cur += std::max(gh, gw);
    i += run;
  }
  if (image != grids.size())
    fail(ErrorKind::kInvalidArgument, "prompt has ", image, " image token runs for ", grids.size(), " images");
  if (next) {
    int64_t mx = -1;
    for (int64_t v : pos) mx = std::max(mx, v);
    *next = mx + 1;
  }
  return pos;
}

RopeTable text_mrope(const TextConfig& cfg, const int64_t* t, const int64_t* h, const int64_t* w, int64_t n) {
  const int rot = cfg.rotary_dim(), half = rot / 2;
  const std::vector<float> inv = rope_inv_freq(cfg.rope_theta, rot);
  // Which position row each frequency reads (transformers' recomposition_frequencies).
  std::vector<int> axis(half, 0);
  for (int j = 0; j < half; ++j) {
    if (j % 3 == 1 && j < 3 * cfg.mrope_section[1]) axis[j] = 1;
    else if (j % 3 == 2 && j < 3 * cfg.mrope_section[2]) axis[j] = 2;
  }
  RopeTable out;
  out.cos.resize(n * half);
  out.sin.resize(n * half);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p3[3] = {t[i], h[i], w[i]};
    for (int j = 0; j < half; ++j) {
      const float a = static_cast<float>(p3[axis[j]]) * inv[j];
      out.cos[i * half + j] = std::cos(a);
      out.sin[i * half + j] = std::sin(a);
    }
  }
  return out;
}

RopeTable vision_rope(const VisionConfig& cfg, const Grid& g) {
  const int hd = cfg.head_dim(), quarter = hd / 4, half = hd / 2, m = cfg.spatial_merge_size;
  const std::vector<float> inv = rope_inv_freq(cfg.rope_theta, half);  // head_dim / 4 frequencies
  RopeTable out;
  out.cos.resize(g.patches() * half);
  out.sin.resize(g.patches() * half);
  int64_t r = 0;
  for (int by = 0; by < g.h / m; ++by)
    for (int bx = 0; bx < g.w / m; ++bx)
      for (int iy = 0; iy < m; ++iy)
        for (int ix = 0; ix < m; ++ix, ++r) {
          const float row = static_cast<float>(by * m + iy), col = static_cast<float>(bx * m + ix);
          for (int j = 0; j < quarter; ++j) {
            const float ah = row * inv[j], aw = col * inv[j];
            out.cos[r * half + j] = std::cos(ah);
            out.sin[r * half + j] = std::sin(ah);
            out.cos[r * half + quarter + j] = std::cos(aw);
            out.sin[r * half + quarter + j] = std::sin(aw);
          }
        }
  return out;
}

namespace {

// One axis of F.interpolate(mode="bilinear", align_corners=True) as transformers' taps: source
// coordinate index * (side - 1) / max(size - 1, 1) in float32, taps floor and floor + 1 clamped to
// the table, weights 1 - distance (clamped at 0).
void axis_taps(int index, int size, int side, int32_t tap[2], float weight[2]) {
  const float src = static_cast<float>(index) * static_cast<float>(side - 1) / static_cast<float>(std::max(size - 1, 1));
  const float fl = std::floor(src);
  for (int o = 0; o < 2; ++o) {
    const int raw = static_cast<int>(fl) + o;
    tap[o] = std::clamp(raw, 0, side - 1);
    weight[o] = std::max(0.0f, 1.0f - std::fabs(src - fl - static_cast<float>(o)));
  }
}

}  // namespace

PosTaps position_taps(const Grid& g, int side, int m) {
  PosTaps t;
  t.index.resize(g.patches());
  t.weight.resize(g.patches());
  int64_t r = 0;
  for (int by = 0; by < g.h / m; ++by)
    for (int bx = 0; bx < g.w / m; ++bx)
      for (int iy = 0; iy < m; ++iy)
        for (int ix = 0; ix < m; ++ix, ++r) {
          int32_t ht[2], wt[2];
          float hw[2], ww[2];
          axis_taps(by * m + iy, g.h, side, ht, hw);
          axis_taps(bx * m + ix, g.w, side, wt, ww);
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
              t.index[r][a * 2 + b] = ht[a] * side + wt[b];
              t.weight[r][a * 2 + b] = hw[a] * ww[b];
            }
        }
  return t;
}

}  // namespace locr::model::qwen35
