// Test helper: writes minimal valid PDF 1.4 files (catalog, page tree, one content stream per page,
// a correct xref table) so PDF tests need no binary fixtures. Not a general PDF writer: no embedded
// fonts (a page may name a standard-14 font in its resources), no compression, no incremental updates.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace locr::test {

struct PdfPageSpec {
  double width_pt = 612;
  double height_pt = 792;
  int rotate = 0;        // /Rotate, degrees clockwise
  std::string content;   // content stream, e.g. "0 0 0 rg 0 50 100 50 re f\n"
  std::string resources = "<< >>";  // the page's /Resources dictionary
  PdfPageSpec(double w, double h, int rot = 0, std::string c = {}, std::string res = "<< >>")
      : width_pt(w), height_pt(h), rotate(rot), content(std::move(c)), resources(std::move(res)) {}
};

inline std::string pdf_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// Objects: 1 catalog, 2 page tree, then per page i: 3 + 2i page, 4 + 2i contents.
inline std::string make_pdf(const std::vector<PdfPageSpec>& pages) {
  std::vector<std::string> objs;
  std::string kids;
  for (size_t i = 0; i < pages.size(); ++i) kids += (i ? " " : "") + std::to_string(3 + 2 * i) + " 0 R";
  objs.push_back("<< /Type /Catalog /Pages 2 0 R >>");
  objs.push_back("<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(pages.size()) + " >>");
  for (size_t i = 0; i < pages.size(); ++i) {
    const auto& p = pages[i];
    std::string page = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 " + pdf_number(p.width_pt) + " " +
                       pdf_number(p.height_pt) + "] /Resources " + p.resources + " /Contents " + std::to_string(4 + 2 * i) +
                       " 0 R";
    if (p.rotate) page += " /Rotate " + std::to_string(p.rotate);
    objs.push_back(page + " >>");
    objs.push_back("<< /Length " + std::to_string(p.content.size()) + " >>\nstream\n" + p.content + "\nendstream");
  }
  std::string out = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n";
  std::vector<size_t> offsets;
  for (size_t i = 0; i < objs.size(); ++i) {
    offsets.push_back(out.size());
    out += std::to_string(i + 1) + " 0 obj\n" + objs[i] + "\nendobj\n";
  }
  const size_t xref = out.size();
  out += "xref\n0 " + std::to_string(objs.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char line[32];
    std::snprintf(line, sizeof(line), "%010zu 00000 n \n", off);
    out += line;
  }
  out += "trailer\n<< /Size " + std::to_string(objs.size() + 1) + " /Root 1 0 R >>\nstartxref\n" +
         std::to_string(xref) + "\n%%EOF\n";
  return out;
}

}  // namespace locr::test
