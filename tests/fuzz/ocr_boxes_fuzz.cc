// The box parsers of /v1/ocr over model output (server/ocr_grounding.h, server/ocr_figures.h): any
// text parses without a crash; every box is clamped and ordered in 0..1000, maps inside the page
// and crops to its own size; figure spans lie inside the text, in order, and replacing them keeps
// the text between them; grounding blocks' texts are pieces of the input.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "server/ocr_figures.h"
#include "server/ocr_grounding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr::server;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A page of a size taken from the input's length, so boxes meet odd pages too.
  locr::io::Image page;
  page.width = 1 + static_cast<int>(size % 37);
  page.height = 1 + static_cast<int>((size / 37) % 29);
  page.rgb.assign(static_cast<size_t>(page.width) * page.height * 3, 7);

  const auto blocks = parse_grounding(text);
  for (const GroundingBlock& b : blocks) {
    if (b.has_box) {
      LOCR_FUZZ_CHECK(0 <= b.x1 && b.x1 <= b.x2 && b.x2 <= 1000);
      LOCR_FUZZ_CHECK(0 <= b.y1 && b.y1 <= b.y2 && b.y2 <= 1000);
      LOCR_FUZZ_CHECK(!b.label.empty());
    }
    LOCR_FUZZ_CHECK(b.text.empty() || text.find(b.text) != std::string::npos);
  }
  const auto j = grounding_json(blocks, page.width, page.height, header_footer_labels());
  LOCR_FUZZ_CHECK(j.size() == blocks.size());
  for (const auto& b : j) {
    if (b["box"].is_null()) continue;
    const int l = b["box"]["left"], t = b["box"]["top"], r = b["box"]["right"], bo = b["box"]["bottom"];
    LOCR_FUZZ_CHECK(0 <= l && l < r && r <= page.width && 0 <= t && t < bo && bo <= page.height);
  }
  const std::string md = grounding_markdown(blocks, {}, /*figure_markers=*/true);
  (void)grounding_markdown(blocks, header_footer_labels());

  for (const std::string* t : {&text, &md}) {
    const auto figures = find_figures(*t);
    size_t prev_end = 0;
    std::vector<std::string> ids;
    for (const Figure& f : figures) {
      LOCR_FUZZ_CHECK(prev_end <= f.begin && f.begin < f.end && f.end <= t->size());
      LOCR_FUZZ_CHECK(0 <= f.x1 && f.x1 < f.x2 && f.x2 <= 1000 && 0 <= f.y1 && f.y1 < f.y2 && f.y2 <= 1000);
      prev_end = f.end;
      const PixelBox p = figure_pixels(f, page.width, page.height);
      LOCR_FUZZ_CHECK(0 <= p.left && p.left < p.right && p.right <= page.width);
      LOCR_FUZZ_CHECK(0 <= p.top && p.top < p.bottom && p.bottom <= page.height);
      const locr::io::Image c = crop(page, p);
      LOCR_FUZZ_CHECK(c.width == p.right - p.left && c.height == p.bottom - p.top);
      LOCR_FUZZ_CHECK(c.rgb.size() == static_cast<size_t>(c.width) * c.height * 3);
      ids.push_back(ids.size() % 2 ? std::string() : "img-" + std::to_string(ids.size()));
    }
    const std::string replaced = replace_figures(*t, figures, ids);
    size_t removed = 0, added = 0;
    for (size_t k = 0; k < figures.size(); ++k) {
      removed += figures[k].end - figures[k].begin;
      if (!ids[k].empty()) added += 5 + 2 * ids[k].size();  // ![id](id)
    }
    LOCR_FUZZ_CHECK(replaced.size() == t->size() - removed + added);
  }
  return 0;
}
