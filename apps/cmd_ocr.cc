// `locr ocr INPUT...`: batch OCR of documents (PDFs, multi-page TIFFs, images) into Markdown files.
//
//   --model DIR   runs an Engine in this process (no HTTP); pages of every document are submitted
//                 by --concurrency worker threads and batch together in the engine.
//   --server URL  sends each page as a PNG data: URL to an OpenAI-compatible
//                 /v1/chat/completions (a `locr serve`, or vLLM serving LightOnOCR).
//
// Output: OUTDIR/<name>/page-0001.<ext> per page (written to a temp name, then renamed), the
// figures a -bbox model marks cropped beside it as OUTDIR/<name>/page-0001-img-N.png (unless
// --no-figures; apps/ocr_page_figures.h), OUTDIR/<name>.<ext> per complete document and
// OUTDIR/manifest.json with each page's figures and confidence, kept up to date as pages finish
// (apps/ocr_manifest.h). A rerun with the same options skips the pages the manifest records
// done, so an interrupted run resumes; under other options it redoes them. Exit code 0 only if
// every page succeeded.
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "apps/ocr_manifest.h"
#include "apps/serve_setup.h"
#include "core/heap.h"
#include "core/log.h"
#include "core/ordered_prefetch.h"
#include "io/document.h"
#include "io/file.h"
#include "io/page_range.h"
#include "runtime/engine.h"
#include "runtime/postprocess.h"
#include "runtime/speculative.h"
#include "runtime/text_layer_drafter.h"
#include "server/memory_plan.h"
#include "server/ocr_grounding.h"
#include "toolkit/http_client.h"
#include "toolkit/hub.h"
#include "toolkit/progress.h"
#include "toolkit/synth_image.h"

namespace locr::app {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// --mode grounding: the text after the page image (LightOnOCR-3's grounding mode), as
// runtime::RequestPath::ocr_messages(true) sends it.
const std::string kGroundingPrompt = "grounding";

// Runs one page image through the model, in-process or over HTTP. Thread-safe.
class Backend {
 public:
  virtual ~Backend() = default;
  // `draft_text`: the page's own text (a PDF page's text layer), "" for none: the in-process
  // backend drafts from it (speculative decoding), the HTTP one sends it as vllm_xargs.draft_text.
  virtual PageOut run(const io::Image& page, const std::string& draft_text) = 0;
  virtual std::string describe() const = 0;
};

double confidence_threshold(const Args& a) { return a.get_double("confidence-threshold", 0.5); }

class LocalBackend : public Backend {
 public:
  LocalBackend(const Args& a) : threshold_(confidence_threshold(a)) {
    model_ = load_any_model(a);  // either architecture (config.json)
    dir_ = model_path(a.get("model"));
    runtime::EngineOptions eo;
    const int model_max = model_->max_position_embeddings();
    eo.max_model_len = a.get_int("max-model-len", model_max);
    if (eo.max_model_len < 2 || eo.max_model_len > model_max)
      fail(ErrorKind::kInvalidArgument, "--max-model-len must be in [2, ", model_max, "]");
    eo.max_num_seqs = std::max(1, a.get_int("concurrency", 4));
    // The KV pool as `locr serve` sizes it (0.9 of RAM minus weights and activations, capped at
    // what the sequences can use), or --kv-cache-memory.
    const int64_t kv = a.has("kv-cache-memory") ? server::parse_size(a.get("kv-cache-memory"), "--kv-cache-memory") : -1;
    if (model_->backend() == "cuda") {
      eo.kv_cache_bytes = kv;  // -1: 0.9 of the GPU's memory, sized by the CUDA executor
    } else {
      const server::MemoryPlan plan = server::plan_memory(*model_, eo, dir_, 0.9, kv);
      eo.kv_cache_bytes = plan.kv_bytes;
      LOCR_INFO("ocr: ", plan.explain());
    }
    engine_ = std::make_unique<runtime::Engine>(*model_, eo);
    // Requests as `locr serve` and `locr generate` build them (runtime/request_path.h).
    path_ = std::make_unique<runtime::RequestPath>(cli_request_path(a, *model_, eo.max_model_len, 0));
    max_tokens_ = a.get_int("max-tokens", 0);
    grounding_ = a.get("mode", "ocr") == "grounding";
    spec_ = speculative_flag(a);
    text_drafts_ = a.get_flag("text-drafts", true);
    const model::ModelVariant& v = model_->variant();
    if (grounding_ && v.known() && !v.grounding)
      fail(ErrorKind::kInvalidArgument, "--mode grounding needs a LightOnOCR-3 model; ", a.get("model"), " is ",
           v.describe(), ", which was not trained for it (leave --mode out for plain OCR)");
  }
  ~LocalBackend() override { engine_->shutdown(false); }

  PageOut run(const io::Image& page, const std::string& draft_text) override {
    model::Prompt prompt = path_->prompt(path_->ocr_chat(grounding_), {page});
    const int64_t len = static_cast<int64_t>(prompt.ids.size());
    runtime::RequestInput in;
    in.request_id = "ocr-" + std::to_string(next_id_.fetch_add(1));
    in.decode = path_->decode(len, max_tokens_);  // kLimit when the page fills the context
    if (!in.decode.sampling.has_seed) {
      in.decode.sampling.seed = next_id_.load() * 7919;
      in.decode.sampling.has_seed = true;
    }
    in.decode.logprobs = 0;  // the sampled token's log-probability, for the page confidence
    in.prompt_ids = std::move(prompt.ids);
    in.images = std::move(prompt.images);
    // Speculative decoding: --speculative-config, or drafts from the page's text layer by itself.
    in.spec = spec_;
    if (!draft_text.empty() && text_drafts_) {
      if (!in.spec.enabled()) {
        in.spec.method = runtime::SpeculativeConfig::Method::kTextLayer;
        in.spec.num_speculative_tokens = 8;
      }
      if (in.spec.method == runtime::SpeculativeConfig::Method::kTextLayer)
        in.draft_corpus = runtime::text_layer_corpus(model_->tokenizer(), draft_text);
    }
    PageOut out;
    out.confidence.threshold = threshold_;
    out.prompt_tokens = len;
    runtime::TextOutput text = path_->output(in.decode);
    auto stream = engine_->submit(std::move(in));
    for (;;) {
      auto e = stream->next(std::chrono::milliseconds(1000));
      if (!e) continue;
      if (e->token >= 0) {
        ++out.completion_tokens;
        out.confidence.add(e->logprob);
      }
      out.text += text.push(e->token, e->finished);
      if (e->finished) {
        if (e->finish_reason == runtime::FinishReason::kError || e->finish_reason == runtime::FinishReason::kAbort)
          fail(ErrorKind::kIo, "the engine ended the page with '", runtime::finish_reason_name(e->finish_reason), "'",
               e->error.empty() ? "" : ": ", e->error);
        out.finish_reason = runtime::finish_reason_name(e->finish_reason);
        const runtime::RequestTimes t = stream->times();
        out.drafted = t.drafted_tokens;
        out.accepted = t.accepted_tokens;
        return out;
      }
    }
  }
  std::string describe() const override { return "model:" + dir_; }

 private:
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<runtime::Engine> engine_;
  std::unique_ptr<runtime::RequestPath> path_;
  int max_tokens_ = 0;
  bool grounding_ = false;
  std::string dir_;
  double threshold_ = 0.5;
  std::atomic<uint64_t> next_id_{1};
  runtime::SpeculativeConfig spec_;
  bool text_drafts_ = true;
};

class RemoteBackend : public Backend {
 public:
  RemoteBackend(const Args& a) : url_(a.get("server")), threshold_(confidence_threshold(a)) {
    const toolkit::HttpUrl u = toolkit::parse_url(url_);
    origin_ = u.origin();
    std::string path = u.path;
    const size_t q = path.find('?');
    if (q != std::string::npos) path.resize(q);
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (path.size() >= 17 && path.compare(path.size() - 17, 17, "/chat/completions") == 0) {
      path_ = path;
    } else {
      if (path.size() < 3 || path.compare(path.size() - 3, 3, "/v1") != 0) path += "/v1";
      path_ = path + "/chat/completions";
    }
    if (a.has("api-key")) headers_.emplace_back("Authorization", "Bearer " + a.get("api-key"));
    timeout_ = a.get_double("timeout", 600);
    model_name_ = a.get("model-name");
    if (model_name_.empty()) {
      // The server's first model (vLLM needs the exact served name).
      toolkit::HttpClient cli(origin_, 30);
      const auto r = cli.get(path_.substr(0, path_.size() - 17) + "/models", headers_);
      try {
        if (r.ok()) model_name_ = json::parse(r.body).at("data").at(0).at("id").get<std::string>();
      } catch (const std::exception&) {
      }
      if (model_name_.empty()) model_name_ = "lightonocr-2-1b";
    }
    if (a.has("max-tokens")) sampling_["max_tokens"] = a.get_int("max-tokens", 0);
    if (a.has("temperature")) sampling_["temperature"] = a.get_double("temperature", 0);
    if (a.has("top-p")) sampling_["top_p"] = a.get_double("top-p", 1);
    if (a.has("top-k")) sampling_["top_k"] = a.get_int("top-k", 0);
    if (a.has("seed")) sampling_["seed"] = std::stoll(a.get("seed"));
    if (a.has("repetition-penalty")) sampling_["repetition_penalty"] = a.get_double("repetition-penalty", 0);
    if (a.has("presence-penalty")) sampling_["presence_penalty"] = a.get_double("presence-penalty", 0);
    if (a.has("frequency-penalty")) sampling_["frequency_penalty"] = a.get_double("frequency-penalty", 0);
    grounding_ = a.get("mode", "ocr") == "grounding";
    text_drafts_ = a.get_flag("text-drafts", true);
    // The sampled tokens' log-probabilities, for the page confidence (no alternatives: cheap).
    sampling_["logprobs"] = true;
    sampling_["top_logprobs"] = 0;
  }

  PageOut run(const io::Image& page, const std::string& draft_text) override {
    io::Image img = page;
    if (img.has_alpha()) io::flatten_alpha_on_white(img);
    img.alpha.clear();
    json body = sampling_;
    body["model"] = model_name_;
    json content = json::array({{{"type", "image_url"}, {"image_url", {{"url", toolkit::png_data_url(toolkit::encode_png(img))}}}}});
    if (grounding_) content.push_back({{"type", "text"}, {"text", kGroundingPrompt}});
    body["messages"] = json::array({{{"role", "user"}, {"content", std::move(content)}}});
    body["chat_template_kwargs"] = runtime::RequestPath::ocr_template_kwargs();
    // The page's text layer, for a locr server to draft from (speculative decoding); vLLM takes
    // string values in vllm_xargs and ignores this one.
    if (text_drafts_ && !draft_text.empty()) body["vllm_xargs"] = {{"draft_text", draft_text}};
    toolkit::HttpClient cli(origin_, timeout_);
    const auto r = cli.post(path_, body.dump(), "application/json", headers_);
    if (!r.ok()) {
      std::string msg = r.status == 0 ? r.error : "HTTP " + std::to_string(r.status);
      if (r.status != 0) msg += ": " + r.body.substr(0, 500);
      fail(ErrorKind::kIo, origin_, path_, ": ", msg);
    }
    PageOut out;
    try {
      const json j = json::parse(r.body);
      const json& c = j.at("choices").at(0);
      const json& content = c.at("message").at("content");
      out.text = content.is_string() ? content.get<std::string>() : "";
      out.finish_reason = c.value("finish_reason", json("stop")).is_string() ? c.value("finish_reason", "stop") : "stop";
      if (j.contains("usage") && j["usage"].is_object()) {
        out.prompt_tokens = j["usage"].value("prompt_tokens", 0);
        out.completion_tokens = j["usage"].value("completion_tokens", 0);
      }
      // A server that gives no log-probabilities leaves the confidence unknown (null).
      out.confidence.threshold = threshold_;
      const json* lp = c.contains("logprobs") && c["logprobs"].is_object() ? &c["logprobs"] : nullptr;
      if (lp && lp->contains("content") && (*lp)["content"].is_array())
        for (const json& t : (*lp)["content"])
          if (t.is_object() && t.contains("logprob") && t["logprob"].is_number()) out.confidence.add(t["logprob"].get<double>());
    } catch (const std::exception& e) {
      fail(ErrorKind::kIo, "unexpected response from ", origin_, path_, ": ", e.what());
    }
    return out;
  }
  std::string describe() const override { return "server:" + url_; }

 private:
  std::string url_, origin_, path_, model_name_;
  toolkit::Headers headers_;
  double timeout_ = 600;
  bool grounding_ = false;
  bool text_drafts_ = true;
  double threshold_ = 0.5;
  json sampling_ = json::object();
};

bool is_document_file(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* e : {".pdf", ".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff"})
    if (ext == e) return true;
  return false;
}

// Files, globs and directories (their document files, not recursive), in order, without repeats.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  auto add = [&](const std::string& f) {
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  };
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(in))
        if (e.is_regular_file() && is_document_file(e.path())) found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
      for (const auto& f : found) add(f);
    } else if (fs::exists(in)) {
      add(in);
    } else if (in.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      if (::glob(in.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i)
          if (fs::is_regular_file(g.gl_pathv[i])) add(g.gl_pathv[i]);
      ::globfree(&g);
    } else {
      fail(ErrorKind::kNotFound, "input '", in, "' does not exist");
    }
  }
  return files;
}

// What --mode grounding changes in a page's output: its text is the Markdown of the blocks.
struct GroundingOutput {
  bool on = false;
  std::set<std::string> drop;  // --drop-headers-footers
};

// `raw`: the model's text with its figure markers rewritten (or as it was, --no-figures),
// post-processed here with `post`; in grounding mode (post null) the Markdown of its blocks, whose
// texts are post-processed already (server::grounding_blocks).
std::string page_file_text(const PageJob& p, const std::string& raw, const std::string& format,
                           const runtime::PostprocessOptions* post) {
  std::string text = post ? runtime::postprocess(raw, *post) : raw;
  if (format != "json") {
    if (text.empty() || text.back() != '\n') text += '\n';
    return text;
  }
  json j = {{"page", p.page},
            {"text", text},
            {"finish_reason", p.out.finish_reason},
            {"prompt_tokens", p.out.prompt_tokens},
            {"completion_tokens", p.out.completion_tokens},
            {"seconds", p.seconds},
            {"figures", figures_json(p.figures)},
            {"confidence", p.out.confidence.to_json()}};
  return j.dump(2) + "\n";
}

// page-0001.md -> page-0001.blocks.json (--mode grounding).
std::string blocks_file(const std::string& page_file) {
  return (fs::path(page_file).parent_path() / (fs::path(page_file).stem().string() + ".blocks.json")).string();
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// The options that change what a page file holds (not --concurrency, --retries, --threads,
// --timeout, nor secrets such as --api-key or --password). Values as given on the command line.
json run_options(const Args& a, const std::string& format, const runtime::PostprocessOptions& post, bool figures,
                 const GroundingOutput& g) {
  json o = {{"backend", a.has("model") ? "model:" + a.get("model") : "server:" + a.get("server")},
            {"format", format},
            {"fix_dollars", post.fix_dollars},
            {"tables_to_markdown", post.tables_to_markdown},
            {"figures", figures},
            {"confidence_threshold", confidence_threshold(a)},
            {"mode", g.on ? "grounding" : "ocr"},
            {"drop_headers_footers", !g.drop.empty()}};
  for (const char* k : {"max-tokens", "temperature", "top-p", "top-k", "seed", "dpi", "model-name", "max-model-len",
                        "dtype", "backend", "device", "chat-template", "image-align", "debug-forced-output"}) {
    std::string key = k;
    for (char& c : key) c = c == '-' ? '_' : c;
    o[key] = a.has(k) ? json(a.get(k)) : json(nullptr);
  }
  // Penalties change a page's output too; recorded only when given, so earlier manifests still match.
  for (const char* k : {"repetition-penalty", "presence-penalty", "frequency-penalty"})
    if (a.has(k)) {
      std::string key = k;
      for (char& c : key) c = c == '-' ? '_' : c;
      o[key] = a.get(k);
    }
  return o;
}

}  // namespace

int cmd_ocr(int argc, char** argv) {
  Args a("ocr INPUT...",
         "OCR documents (PDFs, multi-page TIFFs, images; files, globs or directories) into Markdown:\n"
         "OUTDIR/<name>/page-0001.md per page (its figures beside it as page-0001-img-N.png), OUTDIR/<name>.md\n"
         "per document, OUTDIR/manifest.json (per page: figures, confidence).\n"
         "A rerun with the same options skips the pages done before (resume); other options redo them.\n"
         "Exit code 0 only if every page succeeded.");
  a.option("output", "output directory (default ocr-out); also -o", "OUTDIR");
  a.option("pages", "page selection for every document, e.g. 1,3-5,10- (default all)", "RANGE");
  add_model_options(a);
  a.option("max-model-len", "--model: prompt + output tokens per page (default: the model's maximum)", "N");
  a.option("kv-cache-memory", "--model: KV cache size, e.g. 4GiB (default: as locr serve, 0.9 of RAM minus the weights)",
           "BYTES");
  a.option("server", "OpenAI-compatible server (locr serve, vLLM), e.g. http://localhost:8000", "URL");
  a.option("model-name", "--server: model name to request (default: the server's first model)", "NAME");
  a.option("api-key", "--server: bearer token", "KEY");
  a.option("timeout", "--server: per-page request timeout in seconds (default 600)", "S");
  a.option("concurrency", "pages in flight at once (default 4)", "N");
  a.option("max-tokens", "most tokens generated per page", "N");
  add_sampling_options(a);
  a.option("format", "md (default), txt (plain text) or json (per-page JSON)", "FMT");
  a.option("retries", "retries of a failed page (default 2)", "N");
  a.option("dpi", "PDF rendering resolution (default: 1540 px on the longest edge)", "DPI");
  a.option("password", "PDF password", "PW");
  a.flag("fix-dollars", "repair escaped inline-math dollars (default on; --no-fix-dollars)");
  a.flag("tables-to-markdown", "convert representable HTML tables to pipe tables");
  a.option("speculative-config", "--model: speculative decoding, as `locr serve --speculative-config` (default: "
           "drafts from each PDF page's own text layer, 8 per step, where it has one)", "JSON");
  a.flag("text-drafts", "draft from each PDF page's text layer (default on; --no-text-drafts: off; --server: sends "
                        "it as vllm_xargs.draft_text); the output is the same either way (docs/api.md, speculative "
                        "decoding)");
  a.option("mode", "ocr (default: the page image alone) or grounding (LightOnOCR-3: the image then `grounding`; "
           "the page file is the Markdown of the layout blocks, page-0001.blocks.json beside it holds the blocks)", "MODE");
  a.flag("drop-headers-footers", "--mode grounding: leave header, footer, page number and footnote blocks out");
  a.flag("progress", "progress bar on stderr (default: when stderr is a terminal)");
  a.flag("figures", "crop the figures a -bbox model marks (![image](image_1.png)x1,y1,x2,y2) into "
                    "page-0001-img-N.png files beside the page and point the text at them (default on; "
                    "--no-figures keeps the text as the model wrote it)");
  a.option("confidence-threshold", "page confidence: count the output tokens whose probability is under P "
                                   "(default 0.5, as /v1/ocr)", "P");
  add_forced_output_option(a);
  // INPUT... anywhere among the options (Args takes one value per positional), and -o OUTDIR as
  // the short form of --output.
  static const char* const kFlags[] = {"fix-dollars", "no-fix-dollars", "tables-to-markdown", "no-tables-to-markdown",
                                       "progress",    "no-progress",    "figures",            "no-figures",
                                       "drop-headers-footers", "help"};
  std::vector<std::string> storage{argv[0]}, input_args;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "-o") {
      storage.push_back("--output");
      if (i + 1 < argc) storage.push_back(argv[++i]);
    } else if (s.rfind("--", 0) == 0 && s.size() > 2) {
      storage.push_back(s);
      const std::string name = s.substr(2);
      const bool flag = std::find(std::begin(kFlags), std::end(kFlags), name) != std::end(kFlags);
      if (!flag && name.find('=') == std::string::npos && i + 1 < argc) storage.push_back(argv[++i]);
    } else if (s == "-h") {
      storage.push_back(s);
    } else {
      input_args.push_back(s);
    }
  }
  std::vector<char*> av;
  for (auto& s : storage) av.push_back(s.data());
  if (!a.parse(static_cast<int>(av.size()), av.data())) return 0;
  pin_mmap_threshold();  // as locr serve: freed page images go back to the system (core/heap.h)
  if (input_args.empty()) fail(ErrorKind::kInvalidArgument, "give at least one INPUT (a document, glob or directory)");

  if (a.has("model") == a.has("server")) fail(ErrorKind::kInvalidArgument, "give exactly one of --model DIR and --server URL");
  const std::string format = a.get("format", "md");
  if (format != "md" && format != "txt" && format != "json")
    fail(ErrorKind::kInvalidArgument, "--format must be md, txt or json, got '", format, "'");
  const int concurrency = a.get_int("concurrency", 4);
  const int retries = a.get_int("retries", 2);
  if (concurrency < 1 || retries < 0) fail(ErrorKind::kInvalidArgument, "--concurrency must be >= 1 and --retries >= 0");
  runtime::PostprocessOptions post;
  post.fix_dollars = a.get_flag("fix-dollars", true);
  post.tables_to_markdown = a.get_flag("tables-to-markdown", false);
  post.plain_text = format == "txt";
  const bool figures = a.get_flag("figures", true);
  const double threshold = confidence_threshold(a);
  if (!(threshold > 0 && threshold < 1))
    fail(ErrorKind::kInvalidArgument, "--confidence-threshold must be a probability in (0, 1), got ", a.get("confidence-threshold"));
  if (a.has("debug-forced-output") && !a.has("model"))
    fail(ErrorKind::kInvalidArgument, "--debug-forced-output works with --model only (give it to `locr serve` for --server)");
  GroundingOutput grounding;
  const std::string mode = a.get("mode", "ocr");
  if (mode != "ocr" && mode != "grounding") fail(ErrorKind::kInvalidArgument, "--mode must be ocr or grounding, got '", mode, "'");
  grounding.on = mode == "grounding";
  if (a.get_flag("drop-headers-footers", false)) {
    if (!grounding.on) fail(ErrorKind::kInvalidArgument, "--drop-headers-footers needs --mode grounding");
    grounding.drop = server::header_footer_labels();
  }
  const io::PageRange range = a.has("pages") ? io::PageRange::parse(a.get("pages")) : io::PageRange::all();
  io::DocumentOptions dopts;
  if (a.has("dpi")) dopts.pdf.dpi = a.get_double("dpi", 0);
  dopts.pdf.password = a.get("password");

  const std::string outdir = a.get("output", "ocr-out");
  const std::vector<std::string> inputs = expand_inputs(input_args);
  if (inputs.empty()) fail(ErrorKind::kInvalidArgument, "no documents found in the inputs");
  fs::create_directories(outdir);
  const std::string manifest_path = (fs::path(outdir) / "manifest.json").string();
  ManifestHead head;
  head.options = run_options(a, format, post, figures, grounding);
  head.backend = a.has("model") ? "model:" + a.get("model") : "server:" + a.get("server");
  head.format = format;
  const PreviousRun prev = read_previous_run(manifest_path, head.options);
  if (!prev.why_not.empty())
    LOCR_WARN("ocr: not resuming from ", manifest_path, ": ", prev.why_not, "; every page is done again");

  // Open every document and list its pages; pages the earlier run recorded done are kept (resume).
  std::vector<DocJob> docs(inputs.size());
  std::vector<std::pair<int, int>> work;  // (doc, page index)
  int total = 0, skipped = 0;
  for (size_t d = 0; d < inputs.size(); ++d) {
    DocJob& dj = docs[d];
    dj.source = inputs[d];
    dj.name = fs::path(inputs[d]).stem().string();
    for (size_t e = 0; e < d; ++e)
      if (docs[e].name == dj.name) dj.name = fs::path(inputs[d]).filename().string();
    try {
      dj.doc = std::make_unique<io::Document>(io::load_document(inputs[d], dopts));
      dj.page_count = dj.doc->page_count();
      dj.format = dj.doc->format_name();
      const std::vector<int> sel = range.resolve(dj.page_count);
      fs::create_directories(fs::path(outdir) / dj.name);
      for (const auto& e : fs::directory_iterator(fs::path(outdir) / dj.name))
        if (e.path().extension() == ".tmp") fs::remove(e.path());  // left by an interrupted run
      for (int pg : sel) {
        PageJob pj;
        pj.page = pg;
        char buf[32];
        std::snprintf(buf, sizeof buf, "page-%04d.%s", pg, format.c_str());
        pj.file = (fs::path(dj.name) / buf).string();
        if (restore_page(prev, dj.source, outdir, pj)) {
          ++skipped;
        } else {
          work.emplace_back(static_cast<int>(d), static_cast<int>(dj.pages.size()));
        }
        dj.pages.push_back(std::move(pj));
        ++total;
      }
    } catch (const locr::Error& e) {
      dj.error = e.what();
      LOCR_WARN("ocr: ", inputs[d], ": ", e.what());
    }
  }

  head.pages_total = total;
  head.pages_skipped = skipped;
  head.pages_done = skipped;  // pages an earlier run did are done from the start
  // The manifest exists from the start (all pages pending), so even a run killed while the model
  // loads leaves one.
  io::write_file_atomic(manifest_path, manifest_json(docs, head).dump(2) + "\n");

  std::unique_ptr<Backend> backend;
  if (!work.empty()) {
    if (a.has("model")) backend = std::make_unique<LocalBackend>(a);
    else backend = std::make_unique<RemoteBackend>(a);
  }

  const auto t0 = Clock::now();
  std::mutex mu;
  int done = 0, failed = 0;
  // Pages are rendered (PDF pages) or decoded (image files) ahead, in order, on threads of their
  // own: a worker whose page finishes takes the next one ready while the engine keeps running. A
  // few pages ahead, no more (each is a full-resolution RGB image).
  const int render_threads = std::min(concurrency, 2);
  OrderedPrefetch<io::Image> rendered(work.size(), static_cast<size_t>(std::min(concurrency, 4)), render_threads,
                                      [&](size_t k) {
                                        const DocJob& dj = docs[work[k].first];
                                        return dj.doc->render_page(dj.pages[work[k].second].page - 1);
                                      });
  const bool show = a.get_flag("progress", ::isatty(2) != 0);
  toolkit::ProgressBar bar("ocr", show, /*bytes=*/false);
  auto redraw = [&] {  // under mu
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const double rate = secs > 0 ? done / secs : 0;
    const int left = static_cast<int>(work.size()) - done;
    char extra[96];
    std::snprintf(extra, sizeof extra, "%.2f pages/s  ETA %s%s", rate,
                  rate > 0 ? std::to_string(static_cast<int>(left / rate + 0.5)).c_str() : "?", rate > 0 ? "s" : "");
    bar.update(static_cast<uint64_t>(done), work.size(), extra);
  };
  auto worker = [&] {
    OrderedPrefetch<io::Image>::Item page;
    while (rendered.next(&page)) {
      const size_t k = page.index;
      DocJob& dj = docs[work[k].first];
      // Worked on as a copy; published under `mu`, where the manifest writer reads the pages.
      PageJob pj = dj.pages[work[k].second];
      const auto ts = Clock::now();
      for (;;) {
        ++pj.attempts;
        try {
          // The page rendered ahead; rendered again for a retry after a failed rendering.
          if (page.error) std::rethrow_exception(std::exchange(page.error, nullptr));
          if (page.value.rgb.empty()) page.value = dj.doc->render_page(pj.page - 1);
          const io::Image& img = page.value;
          pj.out = backend->run(img, dj.doc->page_draft_text(pj.page - 1));
          pj.seconds = std::chrono::duration<double>(Clock::now() - ts).count();
          std::string raw = pj.out.text;
          // Grounding: the page is the Markdown of its blocks (their texts post-processed, as
          // /v1/ocr makes them), image blocks written as figures.
          std::vector<server::GroundingBlock> blocks;
          if (grounding.on) {
            blocks = server::grounding_blocks(raw, post);
            raw = server::grounding_markdown(blocks, grounding.drop, figures);
          }
          if (figures) raw = write_page_figures(raw, img, outdir, pj.file, pj.figures);
          else remove_page_figures(outdir, pj.file);
          io::write_file_atomic((fs::path(outdir) / pj.file).string(),
                                page_file_text(pj, raw, format, grounding.on ? nullptr : &post));
          if (grounding.on) {  // the blocks, with boxes in pixels of the rendered page
            const json j = {{"page", pj.page},
                            {"width", img.width},
                            {"height", img.height},
                            {"blocks", server::grounding_json(blocks, img.width, img.height, grounding.drop)}};
            io::write_file_atomic((fs::path(outdir) / blocks_file(pj.file)).string(), j.dump(2) + "\n");
          }
          pj.status = "ok";
          pj.error.clear();
          break;
        } catch (const std::exception& e) {
          pj.error = e.what();
          if (pj.attempts > retries) {
            pj.status = "failed";
            // A file there is from another run (other options, or unrecorded): not this page's.
            std::error_code ec;
            fs::remove(fs::path(outdir) / pj.file, ec);
            remove_page_figures(outdir, pj.file);
            pj.figures.clear();
            break;
          }
          LOCR_WARN("ocr: ", dj.source, " page ", pj.page, " failed (attempt ", pj.attempts, "): ", e.what(), "; retrying");
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (pj.status == "failed") {
        ++failed;
        LOCR_WARN("ocr: ", dj.source, " page ", pj.page, " failed: ", pj.error);
      }
      dj.pages[work[k].second] = std::move(pj);
      head.pages_done = skipped + done - failed;  // every page done, those an earlier run did included
      head.pages_failed = failed;
      head.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
      try {
        io::write_file_atomic(manifest_path, manifest_json(docs, head).dump(2) + "\n");
      } catch (const std::exception& e) {
        LOCR_WARN("ocr: cannot update ", manifest_path, ": ", e.what());
      }
      redraw();
    }
  };
  {
    std::vector<std::thread> threads;
    const int n = std::min<int>(concurrency, static_cast<int>(work.size()));
    for (int i = 0; i < n; ++i) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  bar.finish();
  backend.reset();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();

  // Documents whose pages are all there (this run or an earlier one) get their joined file.
  int doc_failures = 0;
  for (DocJob& dj : docs) {
    bool complete = dj.error.empty();
    doc_failures += !dj.error.empty();
    std::string joined;
    json jpages = json::array();
    for (const PageJob& pj : dj.pages) {
      if (pj.status == "failed") complete = false;
      if (!complete) continue;
      const std::string text = io::read_file((fs::path(outdir) / pj.file).string());
      if (format == "json") {
        jpages.push_back(json::parse(text));
      } else {
        if (!joined.empty()) joined += "\n\n";
        joined += figure_links_from_outdir(trim_end(text), pj.figures);  // OUTDIR/<name>.md links into <name>/
      }
    }
    if (complete) {
      dj.output = dj.name + "." + format;
      const std::string content =
          format == "json" ? json({{"source", dj.source}, {"pages", jpages}}).dump(2) + "\n" : joined + "\n";
      io::write_file_atomic((fs::path(outdir) / dj.output).string(), content);
    } else if (dj.error.empty()) {
      // An incomplete document has no document file, not one left by an earlier run.
      std::error_code ec;
      fs::remove(fs::path(outdir) / (dj.name + "." + format), ec);
    }
  }
  const int ok = done - failed;
  head.pages_done = skipped + ok;
  head.pages_failed = failed;
  head.elapsed_s = elapsed;
  head.complete = true;
  io::write_file_atomic(manifest_path, manifest_json(docs, head).dump(2) + "\n");
  LOCR_INFO("ocr: ", skipped + ok, " page(s) done (", ok, " by this run, ", skipped, " skipped: done by an earlier run), ",
            failed, " failed, ", doc_failures, " document(s) not opened; ", elapsed, " s; manifest ",
            (fs::path(outdir) / "manifest.json").string());
  return failed == 0 && doc_failures == 0 ? 0 : 1;
}

}  // namespace locr::app
