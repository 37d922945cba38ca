// /v1/ocr's document (ocr_document.h): the request read, the document prepared, the JSON built.
#include "server/ocr_document.h"

#include <cmath>

#include "io/image_encode.h"
#include "io/page_range.h"
#include "server/decode_budget.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/media.h"
#include "server/ocr_grounding.h"
#include "server/openai_response.h"

namespace locr::server {

namespace {

constexpr int kMaxPagesInDocument = 100000;
// What one page holds apart from its pixels while the request runs (ids, text, timings), roughly.
constexpr int64_t kPageOverheadBytes = 16 << 10;
// A page image as a JPEG data: URL, at most, per byte of the page's 8-bit RGB (quality 85 is ~1/10
// for scanned text; held until the page is sent).
constexpr int64_t kPageImageDivisor = 4;
constexpr int kPageImageQuality = 85;
// A page's tokens sampled with less probability than this are counted as uncertain.
constexpr float kDefaultConfidenceThreshold = 0.5f;

// Form fields that stay strings; the others are read as JSON scalars when they parse as one
// ("128" -> 128, "true" -> true), so the same validation applies to both encodings.
bool string_field(const std::string& k) {
  return k == "pages" || k == "output" || k == "mode" || k == "password" || k == "page_separator" || k == "order" || k == "model" ||
         k == "document" || k == "stop" || k == "drop_labels";
}

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
  if (auto v = opt_string(body, "mode")) {
    if (*v != "ocr" && *v != "grounding") bad_request(str("'mode' must be 'ocr' or 'grounding', got '", *v, "'"), "mode");
    o.grounding = *v == "grounding";
  }
  if (auto v = opt_bool(body, "drop_headers_footers"); v && *v) o.drop_labels = header_footer_labels();
  if (auto it = body.find("drop_labels"); it != body.end() && !it->is_null()) {
    std::vector<std::string> labels;
    if (it->is_string()) {  // "header,footer" (a form field)
      std::string s = it->get<std::string>();
      for (size_t from = 0; from <= s.size();) {
        size_t to = std::min(s.find(',', from), s.size());
        std::string l = s.substr(from, to - from);
        while (!l.empty() && l.front() == ' ') l.erase(l.begin());
        while (!l.empty() && l.back() == ' ') l.pop_back();
        if (!l.empty()) labels.push_back(l);
        from = to + 1;
      }
    } else if (it->is_array()) {
      for (const json& l : *it) {
        if (!l.is_string()) bad_request("'drop_labels' must be a list of block labels (strings)", "drop_labels");
        labels.push_back(l.get<std::string>());
      }
    } else {
      bad_request("'drop_labels' must be a list of block labels, e.g. [\"header\", \"footer\"]", "drop_labels");
    }
    o.drop_labels.insert(labels.begin(), labels.end());
  }
  if (!o.drop_labels.empty() && !o.grounding)
    bad_request("'drop_headers_footers' and 'drop_labels' need 'mode': 'grounding' (only grounding output has labelled blocks)",
                "mode");
  if (auto v = opt_bool(body, "include_page_image")) o.page_image = *v;
  if (auto v = opt_bool(body, "progress")) o.progress = *v;
  o.post.plain_text = o.output == "text";
  if (auto v = opt_number(body, "dpi")) {
    if (!(*v >= 10 && *v <= 1200)) bad_request(str("'dpi' must be in [10, 1200], got ", *v), "dpi");
    o.doc.pdf.dpi = *v;
  }
  if (auto v = opt_string(body, "password")) o.doc.pdf.password = *v;
  // A page is one image: the per-image and per-request pixel limits both apply to each page.
  o.doc.decode.max_pixels = std::min(ctx.opts().max_image_pixels, ctx.opts().max_request_image_pixels);
  // Only the selected pages count against --max-document-pages; this only bounds the structure
  // the document may have at all (a 10,000-page TIFF with pages=1 is fine).
  o.doc.pdf.max_pages = kMaxPagesInDocument;
  return o;
}

}  // namespace

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

OcrRequest read_ocr_request(const httplib::Request& req, const ServerOptions& opts) {
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
      } catch (const json::exception&) {  // not JSON, or a number out of range: the text
        v = part.content;
      }
      r.body[name] = v.is_primitive() ? v : json(part.content);
    }
    if (!have_file) bad_request("the multipart upload needs a 'file' field with the document", "file");
  } else {
    r.body = parse_body(req.body);
    if (is_mistral_request(r.body)) {
      r.mistral = read_mistral_request(r.body, r.bytes, opts);
      if (r.bytes.empty()) bad_request("the document is empty", "document");
      return r;
    }
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
    check_declared_document(*doc, /*declared_image=*/false, r.bytes);
    r.body.erase("document");
  }
  if (r.bytes.empty()) bad_request("the document is empty", "document");
  return r;
}

PreparedOcr prepare_ocr(ServerContext& ctx, OcrRequest in) {
  const json& body = in.body;
  auto job = std::make_shared<OcrJob>();
  job->model = check_model(body, ctx);
  GenParams p = parse_gen_params(body, Api::kChat, ctx);
  if (p.n != 1) bad_request("'n' must be 1 for /v1/ocr (one result per page)", "n");
  if (p.logprobs >= 0) bad_request("'logprobs' is not supported by /v1/ocr", "logprobs");
  // Page confidence: statistics of the sampled tokens' log-probabilities, always kept.
  p.confidence_threshold = kDefaultConfidenceThreshold;
  if (auto v = opt_number(body, "confidence_threshold")) {
    if (!(*v > 0 && *v < 1)) bad_request(str("'confidence_threshold' must be a probability in (0, 1), got ", *v),
                                         "confidence_threshold");
    p.confidence_threshold = static_cast<float>(*v);
  }
  job->opts = parse_ocr_options(body, ctx);
  job->mistral = in.mistral;
  const model::ModelVariant& variant = ctx.model().variant();
  if (job->opts.grounding && variant.known() && !variant.grounding)
    bad_request(str("'mode': 'grounding' needs a LightOnOCR-3 model; this server runs ", variant.describe(),
                    ", which was not trained for it: leave 'mode' out (plain OCR)"),
                "mode");
  if (job->mistral.include_image_base64 && variant.known() && !variant.figure_boxes)
    bad_request(str("'include_image_base64': this server runs ", variant.describe(),
                    ", which emits no figure boxes, so there are no images to return; use a -bbox variant "
                    "(e.g. lightonai/LightOnOCR-2-1B-bbox) or LightOnOCR-3, or leave 'include_image_base64' out"),
                "include_image_base64");
  // LightOnOCR-3 boxes figures only in its grounding mode: a Mistral request runs in it, the
  // page's Markdown is made from the blocks, and image blocks become the response's images.
  if (job->mistral.active && variant.grounding) {
    job->opts.grounding = true;
    job->opts.figure_markers = true;
  }
  if (job->opts.progress && !p.stream) bad_request("'progress' events need 'stream': true", "progress");
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

  // Every page's prompt from its size alone: lengths are checked before anything is rendered.
  const model::Model& m = ctx.model();
  const runtime::RequestPath& path = ctx.request_path();
  // The recommended request (as `locr ocr`): the page image alone, or in grounding mode the image then `grounding`.
  const model::RenderedChat chat = path.ocr_chat(job->opts.grounding);
  const int in_flight = std::max(1, ctx.opts().ocr_pages_in_flight);
  auto shared_doc = std::make_shared<io::Document>(std::move(doc));
  std::vector<PreparedPrompt> prompts(selected.size());
  job->pages.resize(selected.size());
  int64_t held_bytes = 0, largest_page = 0;
  for (size_t i = 0; i < selected.size(); ++i) {
    const int index = selected[i] - 1;
    io::ImageSize size;
    int n_tokens = 0;
    try {
      size = shared_doc->page_size(index);
      n_tokens = m.image_tokens(size.height, size.width);
    } catch (const locr::Error& e) {
      throw ApiError(400, str("cannot render page ", selected[i], ": ", e.what()), "document");
    }
    prompts[i].ids = path.prompt_ids(chat, {size});
    check_prompt_length(path.max_model_len(), static_cast<int64_t>(prompts[i].ids.size()), p.max_tokens);
    const auto model_size = m.image_size(size.height, size.width);
    const int64_t page_bytes = int64_t{model_size[0]} * model_size[1] * 3;
    largest_page = std::max(largest_page, page_bytes);
    held_bytes += static_cast<int64_t>(prompts[i].ids.size()) * 4 + kPageOverheadBytes;
    if (job->opts.page_image) held_bytes += page_bytes / kPageImageDivisor;
    if (job->mistral.include_image_base64) held_bytes += page_bytes;  // kept for the crops
    job->pages[i].page = selected[i];
    job->pages[i].height = model_size[0];
    job->pages[i].width = model_size[1];
    const double points = shared_doc->page_width_points(index);
    job->pages[i].dpi = points > 0 ? static_cast<int>(std::lround(72.0 * model_size[1] / points)) : 72;
    const int page_number = selected[i];
    prompts[i].load_draft_text = [shared_doc, index] { return shared_doc->page_draft_text(index); };
    prompts[i].load_images = [&ctx, shared_doc, job, i, index, size, n_tokens, page_number] {
      const auto t0 = Clock::now();
      model::ProcessedImage img;
      try {
        io::Image small;
        {
          const DecodeBudget::Lease lease(ctx.decode_budget(), DecodeBudget::estimate(size.width, size.height));
          small = ctx.model().shrink_for_model(shared_doc->render_page(index));
        }
        img = ctx.model().preprocess(small);
        if (job->opts.page_image)
          job->pages[i].image = "data:image/jpeg;base64," + base64_encode(io::encode_jpeg(small, kPageImageQuality));
        if (job->mistral.include_image_base64) job->pages[i].kept = small;
      } catch (const locr::Error& e) {
        throw locr::Error(e.kind(), str("cannot render page ", page_number, ": ", e.what()));
      }
      if (ctx.model().image_tokens(img) != n_tokens)
        fail(ErrorKind::kInvalidArgument, "page ", page_number, " rendered to ", img.width, "x", img.height,
             " pixels, not the size its header gives; the file is damaged");
      job->pages[i].render_s = seconds_since(t0);
      std::vector<model::ProcessedImage> out;
      out.push_back(std::move(img));
      return out;
    };
  }
  // What the request holds while it runs: the pages in flight at the model's size and the one
  // rendered ahead of them (Generation::load_ahead), plus each selected page's prompt and results.
  const int64_t budget_bytes = ctx.opts().max_ocr_request_bytes;
  const int64_t need =
      held_bytes + std::min<int64_t>(int64_t{in_flight} + 1, static_cast<int64_t>(selected.size())) * largest_page;
  if (need > budget_bytes)
    bad_request(str("this document needs about ", need >> 20, " MiB to process (", selected.size(),
                    " page(s)), more than this server allows one /v1/ocr request (--max-ocr-request-bytes ",
                    budget_bytes >> 20, " MiB); choose fewer pages with 'pages' or a lower 'dpi'"),
                "pages");
  PreparedOcr out;
  out.job = std::move(job);
  out.params = p;
  out.prompts = std::move(prompts);
  out.doc = std::move(shared_doc);
  out.in_flight = in_flight;
  return out;
}

int64_t OcrResults::prompt_tokens() const {
  int64_t n = 0;
  for (const PreparedPrompt& p : prompts_) n += static_cast<int64_t>(p.ids.size());
  return n;
}

int64_t OcrResults::completion_tokens() const {
  int64_t n = 0;
  for (const ChoiceResult& r : results_) n += r.n_tokens;
  return n;
}

namespace {

// A page's text as it is returned: post-processed; in grounding mode the Markdown of its blocks
// (without the dropped labels), each block's text post-processed, the blocks into `blocks` when given.
std::string page_text(const OcrJob& job, const std::string& raw, int width, int height, json* blocks) {
  if (!job.opts.grounding) return runtime::postprocess(raw, job.opts.post);
  const std::vector<GroundingBlock> b = grounding_blocks(raw, job.opts.post);
  if (blocks) *blocks = grounding_json(b, width, height, job.opts.drop_labels);
  return grounding_markdown(b, job.opts.drop_labels, job.opts.figure_markers);
}

}  // namespace

template <class Gen>
json page_json(const OcrJob& job, const Gen& gen, int i) {
  const ChoiceResult& r = gen.results()[i];
  const PageState& p = job.pages[i];
  json blocks;
  json j = {{"page", p.page},
            {"index", i},
            {"dimensions", {{"width", p.width}, {"height", p.height}}},
            {"text", page_text(job, r.text, p.width, p.height, &blocks)},
            {"finish_reason", finish_reason_json(r.finish_reason)},
            {"stop_reason", r.stop_reason},
            {"usage", usage_json(static_cast<int64_t>(gen.prompts()[i].ids.size()), r.n_tokens)},
            {"timings",
             {{"render_s", p.render_s},
              {"first_token_s", p.first_token_s < 0 ? json(nullptr) : json(p.first_token_s)},
              {"total_s", p.finished_s < 0 ? json(nullptr) : json(p.finished_s)}}}};
  if (job.opts.output == "json" || job.opts.grounding) j["raw"] = r.text;
  if (job.opts.grounding) j["blocks"] = std::move(blocks);
  if (!r.error.empty()) j["error"] = r.error;
  if (r.drafted_tokens > 0)  // decoded with speculative drafts (the PDF's text layer, a draft_text)
    j["speculative"] = {{"drafted", r.drafted_tokens}, {"accepted", r.accepted_tokens}};
  const TokenConfidence& c = r.confidence;
  if (c.tokens > 0) {
    const double mean = c.sum_logprob / static_cast<double>(c.tokens);
    j["confidence"] = {{"score", std::exp(mean)},
                       {"mean_logprob", mean},
                       {"min_logprob", c.min_logprob},
                       {"tokens", c.tokens},
                       {"tokens_below_threshold", c.below_threshold},
                       {"threshold", gen.params().confidence_threshold}};
  } else {
    j["confidence"] = nullptr;
  }
  if (job.opts.page_image) j["image"] = p.image.empty() ? json(nullptr) : json(p.image);
  return j;
}

template <class Gen>
std::string document_text(const OcrJob& job, const Gen& gen) {
  std::string doc;
  for (size_t i = 0; i < job.pages.size(); ++i) {
    if (i) doc += job.opts.separator;
    const PageState& p = job.pages[i];
    std::string t = page_text(job, gen.results()[i].text, p.width, p.height, nullptr);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    doc += t;
  }
  return doc;
}

template <class Gen>
json summary_json(const OcrJob& job, const Gen& gen, bool with_pages) {
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

// The response in Mistral's OCR shape (ocr_mistral.h).
template <class Gen>
json mistral_json(OcrJob& job, const Gen& gen) {
  json pages = json::array();
  int next_image = 0;
  for (size_t i = 0; i < job.pages.size(); ++i) {
    PageState& p = job.pages[i];
    const json mine = page_json(job, gen, static_cast<int>(i));
    pages.push_back(mistral_page(p.page - 1, mine["text"].get<std::string>(), p.width, p.height, p.dpi,
                                 p.kept.rgb.empty() ? nullptr : &p.kept, mine["confidence"], job.mistral, &next_image));
    p.kept = io::Image{};
  }
  return {{"pages", std::move(pages)},
          {"model", job.model},
          {"usage_info", {{"pages_processed", static_cast<int>(job.pages.size())}, {"doc_size_bytes", job.mistral.doc_size_bytes}}},
          {"document_annotation", nullptr}};
}

// progress: true. What the pages have done so far: every selected page with its state ("waiting",
// "running", "done") and tokens; sent when the stream starts and then at most every
// kProgressInterval (250 ms, ocr_handler.cc) while tokens come.
template <class Gen>
json progress_json(const OcrJob& job, const Gen& gen) {
  json pages = json::array();
  int done = 0;
  for (size_t i = 0; i < job.pages.size(); ++i) {
    const ChoiceResult& r = gen.results()[i];
    const char* state = r.finish_reason ? "done" : (job.pages[i].first_token_s >= 0 ? "running" : "waiting");
    done += r.finish_reason.has_value();
    pages.push_back({{"page", job.pages[i].page}, {"state", state}, {"completion_tokens", r.n_tokens}});
  }
  return {{"id", job.id},
          {"object", "ocr.progress"},
          {"created", job.created},
          {"model", job.model},
          {"format", job.format},
          {"page_count", job.page_count},
          {"pages_selected", static_cast<int>(job.pages.size())},
          {"pages_done", done},
          {"completion_tokens", gen.completion_tokens()},
          {"elapsed_s", seconds_since(job.submitted)},
          {"pages", std::move(pages)}};
}

template json page_json(const OcrJob&, const Generation&, int);
template json page_json(const OcrJob&, const OcrResults&, int);
template std::string document_text(const OcrJob&, const Generation&);
template std::string document_text(const OcrJob&, const OcrResults&);
template json summary_json(const OcrJob&, const Generation&, bool);
template json summary_json(const OcrJob&, const OcrResults&, bool);
template json mistral_json(OcrJob&, const Generation&);
template json mistral_json(OcrJob&, const OcrResults&);
template json progress_json(const OcrJob&, const Generation&);
template json progress_json(const OcrJob&, const OcrResults&);

}  // namespace locr::server
