// Mistral's OCR API on POST /v1/ocr (what LiteLLM's ocr(), Portkey and the mistralai SDK speak),
// beside locr's own form: a JSON body whose `document` is an object is a Mistral request
// ({"type": "document_url", "document_url"} or {"type": "image_url", "image_url"}; `pages` 0-based
// ints or a "0-2,5" string; include_image_base64, image_limit, image_min_size, table_format,
// confidence_scores_granularity "page"). It is translated into locr's options here; the handler
// runs it like any document and answers in Mistral's response shape (mistral_page below).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "io/image.h"
#include "server/ocr_figures.h"
#include "server/server_context.h"

namespace locr::server {

struct MistralOptions {
  bool active = false;                // the request was in Mistral's shape
  bool include_image_base64 = false;  // figures' crops as data: URLs
  int image_limit = -1;               // most figures in the whole response (-1: no limit)
  int image_min_size = 0;             // figures with a side (px) under this are dropped
  bool page_confidence = false;       // confidence_scores_granularity "page"
  int64_t doc_size_bytes = 0;
};

// ApiError 400 (param "document") when the document's bytes are not what the request declared:
// a PDF sent as an image (`declared_image`: Mistral's type image_url, or a data:image/... URL), or
// other bytes in a data:application/pdf URL. `url` is the document's URL as sent.
void check_declared_document(const std::string& url, bool declared_image, const std::string& bytes);

// True when `body` is a Mistral OCR request (its `document` is an object).
bool is_mistral_request(const nlohmann::json& body);

// Reads a Mistral request: the document's bytes into `bytes` (data: URLs; http(s) only for
// --allowed-media-domains), and rewrites `body` into locr's options (1-based `pages` string,
// `tables_to_markdown`). ApiError 400 naming the field for anything it cannot honour.
MistralOptions read_mistral_request(nlohmann::json& body, std::string& bytes, const ServerOptions& opts);

// One page in Mistral's shape. `markdown` is the page's post-processed text; figures found in it
// are numbered from `*next_image` (ids "img-N.jpeg", counted across the document), their markers
// replaced by ![id](id), cropped from `page_image` (the image the model read, width x height) when
// base64 is asked for. `confidence` is the page's {"score", "min_logprob", ...} or null.
nlohmann::json mistral_page(int index, const std::string& markdown, int width, int height, int dpi,
                            const io::Image* page_image, const nlohmann::json& confidence,
                            const MistralOptions& opts, int* next_image);

}  // namespace locr::server
