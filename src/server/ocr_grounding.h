// LightOnOCR-3's grounding output: the page as layout blocks, each opened by a marker
// `![label](x1,y1,x2,y2)` (box normalised to 0..1000 on both axes, spaces tolerated) and owning the
// text up to the next marker (a table or list spans lines; the text may start on the next line).
// A trailing `+` on the label (`text+`) continues the previous block, e.g. across columns. Labels:
// title section text list caption footnote aside_text header footer page_number table chart
// formula code image; any label of letters, digits, `_` and `-` is accepted (a later checkpoint may
// add some). Parsed by hand (no regex: page texts can be long). A marker whose box does not parse is
// not a marker: it stays in the text of the block it is in. Text before the first marker (a
// sampling slip) is kept as a block labelled "text" without a box, so nothing the model wrote is lost.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/postprocess.h"

namespace locr::server {

struct GroundingBlock {
  std::string label;
  bool continues = false;              // the label had a trailing '+'
  bool has_box = false;                // false only for text before the first marker
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // 0..1000, clamped, x1 <= x2, y1 <= y2
  std::string text;                    // trimmed
};

std::vector<GroundingBlock> parse_grounding(const std::string& text);
// The model's raw grounding output as blocks whose texts are post-processed: the markers are the
// model's syntax and are read before post-processing touches the text (plain text would turn a
// marker into its label). What /v1/ocr and `locr ocr` both make a grounding page from.
std::vector<GroundingBlock> grounding_blocks(const std::string& raw, const runtime::PostprocessOptions& post);

// The labels dropped by drop_headers_footers: page furniture (LightOn's client drops the same set,
// footnotes included, for its olmOCR-bench numbers).
const std::set<std::string>& header_footer_labels();

// The blocks' texts as Markdown, paragraphs apart; blocks whose label is in `drop`, and empty ones,
// are left out; a continuation joins the block before it (with a space) when that one was kept.
// With `figure_markers`, an `image` block is written as the -bbox variants write a figure,
// `![image](image)x1,y1,x2,y2` (its description dropped), for ocr_figures.h to crop and number.
std::string grounding_markdown(const std::vector<GroundingBlock>& blocks, const std::set<std::string>& drop,
                               bool figure_markers = false);

// The blocks as JSON: [{"label", "continues", "bbox": [x1, y1, x2, y2] (0..1000) or null,
// "box": {"left", "top", "right", "bottom"} in pixels of a width x height page or null, "text",
// "dropped": whether `drop` left it out of the Markdown}].
nlohmann::json grounding_json(const std::vector<GroundingBlock>& blocks, int width, int height,
                              const std::set<std::string>& drop);

}  // namespace locr::server
