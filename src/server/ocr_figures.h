// Figures in a page's text, as the LightOnOCR-2-1B-bbox variants write them: each figure as
// `![alt](target)x1,y1,x2,y2` with the box normalised to 0..1000 on both axes (spaces around the
// numbers tolerated). Parsed by hand (no regex: page texts can be long), boxes clamped to the page
// and ordered; a marker whose numbers do not parse, or whose box is empty, is not a figure and is
// left in the text as it is. Crops come from the page image the model read.
#pragma once

#include <string>
#include <vector>

#include "io/image.h"

namespace locr::server {

struct Figure {
  std::string alt, target;         // ![alt](target)
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // 0..1000, x1 < x2, y1 < y2
  size_t begin = 0, end = 0;       // the marker's bytes in the text, coordinates included
};

std::vector<Figure> find_figures(const std::string& text);

// The box in pixels of a width x height page: [left, right) x [top, bottom), at least 1 px.
struct PixelBox {
  int left = 0, top = 0, right = 0, bottom = 0;
};
PixelBox figure_pixels(const Figure& f, int width, int height);

// The box's pixels out of `page` (RGB).
io::Image crop(const io::Image& page, const PixelBox& box);

// `text` with figure i's marker replaced by `![ids[i]](ids[i])` (ids[i] empty: the marker is
// removed). figures as find_figures(text) returned them.
std::string replace_figures(const std::string& text, const std::vector<Figure>& figures,
                            const std::vector<std::string>& ids);

}  // namespace locr::server
