// `locr draft-sim`: the drafter alone on a document, no model run. For each page of a PDF, the
// drafter the engine uses (runtime/text_layer_drafter.h on the page's normalised text layer, or
// runtime/ngram_drafter.h) is run against a given target text as if the model had written it
// (runtime/draft_sim.h): drafted, accepted, target tokens per step and steps with nothing accepted,
// per page and in total. Only the model's tokenizer is loaded (tokenizer.json of the directory, or
// the tokenizer of a .gguf file).
//
// Targets: --target FILE.md is split at form feeds ('\f') into one part per selected page; a file
// without form feeds against several pages is a whole-document target (the pages' corpora joined
// with "\n\n", one result covering them). --target DIR takes DIR/page-NNNN.md for the selected pages
// that have one (NNNN the 1-based page number, as `locr ocr` writes them).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/error.h"
#include "io/file.h"
#include "io/gguf.h"
#include "io/page_range.h"
#include "io/pdf.h"
#include "io/pdf_text.h"
#include "tokenizer/tokenizer.h"
#include "runtime/draft_sim.h"
#include "runtime/ngram_drafter.h"
#include "runtime/text_layer_drafter.h"

namespace locr::app {
namespace {

namespace fs = std::filesystem;

struct PageJob {
  std::string label;           // "3" or "1-4"
  std::vector<int> pages;      // 1-based
  std::string target;          // Markdown
};

std::vector<std::string> split_form_feeds(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t ff = text.find('\f', start);
    parts.push_back(text.substr(start, ff == std::string::npos ? std::string::npos : ff - start));
    if (ff == std::string::npos) break;
    start = ff + 1;
  }
  // A trailing form feed ends the last page rather than starting an empty one.
  if (parts.size() > 1 && parts.back().find_first_not_of(" \t\r\n") == std::string::npos) parts.pop_back();
  return parts;
}

std::string range_label(const std::vector<int>& pages) {
  if (pages.size() == 1) return std::to_string(pages[0]);
  bool contiguous = true;
  for (size_t i = 1; i < pages.size(); ++i) contiguous &= pages[i] == pages[i - 1] + 1;
  if (contiguous) return std::to_string(pages.front()) + "-" + std::to_string(pages.back());
  std::string s;
  for (int p : pages) s += (s.empty() ? "" : ",") + std::to_string(p);
  return s;
}

std::unique_ptr<tokenizer::Tokenizer> load_tokenizer(const std::string& spec) {
  if (is_gguf_path(spec)) return tokenizer::Tokenizer::from_gguf(*io::GgufFile::open(spec));
  const std::string dir = model_path(spec);
  return tokenizer::Tokenizer::from_file(io::join_path(dir, "tokenizer.json"));
}

nlohmann::ordered_json stats_json(const runtime::DraftSimStats& s, double verify_cost) {
  nlohmann::ordered_json j;
  j["steps"] = s.steps;
  j["target_tokens"] = s.target_tokens;
  j["drafted"] = s.drafted;
  j["accepted"] = s.accepted;
  j["zero_accept_steps"] = s.zero_accept_steps;
  j["draft_steps"] = s.draft_steps;
  j["acceptance_rate"] = s.acceptance_rate();
  j["tokens_per_step"] = s.tokens_per_step();
  if (verify_cost >= 0) j["speedup_at_verify_cost"] = s.speedup(verify_cost);
  return j;
}

void print_row(const std::string& label, int64_t corpus, const runtime::DraftSimStats& s, double verify_cost) {
  std::printf("%-10s %8lld %8lld %7lld %8lld %8lld %6.1f%% %9.2f %7lld", label.c_str(), static_cast<long long>(corpus),
              static_cast<long long>(s.target_tokens), static_cast<long long>(s.steps),
              static_cast<long long>(s.drafted), static_cast<long long>(s.accepted), 100.0 * s.acceptance_rate(),
              s.tokens_per_step(), static_cast<long long>(s.zero_accept_steps));
  if (verify_cost >= 0) std::printf(" %8.2fx", s.speedup(verify_cost));
  std::printf("\n");
}

}  // namespace

int cmd_draft_sim(int argc, char** argv) {
  Args a("draft-sim",
         "Simulate speculative decoding with a model-free drafter against a given target text, as if the model had "
         "written it: per page and in total, draft tokens proposed and accepted, target tokens per decode step and "
         "steps whose draft had nothing accepted. No model is run; only the model's tokenizer is loaded. "
         "--target FILE.md is split at form feeds into one part per selected page (a file without form feeds against "
         "several pages is one whole-document target); --target DIR reads DIR/page-NNNN.md per page, as `locr ocr` "
         "writes.");
  a.option("model", "model directory (its tokenizer.json), ORG/NAME, or a .gguf file", "DIR");
  a.option("pdf", "the document; its pages' text layers are the text-layer drafter's corpus", "FILE.pdf");
  a.option("target", "the text the model is taken to write: a Markdown file or a folder of page-NNNN.md", "PATH");
  a.option("pages", "pages of the PDF (default all), e.g. 1,3-5", "RANGE");
  a.option("k", "num_speculative_tokens: most draft tokens per step (default 8)", "K");
  a.option("method", "text-layer (default) or ngram (vLLM's, over the output; no corpus)", "NAME");
  a.option("prompt-lookup-max", "longest suffix looked up (default: text-layer 8, ngram 5)", "N");
  a.option("prompt-lookup-min", "shortest match that counts (default: text-layer 2, ngram 5)", "M");
  a.flag("raw-text", "text-layer: Poppler's reading-order text as it is, not normalised (for comparison)");
  a.flag("no-output-lookup", "text-layer: look up the corpus only, not the output so far");
  a.flag("no-backoff", "draft every step at full length, however often drafts miss");
  a.option("verify-cost", "also report the decode speedup if each verified draft token costs C steps (e.g. 0.05)",
           "C");
  a.option("corpus-out", "write each page's corpus text (what the drafter looks up) to DIR/page-NNNN.txt", "DIR");
  a.option("json", "write the results as JSON: {\"pages\": [...], \"total\": {...}}", "OUT");
  if (!a.parse(argc, argv)) return 0;
  if (!a.has("model")) fail(ErrorKind::kInvalidArgument, "draft-sim: --model is required");
  if (!a.has("target")) fail(ErrorKind::kInvalidArgument, "draft-sim: --target is required");
  const std::string method = a.get("method", "text-layer");
  if (method != "text-layer" && method != "ngram")
    fail(ErrorKind::kInvalidArgument, "draft-sim: --method must be text-layer or ngram, not '", method, "'");
  const bool text_layer = method == "text-layer";
  if (text_layer && !a.has("pdf")) fail(ErrorKind::kInvalidArgument, "draft-sim: --pdf is required for text-layer");
  const int k = a.get_int("k", 8);
  if (k < 1) fail(ErrorKind::kInvalidArgument, "draft-sim: --k must be at least 1");
  const int max_n = a.get_int("prompt-lookup-max", text_layer ? 8 : 5);
  const int min_n = a.get_int("prompt-lookup-min", a.has("prompt-lookup-max") && !text_layer ? max_n : (text_layer ? 2 : 5));
  const double verify_cost = a.has("verify-cost") ? a.get_double("verify-cost", 0) : -1;
  runtime::BackoffOptions backoff;
  backoff.enabled = !a.get_flag("no-backoff");

  const auto tokenizer = load_tokenizer(a.get("model"));

  // Pages: from the PDF, or (ngram without a PDF) one per target part.
  std::unique_ptr<io::PdfDocument> doc;
  std::vector<int> pages;
  if (a.has("pdf")) {
    doc = std::make_unique<io::PdfDocument>(io::PdfDocument::load(a.get("pdf")));
    pages = (a.has("pages") ? io::PageRange::parse(a.get("pages")) : io::PageRange::all()).resolve(doc->page_count());
  }

  const std::string target = a.get("target");
  std::vector<PageJob> jobs;
  if (io::is_directory(target)) {
    if (!doc) fail(ErrorKind::kInvalidArgument, "draft-sim: a --target folder needs --pdf");
    for (int p : pages) {
      char name[32];
      std::snprintf(name, sizeof name, "page-%04d.md", p);
      const std::string path = io::join_path(target, name);
      if (io::file_exists(path)) jobs.push_back({std::to_string(p), {p}, io::read_file(path)});
    }
    if (jobs.empty()) fail(ErrorKind::kNotFound, "draft-sim: no page-NNNN.md in ", target, " for the selected pages");
  } else {
    const std::vector<std::string> parts = split_form_feeds(io::read_file(target));
    if (!doc) {
      for (size_t i = 0; i < parts.size(); ++i) jobs.push_back({std::to_string(i + 1), {}, parts[i]});
    } else if (parts.size() == pages.size()) {
      for (size_t i = 0; i < parts.size(); ++i) jobs.push_back({std::to_string(pages[i]), {pages[i]}, parts[i]});
    } else if (parts.size() == 1) {
      jobs.push_back({range_label(pages), pages, parts[0]});
    } else {
      fail(ErrorKind::kInvalidArgument, "draft-sim: ", target, " has ", parts.size(),
           " form-feed separated parts but ", pages.size(), " pages are selected");
    }
  }

  if (a.has("corpus-out")) fs::create_directories(a.get("corpus-out"));
  std::printf("%-10s %8s %8s %7s %8s %8s %7s %9s %7s%s\n", "page", "corpus", "target", "steps", "drafted", "accepted",
              "rate", "tok/step", "0-acc", verify_cost >= 0 ? "  speedup" : "");
  runtime::DraftSimStats total;
  int64_t total_corpus = 0;
  nlohmann::ordered_json pages_json = nlohmann::ordered_json::array();
  for (const PageJob& job : jobs) {
    std::string corpus_text;
    for (int p : job.pages) {
      if (!corpus_text.empty()) corpus_text += "\n\n";
      corpus_text += a.get_flag("raw-text") ? doc->page_text(p - 1, io::PdfTextLayout::kReadingOrder)
                                            : io::pdf_page_draft_text(*doc, p - 1);
    }
    if (a.has("corpus-out") && !job.pages.empty()) {
      char name[32];
      std::snprintf(name, sizeof name, "page-%04d.txt", job.pages.front());
      io::write_file_atomic(io::join_path(a.get("corpus-out"), name), corpus_text);
    }
    const std::vector<int32_t> target_ids = tokenizer->encode(job.target);
    std::unique_ptr<runtime::Drafter> drafter;
    std::vector<int32_t> corpus;
    if (text_layer) {
      corpus = runtime::text_layer_corpus(*tokenizer, corpus_text);
      runtime::TextLayerOptions o;
      o.num_speculative_tokens = k;
      o.max_n = max_n;
      o.min_n = min_n;
      o.lookup_output = !a.get_flag("no-output-lookup");
      o.backoff = backoff;
      drafter = std::make_unique<runtime::TextLayerDrafter>(corpus, o);
    } else {
      runtime::NgramOptions o;
      o.num_speculative_tokens = k;
      o.prompt_lookup_max = max_n;
      o.prompt_lookup_min = min_n;
      o.backoff = backoff;
      drafter = std::make_unique<runtime::NgramDrafter>(std::vector<int32_t>{}, o);
    }
    const runtime::DraftSimStats s = runtime::simulate_drafting(*drafter, target_ids);
    print_row(job.label, static_cast<int64_t>(corpus.size()), s, verify_cost);
    total.add(s);
    total_corpus += static_cast<int64_t>(corpus.size());
    nlohmann::ordered_json pj;
    pj["page"] = job.label;
    pj["corpus_tokens"] = corpus.size();
    pj.update(stats_json(s, verify_cost));
    pages_json.push_back(pj);
  }
  print_row("total", total_corpus, total, verify_cost);

  if (a.has("json")) {
    nlohmann::ordered_json out;
    out["method"] = method;
    out["k"] = k;
    out["prompt_lookup_max"] = max_n;
    out["prompt_lookup_min"] = min_n;
    out["text"] = text_layer ? (a.get_flag("raw-text") ? "raw" : "normalized") : "none";
    out["output_lookup"] = text_layer ? !a.get_flag("no-output-lookup") : true;
    out["backoff"] = backoff.enabled;
    out["pages"] = pages_json;
    nlohmann::ordered_json t;
    t["pages"] = jobs.size();
    t["corpus_tokens"] = total_corpus;
    t.update(stats_json(total, verify_cost));
    out["total"] = t;
    io::write_file_atomic(a.get("json"), out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace locr::app
