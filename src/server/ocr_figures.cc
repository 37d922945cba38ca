#include "server/ocr_figures.h"

#include <algorithm>
#include <cmath>

namespace locr::server {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void skip_blanks(const std::string& s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

// A non-negative integer of at most 6 digits at i (larger ones are not coordinates).
bool read_int(const std::string& s, size_t& i, int& v) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j]) && j - i < 7) ++j;
  if (j == i || j - i > 6 || (j < s.size() && is_digit(s[j]))) return false;
  v = std::stoi(s.substr(i, j - i));
  i = j;
  return true;
}

}  // namespace

std::vector<Figure> find_figures(const std::string& text) {
  std::vector<Figure> out;
  size_t at = 0;
  while ((at = text.find("![", at)) != std::string::npos) {
    const size_t close = text.find(']', at + 2);
    if (close == std::string::npos) break;
    if (text.find('\n', at) < close || close + 1 >= text.size() || text[close + 1] != '(') {
      at += 2;
      continue;
    }
    const size_t paren = text.find(')', close + 2);
    if (paren == std::string::npos || text.find('\n', close) < paren) {
      at += 2;
      continue;
    }
    size_t i = paren + 1;
    int v[4];
    bool ok = true;
    for (int k = 0; k < 4 && ok; ++k) {
      skip_blanks(text, i);
      if (k > 0) {
        ok = i < text.size() && text[i] == ',';
        ++i;
        skip_blanks(text, i);
      }
      ok = ok && read_int(text, i, v[k]);
    }
    if (!ok) {
      at += 2;
      continue;
    }
    Figure f;
    f.alt = text.substr(at + 2, close - at - 2);
    f.target = text.substr(close + 2, paren - close - 2);
    auto clamp = [](int x) { return std::clamp(x, 0, 1000); };
    f.x1 = std::min(clamp(v[0]), clamp(v[2]));
    f.x2 = std::max(clamp(v[0]), clamp(v[2]));
    f.y1 = std::min(clamp(v[1]), clamp(v[3]));
    f.y2 = std::max(clamp(v[1]), clamp(v[3]));
    f.begin = at;
    f.end = i;
    at = i;
    if (f.x2 > f.x1 && f.y2 > f.y1) out.push_back(std::move(f));
  }
  return out;
}

PixelBox figure_pixels(const Figure& f, int width, int height) {
  auto px = [](int v, int n) { return static_cast<int>(std::lround(static_cast<double>(v) * n / 1000.0)); };
  PixelBox b{px(f.x1, width), px(f.y1, height), px(f.x2, width), px(f.y2, height)};
  b.left = std::clamp(b.left, 0, std::max(0, width - 1));
  b.top = std::clamp(b.top, 0, std::max(0, height - 1));
  b.right = std::clamp(b.right, b.left + 1, std::max(1, width));
  b.bottom = std::clamp(b.bottom, b.top + 1, std::max(1, height));
  return b;
}

io::Image crop(const io::Image& page, const PixelBox& box) {
  io::Image out;
  out.width = box.right - box.left;
  out.height = box.bottom - box.top;
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y) {
    const uint8_t* src = page.rgb.data() + (static_cast<size_t>(box.top + y) * page.width + box.left) * 3;
    std::copy(src, src + static_cast<size_t>(out.width) * 3, out.rgb.data() + static_cast<size_t>(y) * out.width * 3);
  }
  return out;
}

std::string replace_figures(const std::string& text, const std::vector<Figure>& figures,
                            const std::vector<std::string>& ids) {
  std::string out;
  size_t from = 0;
  for (size_t k = 0; k < figures.size(); ++k) {
    out.append(text, from, figures[k].begin - from);
    if (k < ids.size() && !ids[k].empty()) out += "![" + ids[k] + "](" + ids[k] + ")";
    from = figures[k].end;
  }
  out.append(text, from, std::string::npos);
  return out;
}

}  // namespace locr::server
