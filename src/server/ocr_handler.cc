// POST /v1/ocr: a whole document (PDF, multi-page TIFF or image) in, per-page Markdown out.
//
// The document comes as a multipart upload (field `file`, every other field a form value) or as a
// JSON body whose `document` is base64 or a data: URL. The selected pages are rendered on the HTTP
// thread, each becomes the recommended image-only OCR prompt, and all of them are submitted at once
// as one Generation (one engine request per page), so they batch with every other request. The
// response is one JSON object, or with `stream: true` one SSE event per page (in page order or as
// pages complete), then a summary event and `data: [DONE]`. A client disconnect cancels every page.
#include <chrono>
#include <map>

#include "io/document.h"
#include "io/page_range.h"
#include "runtime/postprocess.h"
#include "server/errors.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/media.h"
#include "server/openai_response.h"
#include "server/request_log.h"
#include "server/sse.h"

namespace locr::server {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Form fields that stay strings; the others are read as JSON scalars when they parse as one
// ("128" -> 128, "true" -> true), so the same validation applies to both encodings.
bool string_field(const std::string& k) {
  return k == "pages" || k == "output" || k == "password" || k == "page_separator" || k == "order" || k == "model" ||
         k == "document" || k == "stop";
}

struct OcrRequest {
  json body;
  std::string bytes;  // the document
};

OcrRequest read_request(const httplib::Request& req) {
  OcrRequest r;
  if (req.is_multipart_form_data()) {
    r.body = json::object();
    bool have_file = false;
    for (const auto& [name, part] : req.files) {
      if (name == "file") {
        r.bytes = part.content;
        have_file = true;
        continue;
      }
      if (string_field(name)) {
        r.body[name] = part.content;
        continue;
      }
      json v;
      try {
        v = json::parse(part.content);
      } catch (const json::parse_error&) {
        v = part.content;
      }
      r.body[name] = v.is_primitive() ? v : json(part.content);
    }
    if (!have_file) bad_request("the multipart upload needs a 'file' field with the document", "file");
  } else {
    r.body = parse_body(req.body);
    auto doc = opt_string(r.body, "document");
    if (!doc) bad_request("'document' is required: the file as base64 or a data: URL (or upload it as multipart field 'file')",
                          "document");
    std::string_view b64 = *doc;
    if (b64.rfind("data:", 0) == 0) {
      const size_t comma = b64.find(',');
      if (comma == std::string_view::npos || b64.substr(0, comma).find(";base64") == std::string_view::npos)
        bad_request("'document' is a data: URL but not a base64 one (expected data:<type>;base64,<data>)", "document");
      b64 = b64.substr(comma + 1);
    }
    // Tolerate line-wrapped base64 (what `base64 FILE` prints).
    std::string compact;
    if (b64.find_first_of(" \t\r\n") != std::string_view::npos) {
      compact.reserve(b64.size());
      for (char c : b64)
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') compact += c;
      b64 = compact;
    }
    auto decoded = base64_decode(b64);
    if (!decoded) bad_request("'document' is not valid base64", "document");
    r.bytes = std::move(*decoded);
    r.body.erase("document");
  }
  if (r.bytes.empty()) bad_request("the document is empty", "document");
  return r;
}

struct OcrOptions {
  std::string pages;
  std::string output = "markdown";
  std::string order = "page";
  std::string separator = "\n\n";
  runtime::PostprocessOptions post;
  io::DocumentOptions doc;
};

OcrOptions parse_ocr_options(const json& body, const ServerContext& ctx) {
  OcrOptions o;
  if (auto v = opt_string(body, "pages")) o.pages = *v;
  if (auto v = opt_string(body, "output")) o.output = *v;
  if (o.output != "markdown" && o.output != "text" && o.output != "json")
    bad_request(str("'output' must be 'markdown', 'text' or 'json', got '", o.output, "'"), "output");
  if (auto v = opt_string(body, "order")) o.order = *v;
  if (o.order != "page" && o.order != "completion")
    bad_request(str("'order' must be 'page' or 'completion', got '", o.order, "'"), "order");
  if (auto v = opt_string(body, "page_separator")) o.separator = "\n\n" + *v + "\n\n";
  if (auto v = opt_bool(body, "fix_dollars")) o.post.fix_dollars = *v;
  if (auto v = opt_bool(body, "tables_to_markdown")) o.post.tables_to_markdown = *v;
  o.post.plain_text = o.output == "text";
  if (auto v = opt_number(body, "dpi")) {
    if (!(*v >= 10 && *v <= 1200)) bad_request(str("'dpi' must be in [10, 1200], got ", *v), "dpi");
    o.doc.pdf.dpi = *v;
  }
  if (auto v = opt_string(body, "password")) o.doc.pdf.password = *v;
  o.doc.decode.max_pixels = ctx.opts().max_image_pixels;
  o.doc.pdf.max_pages = std::max(o.doc.pdf.max_pages, ctx.opts().max_document_pages);
  return o;
}

// One page's state while the generation runs.
struct PageState {
  int page = 0;  // 1-based page number in the document
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
  std::vector<PageState> pages;
  Clock::time_point submitted;
  int next_in_order = 0;  // order "page": the next page index to emit
};

json page_json(const OcrJob& job, const Generation& gen, int i) {
  const ChoiceResult& r = gen.results()[i];
  const PageState& p = job.pages[i];
  json j = {{"page", p.page},
            {"index", i},
            {"text", runtime::postprocess(r.text, job.opts.post)},
            {"finish_reason", r.finish_reason.empty() ? json(nullptr) : json(r.finish_reason)},
            {"stop_reason", r.stop_reason},
            {"usage", usage_json(static_cast<int64_t>(gen.prompts()[i].ids.size()), r.n_tokens)},
            {"timings",
             {{"render_s", p.render_s},
              {"first_token_s", p.first_token_s < 0 ? json(nullptr) : json(p.first_token_s)},
              {"total_s", p.finished_s < 0 ? json(nullptr) : json(p.finished_s)}}}};
  if (job.opts.output == "json") j["raw"] = r.text;
  return j;
}

std::string document_text(const OcrJob& job, const Generation& gen) {
  std::string doc;
  for (size_t i = 0; i < job.pages.size(); ++i) {
    if (i) doc += job.opts.separator;
    std::string t = runtime::postprocess(gen.results()[i].text, job.opts.post);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    doc += t;
  }
  return doc;
}

json summary_json(const OcrJob& job, const Generation& gen, bool with_pages) {
  json j = {{"id", job.id},          {"object", "ocr.document"},      {"created", job.created},
            {"model", job.model},    {"format", job.format},          {"page_count", job.page_count},
            {"pages_selected", static_cast<int>(job.pages.size())}};
  if (with_pages) {
    json pages = json::array();
    for (int i = 0; i < static_cast<int>(job.pages.size()); ++i) pages.push_back(page_json(job, gen, i));
    j["pages"] = std::move(pages);
  }
  j["document"] = document_text(job, gen);
  j["usage"] = usage_json(gen.prompt_tokens(), gen.completion_tokens());
  return j;
}

}  // namespace

void handle_ocr(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  OcrRequest in = read_request(req);
  const json& body = in.body;
  auto job = std::make_shared<OcrJob>();
  job->model = check_model(body, ctx);
  GenParams p = parse_gen_params(body, Api::kChat, ctx);
  if (p.n != 1) bad_request("'n' must be 1 for /v1/ocr (one result per page)", "n");
  if (p.logprobs >= 0) bad_request("'logprobs' is not supported by /v1/ocr", "logprobs");
  job->opts = parse_ocr_options(body, ctx);
  const io::PageRange range = [&] {
    try {
      return job->opts.pages.empty() ? io::PageRange::all() : io::PageRange::parse(job->opts.pages);
    } catch (const locr::Error& e) {
      throw ApiError(400, str("'pages': ", e.what()), "pages");
    }
  }();

  io::Document doc = [&] {
    try {
      return io::open_document(std::move(in.bytes), job->opts.doc);
    } catch (const locr::Error& e) {
      throw ApiError(400, str("cannot open the document: ", e.what()), "document");
    }
  }();
  job->page_count = doc.page_count();
  job->format = doc.format_name();
  std::vector<int> selected;
  try {
    selected = range.resolve(job->page_count);
  } catch (const locr::Error& e) {
    throw ApiError(400, str("'pages': ", e.what()), "pages");
  }
  const int limit = ctx.opts().max_document_pages;
  if (static_cast<int>(selected.size()) > limit)
    bad_request(str("too many pages: ", selected.size(), " selected, this server takes at most ", limit,
                    " per request (--max-document-pages); choose fewer with 'pages'"),
                "pages");

  const json messages = model::LightOnOcr::make_messages(nullptr, nullptr, 1);
  std::vector<PreparedPrompt> prompts(selected.size());
  job->pages.resize(selected.size());
  for (size_t i = 0; i < selected.size(); ++i) {
    const auto t0 = Clock::now();
    model::Prompt prompt;
    try {
      std::vector<io::Image> images;
      images.push_back(doc.render_page(selected[i] - 1));
      prompt = ctx.model().build_prompt(messages, images);
    } catch (const locr::Error& e) {
      throw ApiError(400, str("cannot render page ", selected[i], ": ", e.what()), "document");
    }
    prompts[i].ids = std::move(prompt.ids);
    prompts[i].images = std::move(prompt.images);
    job->pages[i].page = selected[i];
    job->pages[i].render_s = seconds_since(t0);
  }

  job->id = "ocr-" + request_log().id;
  job->created = unix_now();
  job->submitted = Clock::now();
  auto gen = std::make_shared<Generation>(ctx, p, std::move(prompts), request_log().id);
  request_log().note = str(selected.size(), " page(s)", p.stream ? ", stream" : "");

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
    return sse_event(e);
  };
  w.on_deltas = [job, gen, track, event](std::vector<ChoiceDelta>& ds, std::string& out) {
    const std::vector<int> finished = track(ds);
    if (job->opts.order == "completion") {
      for (int i : finished) {
        out += event(i);
        job->pages[i].emitted = true;
      }
      return;
    }
    const auto& results = gen->results();
    while (job->next_in_order < static_cast<int>(job->pages.size()) && !results[job->next_in_order].finish_reason.empty()) {
      out += event(job->next_in_order);
      job->pages[job->next_in_order].emitted = true;
      ++job->next_in_order;
    }
  };
  w.on_done = [job, gen, event](std::string& out) {
    for (int i = 0; i < static_cast<int>(job->pages.size()); ++i)
      if (!job->pages[i].emitted) {
        out += event(i);
        job->pages[i].emitted = true;
      }
    json s = summary_json(*job, *gen, false);
    out += sse_event(s);
    out += "data: [DONE]\n\n";
  };
  respond_with_generation(ctx, res, gen, "text/event-stream", std::move(w));
}

}  // namespace locr::server
