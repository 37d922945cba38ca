#include "server/ocr_grounding.h"

#include <algorithm>

#include "server/ocr_figures.h"

namespace locr::server {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_label_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_label_char(char c) { return is_label_start(c) || is_digit(c) || c == '-'; }

void skip_blanks(const std::string& s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

// A non-negative integer of at most 6 digits (anything longer is not a coordinate).
bool read_int(const std::string& s, size_t& i, int& v) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) {
    if (j - i == 6) return false;
    ++j;
  }
  if (j == i) return false;
  v = std::stoi(s.substr(i, j - i));
  i = j;
  return true;
}

// A marker at `at` ("![label+](x1,y1,x2,y2)" and the blanks after it): fills `b` (label, box) and
// returns the index past it, or 0 if there is no marker there.
size_t read_marker(const std::string& s, size_t at, GroundingBlock& b) {
  size_t i = at + 2;
  if (i >= s.size() || !is_label_start(s[i])) return 0;
  const size_t label_begin = i;
  while (i < s.size() && is_label_char(s[i]) && i - label_begin < 64) ++i;
  b.label = s.substr(label_begin, i - label_begin);
  b.continues = i < s.size() && s[i] == '+';
  if (b.continues) ++i;
  if (s.compare(i, 2, "](") != 0) return 0;
  i += 2;
  int v[4];
  for (int k = 0; k < 4; ++k) {
    skip_blanks(s, i);
    if (k > 0) {
      if (i >= s.size() || s[i] != ',') return 0;
      ++i;
      skip_blanks(s, i);
    }
    if (!read_int(s, i, v[k])) return 0;
  }
  skip_blanks(s, i);
  if (i >= s.size() || s[i] != ')') return 0;
  ++i;
  skip_blanks(s, i);
  auto clamp = [](int x) { return std::clamp(x, 0, 1000); };
  b.has_box = true;
  b.x1 = std::min(clamp(v[0]), clamp(v[2]));
  b.x2 = std::max(clamp(v[0]), clamp(v[2]));
  b.y1 = std::min(clamp(v[1]), clamp(v[3]));
  b.y2 = std::max(clamp(v[1]), clamp(v[3]));
  return i;
}

std::string trimmed(const std::string& s, size_t from, size_t to) {
  while (from < to && (s[from] == ' ' || s[from] == '\t' || s[from] == '\n' || s[from] == '\r')) ++from;
  while (to > from && (s[to - 1] == ' ' || s[to - 1] == '\t' || s[to - 1] == '\n' || s[to - 1] == '\r')) --to;
  return s.substr(from, to - from);
}

}  // namespace

std::vector<GroundingBlock> parse_grounding(const std::string& text) {
  std::vector<GroundingBlock> out;
  size_t text_from = 0;  // where the current block's text starts
  size_t at = 0;
  auto close_block = [&](size_t end) {
    std::string t = trimmed(text, text_from, end);
    if (out.empty()) {
      if (t.empty()) return;
      GroundingBlock lead;
      lead.label = "text";
      out.push_back(std::move(lead));
    }
    out.back().text = std::move(t);
  };
  while ((at = text.find("![", at)) != std::string::npos) {
    GroundingBlock b;
    const size_t past = read_marker(text, at, b);
    if (past == 0) {
      at += 2;
      continue;
    }
    close_block(at);
    out.push_back(std::move(b));
    text_from = at = past;
  }
  close_block(text.size());
  return out;
}

std::vector<GroundingBlock> grounding_blocks(const std::string& raw, const runtime::PostprocessOptions& post) {
  std::vector<GroundingBlock> blocks = parse_grounding(raw);
  for (GroundingBlock& b : blocks) b.text = runtime::postprocess(b.text, post);
  return blocks;
}

const std::set<std::string>& header_footer_labels() {
  static const std::set<std::string> labels = {"header",      "footer",      "page_number",  "footnote",    "page_header",
                                               "page_footer", "page_footnote", "header_image", "footer_image"};
  return labels;
}

std::string grounding_markdown(const std::vector<GroundingBlock>& blocks, const std::set<std::string>& drop,
                               bool figure_markers) {
  std::vector<std::string> parts;
  bool prev_kept = false;
  for (const GroundingBlock& b : blocks) {
    if (figure_markers && b.label == "image" && b.has_box && !drop.count(b.label)) {
      parts.push_back("![image](image)" + std::to_string(b.x1) + "," + std::to_string(b.y1) + "," + std::to_string(b.x2) +
                      "," + std::to_string(b.y2));
      prev_kept = true;
      continue;
    }
    if (drop.count(b.label) || b.text.empty()) {
      prev_kept = false;
      continue;
    }
    if (b.continues && prev_kept) parts.back() += " " + b.text;
    else parts.push_back(b.text);
    prev_kept = true;
  }
  std::string md;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) md += "\n\n";
    md += parts[i];
  }
  return md;
}

nlohmann::json grounding_json(const std::vector<GroundingBlock>& blocks, int width, int height,
                              const std::set<std::string>& drop) {
  nlohmann::json out = nlohmann::json::array();
  for (const GroundingBlock& b : blocks) {
    nlohmann::json j = {{"label", b.label}, {"continues", b.continues}};
    if (b.has_box) {
      j["bbox"] = {b.x1, b.y1, b.x2, b.y2};
      Figure f;
      f.x1 = b.x1, f.y1 = b.y1, f.x2 = b.x2, f.y2 = b.y2;
      const PixelBox p = figure_pixels(f, width, height);
      j["box"] = {{"left", p.left}, {"top", p.top}, {"right", p.right}, {"bottom", p.bottom}};
    } else {
      j["bbox"] = nullptr;
      j["box"] = nullptr;
    }
    j["text"] = b.text;
    j["dropped"] = drop.count(b.label) > 0;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace locr::server
