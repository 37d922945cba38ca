// What `locr ocr` keeps of a page beyond its text: the figures the -bbox model variants mark
// (`![image](image_1.png)x1,y1,x2,y2`, server/ocr_figures.h), cropped from the rendered page and
// written as PNG files next to the page file (OUTDIR/<name>/page-0001-img-1.png), their markers
// rewritten to those files; and the page confidence, from the output tokens' log-probabilities.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/image.h"
#include "server/ocr_figures.h"

namespace locr::app {

struct PageFigure {
  std::string file;        // OUTDIR-relative, e.g. doc/page-0001-img-1.png
  server::PixelBox box;    // in pixels of the rendered page
};

// Statistics of the output tokens' log-probabilities (of the raw model distribution), as
// /v1/ocr's page confidence: every output token counts, the final EOS included.
struct PageConfidence {
  bool known = false;      // false: the backend gave no log-probabilities
  int64_t tokens = 0;
  double sum_logprob = 0;
  double min_logprob = 0;
  int64_t below_threshold = 0;
  double threshold = 0.5;  // a probability

  void add(double logprob);
  // {"score", "mean_logprob", "min_logprob", "tokens", "tokens_below_threshold", "threshold"}, or
  // null when unknown or no tokens.
  nlohmann::json to_json() const;
  // From to_json()'s output; null gives an unknown confidence. Throws json::exception on a bad shape.
  static PageConfidence from_json(const nlohmann::json& j);
};

nlohmann::json figures_json(const std::vector<PageFigure>& figures);
std::vector<PageFigure> figures_from_json(const nlohmann::json& j);  // throws json::exception

// Finds the figures in `text` (the model's output for `page`), writes each crop as PNG to
// OUTDIR/<page_file minus its extension>-img-N.png (N from 1; older crops of that page are removed
// first) and returns `text` with the figure markers rewritten to ![file](file) (the file's base
// name, relative to the page file). `figures` gets what was written.
std::string write_page_figures(const std::string& text, const io::Image& page, const std::string& outdir,
                               const std::string& page_file, std::vector<PageFigure>& figures);

// Removes the crops a page may have from an earlier run (OUTDIR/<page_file stem>-img-*.png).
void remove_page_figures(const std::string& outdir, const std::string& page_file);

// `text` (joined into OUTDIR/<name>.md) with the page's figure references made relative to OUTDIR.
std::string figure_links_from_outdir(std::string text, const std::vector<PageFigure>& figures);

}  // namespace locr::app
