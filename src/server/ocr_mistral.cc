#include "server/ocr_mistral.h"

#include <cctype>
#include <cmath>

#include "io/image.h"
#include "io/image_encode.h"
#include "io/pdf.h"
#include "server/errors.h"
#include "server/media.h"
#include "server/openai_schema.h"

namespace locr::server {

using json = nlohmann::json;

namespace {

constexpr int kFigureJpegQuality = 90;

// "0-2,5" (0-based, Mistral) -> "1-3,6" (1-based, locr's page ranges).
std::string one_based(const std::string& s) {
  std::string out;
  size_t i = 0;
  bool digits = false;
  while (i < s.size()) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      size_t j = i;
      while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
      if (j - i > 9) bad_request("'pages': page index too large", "pages");
      out += std::to_string(std::stoll(s.substr(i, j - i)) + 1);
      i = j;
      digits = true;
    } else if (c == ',' || c == '-' || c == ' ') {
      out += c;
      ++i;
    } else {
      bad_request(str("'pages' must be 0-based page indices such as [0, 2] or \"0-2,5\", got '", s, "'"), "pages");
    }
  }
  if (!digits) bad_request("'pages' selects no page", "pages");
  return out;
}

std::string document_url(const json& doc) {
  if (!doc.contains("type") || !doc["type"].is_string())
    bad_request("'document.type' must be 'document_url' or 'image_url'", "document");
  const std::string type = doc["type"].get<std::string>();
  const char* key = nullptr;
  if (type == "document_url") key = "document_url";
  else if (type == "image_url") key = "image_url";
  else if (type == "file")
    bad_request("'document.type' 'file' (an uploaded file id) is not supported: send the document as a "
                "document_url or image_url (a data: URL works)", "document");
  else
    bad_request(str("unknown 'document.type' '", type, "': expected 'document_url' or 'image_url'"), "document");
  const json& v = doc.contains(key) ? doc[key] : json();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("url") && v["url"].is_string()) return v["url"].get<std::string>();
  bad_request(str("'document.", key, "' must be a URL string"), "document");
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void check_declared_document(const std::string& url, bool declared_image, const std::string& bytes) {
  std::string mime;
  if (url.size() > 5 && lower(url.substr(0, 5)) == "data:") mime = lower(url.substr(5, url.find_first_of(";,") - 5));
  const bool pdf = io::looks_like_pdf(bytes);
  const io::ImageFormat image = io::detect_image_format(bytes);
  const std::string what = pdf ? "a PDF" : image != io::ImageFormat::kUnknown
                                               ? str("a ", io::image_format_name(image), " image")
                                               : "neither a PDF nor an image locr reads";
  if (pdf && (declared_image || mime.rfind("image/", 0) == 0))
    bad_request(str("'document' is declared an image (", declared_image ? "type image_url" : "data:" + mime,
                    ") but holds a PDF: send it as {\"type\": \"document_url\", \"document_url\": "
                    "\"data:application/pdf;base64,...\"}"),
                "document");
  if (!pdf && mime == "application/pdf")
    bad_request(str("'document' is declared a PDF (data:application/pdf) but holds ", what,
                    image != io::ImageFormat::kUnknown ? ": send it as {\"type\": \"image_url\", ...} or with its image type"
                                                       : ""),
                "document");
}

bool is_mistral_request(const json& body) { return body.is_object() && body.contains("document") && body["document"].is_object(); }

MistralOptions read_mistral_request(json& body, std::string& bytes, const ServerOptions& opts) {
  MistralOptions m;
  m.active = true;
  const std::string url = document_url(body["document"]);
  try {
    bytes = fetch_image_bytes(url, opts);
  } catch (const ApiError& e) {
    throw ApiError(e.status(), str("'document': ", e.what()), "document");
  }
  m.doc_size_bytes = static_cast<int64_t>(bytes.size());
  check_declared_document(url, body["document"].value("type", "") == "image_url", bytes);
  body.erase("document");
  if (body.contains("pages") && !body["pages"].is_null()) {
    const json& p = body["pages"];
    std::string range;
    if (p.is_array()) {
      if (p.empty()) bad_request("'pages' is an empty list", "pages");
      for (const json& v : p) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1000000000)
          bad_request("'pages' must hold 0-based page indices (integers >= 0)", "pages");
        if (!range.empty()) range += ",";
        range += std::to_string(v.get<int64_t>() + 1);
      }
    } else if (p.is_string()) {
      range = one_based(p.get<std::string>());
    } else {
      bad_request("'pages' must be a list of 0-based page indices or a string such as \"0-2,5\"", "pages");
    }
    body["pages"] = range;
  } else {
    body.erase("pages");
  }
  if (auto v = opt_bool(body, "include_image_base64")) m.include_image_base64 = *v;
  if (auto v = opt_int(body, "image_limit")) {
    if (*v < 0) bad_request("'image_limit' must be >= 0", "image_limit");
    m.image_limit = static_cast<int>(std::min<int64_t>(*v, 1 << 30));
  }
  if (auto v = opt_int(body, "image_min_size")) {
    if (*v < 0) bad_request("'image_min_size' must be >= 0", "image_min_size");
    m.image_min_size = static_cast<int>(std::min<int64_t>(*v, 1 << 30));
  }
  if (auto v = opt_string(body, "table_format")) {
    if (*v != "markdown" && *v != "html")
      bad_request(str("'table_format' must be 'markdown' or 'html', got '", *v, "'"), "table_format");
    body["tables_to_markdown"] = *v == "markdown";
  }
  if (auto v = opt_string(body, "confidence_scores_granularity")) {
    if (*v != "page")
      bad_request(str("'confidence_scores_granularity' '", *v, "' is not supported: locr gives page confidence only"),
                  "confidence_scores_granularity");
    m.page_confidence = true;
  }
  for (const char* k : {"bbox_annotation_format", "document_annotation_format", "document_annotation_prompt"})
    if (body.contains(k) && !body[k].is_null())
      bad_request(str("'", k, "' (annotations with a second model) is not supported by locr"), k);
  // Mistral has no streaming OCR; locr's own form streams.
  if (auto v = opt_bool(body, "stream"); v && *v)
    bad_request("'stream' is not part of Mistral's OCR API; use locr's form (document as a base64 string)", "stream");
  return m;
}

json mistral_page(int index, const std::string& markdown, int width, int height, int dpi, const io::Image* page_image,
                  const json& confidence, const MistralOptions& opts, int* next_image) {
  const std::vector<Figure> figures = find_figures(markdown);
  std::vector<std::string> ids(figures.size());
  json images = json::array();
  for (size_t k = 0; k < figures.size(); ++k) {
    const PixelBox b = figure_pixels(figures[k], width, height);
    if (std::min(b.right - b.left, b.bottom - b.top) < opts.image_min_size) continue;
    if (opts.image_limit >= 0 && *next_image >= opts.image_limit) continue;
    ids[k] = "img-" + std::to_string((*next_image)++) + ".jpeg";
    json im = {{"id", ids[k]},          {"top_left_x", b.left},     {"top_left_y", b.top},
               {"bottom_right_x", b.right}, {"bottom_right_y", b.bottom}};
    if (opts.include_image_base64)
      im["image_base64"] =
          page_image && page_image->width == width && page_image->height == height
              ? json("data:image/jpeg;base64," + base64_encode(io::encode_jpeg(crop(*page_image, b), kFigureJpegQuality)))
              : json(nullptr);
    images.push_back(std::move(im));
  }
  json page = {{"index", index},
               {"markdown", replace_figures(markdown, figures, ids)},
               {"images", std::move(images)},
               {"dimensions", {{"dpi", dpi}, {"height", height}, {"width", width}}}};
  if (opts.page_confidence)
    page["confidence_scores"] =
        confidence.is_object()
            ? json{{"average_page_confidence_score", confidence["score"]},
                   {"minimum_page_confidence_score", std::exp(confidence["min_logprob"].get<double>())}}
            : json(nullptr);
  return page;
}

}  // namespace locr::server
