// /v1/ocr's document, shared by the synchronous route (ocr_handler.cc) and async jobs
// (ocr_jobs.cc): reading the request (multipart upload, locr's JSON, Mistral's shape), preparing the
// document (options, page selection, every page's prompt from its size, the lazy page rendering,
// the memory budget), and the JSON builders of a page, the summary, Mistral's response and the
// progress events. The builders take the page results from a Generation (the synchronous route)
// or from OcrResults (a job's, gathered over the runs that finished its pages): the same
// accessors, so both answer with the same bytes.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "io/document.h"
#include "runtime/postprocess.h"
#include "server/generation.h"
#include "server/ocr_mistral.h"
#include "server/openai_schema.h"
#include "server/server_context.h"

namespace locr::server {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0);

struct OcrRequest {
  json body;
  std::string bytes;  // the document
  MistralOptions mistral;
};

struct OcrOptions {
  std::string pages;
  std::string output = "markdown";
  std::string order = "page";
  std::string separator = "\n\n";
  bool grounding = false;   // mode "grounding": the text `grounding` after the page image (LightOnOCR-3)
  std::set<std::string> drop_labels;  // grounding: block labels left out of the page's Markdown
  bool figure_markers = false;        // grounding for a Mistral request: image blocks become figures
  bool page_image = false;  // include_page_image
  bool progress = false;    // progress events (stream only)
  runtime::PostprocessOptions post;
  io::DocumentOptions doc;
};

// One page's state while the generation runs.
struct PageState {
  int page = 0;  // 1-based page number in the document
  int width = 0, height = 0;  // the image the model reads (box coordinates are relative to it)
  int dpi = 72;               // of that image (an image page: 72 at its own size)
  std::string image;          // include_page_image: JPEG data: URL, once rendered, until sent
  io::Image kept;             // Mistral include_image_base64: the page, for the figures' crops
  double render_s = 0;
  double first_token_s = -1, finished_s = -1;
  bool emitted = false;
};

struct OcrJob {
  std::string id, model;
  int64_t created = 0;
  int page_count = 0;
  std::string format;
  OcrOptions opts;
  MistralOptions mistral;
  std::vector<PageState> pages;
  Clock::time_point submitted;
  int next_in_order = 0;  // order "page": the next page index to emit
  Clock::time_point last_progress;
};

// The request as read: options (a Mistral request rewritten into locr's), the document's bytes.
// ApiError 400 for a missing document, bad base64, an empty one.
OcrRequest read_ocr_request(const httplib::Request& req, const ServerOptions& opts);

// A document ready to generate: every check /v1/ocr makes done (model, sampling fields, options,
// page selection, prompt lengths, --max-document-pages, --max-ocr-request-bytes), one prompt per
// selected page whose load_images renders it when the engine is about to take it.
struct PreparedOcr {
  std::shared_ptr<OcrJob> job;  // id, created and submitted left for the caller to set
  GenParams params;
  std::vector<PreparedPrompt> prompts;
  std::shared_ptr<io::Document> doc;
  int in_flight = 1;  // --ocr-pages-in-flight
};
PreparedOcr prepare_ocr(ServerContext& ctx, OcrRequest in);

// The page results of a document outside a Generation (an async job's: pages finished in earlier
// runs read back from disk, the others from the current run), with Generation's accessors.
class OcrResults {
 public:
  OcrResults(GenParams params, std::vector<PreparedPrompt> prompts)
      : params_(std::move(params)), prompts_(std::move(prompts)), results_(prompts_.size()) {}
  const std::vector<ChoiceResult>& results() const { return results_; }
  std::vector<ChoiceResult>& results() { return results_; }
  const std::vector<PreparedPrompt>& prompts() const { return prompts_; }
  const GenParams& params() const { return params_; }
  int64_t prompt_tokens() const;
  int64_t completion_tokens() const;

 private:
  GenParams params_;
  std::vector<PreparedPrompt> prompts_;
  std::vector<ChoiceResult> results_;
};

// The JSON builders (`Gen`: Generation or OcrResults).
template <class Gen>
json page_json(const OcrJob& job, const Gen& gen, int i);
template <class Gen>
std::string document_text(const OcrJob& job, const Gen& gen);
template <class Gen>
json summary_json(const OcrJob& job, const Gen& gen, bool with_pages);
// The response in Mistral's OCR shape; drops the pages' kept images.
template <class Gen>
json mistral_json(OcrJob& job, const Gen& gen);
template <class Gen>
json progress_json(const OcrJob& job, const Gen& gen);

}  // namespace locr::server
