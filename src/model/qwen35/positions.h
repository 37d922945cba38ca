// Positions of the Qwen3.5 decoder and encoder, as transformers computes them:
//   - multimodal RoPE ids (get_rope_index): three rows (temporal, height, width); a text token has
//     the same position p in all three; the tokens of an image whose merged grid is gh x gw,
//     starting at position s, get (s, s + row, s + col); text after it continues at s + max(gh, gw);
//   - the text RoPE angles: rotary_dim / 2 frequencies of theta, frequency j taking its position from
//     the height row when j % 3 == 1 and j < 3 * mrope_section[1], from the width row when
//     j % 3 == 2 and j < 3 * mrope_section[2], else from the temporal row (interleaved M-RoPE);
//   - the encoder's 2-D RoPE: head_dim / 4 frequencies for the patch row, as many for the column;
//   - the encoder's learned position table resampled bilinearly (align_corners) to each grid.
// Patches and image tokens are in merge-block order throughout (model/qwen35/processor.h).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/qwen35/config.h"
#include "model/rope.h"

namespace locr::model::qwen35 {

// An image's patch grid (before the 2x2 merge).
struct Grid {
  int h = 0, w = 0;
  int64_t patches() const { return static_cast<int64_t>(h) * w; }
};

// [3, n] positions (row-major: all temporal, then all height, then all width) of a prompt `ids`
// whose runs of image_token_id each belong to the next grid of `grids` (one run per image, of
// (h / merge) * (w / merge) tokens; anything else throws kInvalidArgument). *next, when set,
// receives the position of the token after the prompt (max + 1).
std::vector<int64_t> rope_positions(const std::vector<int32_t>& ids, int image_token_id,
                                    const std::vector<Grid>& grids, int merge, int64_t* next = nullptr);

// RoPE angles [n, rotary_dim / 2] of n rows from their three position rows t, h, w (each n long).
RopeTable text_mrope(const TextConfig& cfg, const int64_t* t, const int64_t* h, const int64_t* w, int64_t n);

// The encoder's RoPE angles [h * w, head_dim / 2] of one grid, patches in merge-block order.
RopeTable vision_rope(const VisionConfig& cfg, const Grid& g);

// Bilinear taps into the side x side position table for each patch of `g` (merge-block order):
// four indices and weights per patch.
struct PosTaps {
  std::vector<std::array<int32_t, 4>> index;
  std::vector<std::array<float, 4>> weight;
};
PosTaps position_taps(const Grid& g, int side, int merge);

}  // namespace locr::model::qwen35
