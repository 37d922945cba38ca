#include "apps/ocr_page_figures.h"

#include <cmath>
#include <filesystem>

#include "io/file.h"
#include "io/image_encode.h"

namespace locr::app {

namespace fs = std::filesystem;
using json = nlohmann::json;

void PageConfidence::add(double logprob) {
  known = true;
  min_logprob = tokens == 0 ? logprob : std::min(min_logprob, logprob);
  ++tokens;
  sum_logprob += logprob;
  if (logprob < std::log(threshold)) ++below_threshold;
}

json PageConfidence::to_json() const {
  if (!known || tokens == 0) return nullptr;
  const double mean = sum_logprob / static_cast<double>(tokens);
  return {{"score", std::exp(mean)},
          {"mean_logprob", mean},
          {"min_logprob", min_logprob},
          {"tokens", tokens},
          {"tokens_below_threshold", below_threshold},
          {"threshold", threshold}};
}

PageConfidence PageConfidence::from_json(const json& j) {
  PageConfidence c;
  if (j.is_null()) return c;
  c.known = true;
  c.tokens = j.at("tokens").get<int64_t>();
  c.sum_logprob = j.at("mean_logprob").get<double>() * static_cast<double>(c.tokens);
  c.min_logprob = j.at("min_logprob").get<double>();
  c.below_threshold = j.at("tokens_below_threshold").get<int64_t>();
  c.threshold = j.at("threshold").get<double>();
  return c;
}

json figures_json(const std::vector<PageFigure>& figures) {
  json a = json::array();
  for (const PageFigure& f : figures)
    a.push_back({{"file", f.file},
                 {"box", {{"left", f.box.left}, {"top", f.box.top}, {"right", f.box.right}, {"bottom", f.box.bottom}}}});
  return a;
}

std::vector<PageFigure> figures_from_json(const json& j) {
  std::vector<PageFigure> out;
  for (const json& f : j) {
    PageFigure p;
    p.file = f.at("file").get<std::string>();
    const json& b = f.at("box");
    p.box = {b.at("left").get<int>(), b.at("top").get<int>(), b.at("right").get<int>(), b.at("bottom").get<int>()};
    out.push_back(std::move(p));
  }
  return out;
}

void remove_page_figures(const std::string& outdir, const std::string& page_file) {
  const fs::path page = fs::path(outdir) / page_file;
  const std::string prefix = page.stem().string() + "-img-";
  std::error_code ec;
  if (!fs::is_directory(page.parent_path(), ec)) return;
  for (const auto& e : fs::directory_iterator(page.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".png") fs::remove(e.path(), ec);
  }
}

std::string write_page_figures(const std::string& text, const io::Image& page, const std::string& outdir,
                               const std::string& page_file, std::vector<PageFigure>& figures) {
  figures.clear();
  remove_page_figures(outdir, page_file);
  const std::vector<server::Figure> found = server::find_figures(text);
  if (found.empty()) return text;
  io::Image rgb = page;
  if (rgb.has_alpha()) io::flatten_alpha_on_white(rgb);  // as the page was sent to the model
  const fs::path rel = fs::path(page_file);
  std::vector<std::string> names;
  for (size_t k = 0; k < found.size(); ++k) {
    PageFigure f;
    f.box = server::figure_pixels(found[k], rgb.width, rgb.height);
    const std::string name = rel.stem().string() + "-img-" + std::to_string(k + 1) + ".png";
    f.file = (rel.parent_path() / name).string();
    io::write_file_atomic((fs::path(outdir) / f.file).string(), io::encode_png(server::crop(rgb, f.box)));
    names.push_back(name);
    figures.push_back(std::move(f));
  }
  return server::replace_figures(text, found, names);
}

std::string figure_links_from_outdir(std::string text, const std::vector<PageFigure>& figures) {
  for (const PageFigure& f : figures) {
    const std::string name = fs::path(f.file).filename().string();
    const std::string from = "](" + name + ")", to = "](" + f.file + ")";
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace locr::app
