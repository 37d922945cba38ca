// POST /v1/ocr: a whole document (PDF, multi-page TIFF or image) in, per-page Markdown out.
//
// The document comes as a multipart upload (field `file`, every other field a form value) or as a
// JSON body whose `document` is base64 or a data: URL. Each selected page becomes the recommended
// image-only OCR prompt, its length known from the page's size before anything is rendered; the
// pages form one Generation (one engine request per page) that keeps --ocr-pages-in-flight of them
// in the engine at a time and renders the next page ahead on a thread of its own (under the decode
// budget, shrunk to the model's size at once and held as 8-bit RGB), submitted as an earlier one
// finishes; one page ahead at most. The
// response is one JSON object, or with `stream: true` one SSE event per page (in page order or as
// pages complete), then a summary event and `data: [DONE]`; with `progress: true` also progress
// events (tokens per running page) at most every kProgressInterval. With `include_page_image`
// each page carries the image the model read, as a JPEG data: URL (what the web UI shows). A
// client disconnect cancels every page and stops the rendering. Reading and preparing the document
// and the JSON shapes are in ocr_document.h (shared with /v1/ocr/jobs); this file is the response.
#include <memory>

#include "server/errors.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/ocr_document.h"
#include "server/request_log.h"
#include "server/sse.h"

namespace locr::server {

namespace {

constexpr auto kProgressInterval = std::chrono::milliseconds(250);

}  // namespace

void handle_ocr(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  PreparedOcr prepared = prepare_ocr(ctx, read_ocr_request(req, ctx.opts()));
  const std::shared_ptr<OcrJob> job = prepared.job;
  const GenParams& p = prepared.params;
  const size_t n_pages = prepared.prompts.size();
  job->id = "ocr-" + request_log().id;
  job->created = unix_now();
  job->submitted = Clock::now();
  auto gen = std::make_shared<Generation>(ctx, p, std::move(prepared.prompts), request_log().id, prepared.in_flight);
  request_log().note = str(n_pages, " page(s)", p.stream ? ", stream" : "");

  // Records first-token and finish times; returns the indices that finished in this batch.
  auto track = [job](std::vector<ChoiceDelta>& ds) {
    std::vector<int> finished;
    for (auto& d : ds) {
      PageState& ps = job->pages[d.index];
      if (ps.first_token_s < 0 && (!d.text.empty() || d.finished)) ps.first_token_s = seconds_since(job->submitted);
      if (d.finished) {
        ps.finished_s = seconds_since(job->submitted);
        finished.push_back(d.index);
      }
    }
    return finished;
  };

  GenerationWriter w;
  if (job->mistral.active) {
    w.on_deltas = [track](std::vector<ChoiceDelta>& ds, std::string&) { track(ds); };
    w.on_done = [job, gen](std::string& out) { out = json_text(mistral_json(*job, *gen)); };
    respond_with_generation(ctx, res, gen, "application/json", std::move(w));
    return;
  }
  if (!p.stream) {
    w.on_deltas = [track](std::vector<ChoiceDelta>& ds, std::string&) { track(ds); };
    w.on_done = [job, gen](std::string& out) { out = json_text(summary_json(*job, *gen, true)); };
    respond_with_generation(ctx, res, gen, "application/json", std::move(w));
    return;
  }

  auto event = [job, gen](int i) {
    json e = page_json(*job, *gen, i);
    e["id"] = job->id;
    e["object"] = "ocr.page";
    e["created"] = job->created;
    e["model"] = job->model;
    job->pages[i].emitted = true;
    job->pages[i].image.clear();  // sent: not held any longer
    return sse_event(e);
  };
  if (job->opts.progress) {
    w.on_start = [job, gen](std::string& out) {
      job->last_progress = Clock::now();
      out += sse_event(progress_json(*job, *gen));
    };
  }
  w.on_deltas = [job, gen, track, event](std::vector<ChoiceDelta>& ds, std::string& out) {
    const std::vector<int> finished = track(ds);
    if (job->opts.order == "completion") {
      for (int i : finished) out += event(i);
    } else {
      const auto& results = gen->results();
      while (job->next_in_order < static_cast<int>(job->pages.size()) &&
             results[job->next_in_order].finish_reason)
        out += event(job->next_in_order++);
    }
    if (job->opts.progress && Clock::now() - job->last_progress >= kProgressInterval) {
      job->last_progress = Clock::now();
      out += sse_event(progress_json(*job, *gen));
    }
  };
  w.on_done = [job, gen, event](std::string& out) {
    for (int i = 0; i < static_cast<int>(job->pages.size()); ++i)
      if (!job->pages[i].emitted) out += event(i);
    json s = summary_json(*job, *gen, false);
    out += sse_event(s);
    out += "data: [DONE]\n\n";
  };
  respond_with_generation(ctx, res, gen, "text/event-stream", std::move(w));
}

}  // namespace locr::server
