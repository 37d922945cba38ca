// The run record of `locr ocr`: OUTDIR/manifest.json, written (temp file + rename) when the run
// starts, after every finished page and at the end, so a killed run leaves an accurate one; and
// resuming from it. A page is reused by a later run only if the manifest records it done under the
// same output-affecting options (run_options) and its file (and its figure crops) are still there;
// its tokens, finish_reason, figures and confidence come from that record. Under other options every page is redone.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/ocr_page_figures.h"
#include "io/document.h"

namespace locr::app {

struct PageOut {
  std::string text;  // the model's raw output
  std::string finish_reason;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  PageConfidence confidence;  // unknown when the backend gave no log-probabilities
  int64_t drafted = 0, accepted = 0;  // speculative decoding (the page's text layer), in-process
};

struct PageJob {
  int page = 0;
  std::string file;                // OUTDIR-relative
  std::string status = "pending";  // ok, skipped (done by an earlier run), failed
  int attempts = 0;
  double seconds = 0;
  PageOut out;
  std::vector<PageFigure> figures;  // crops written next to the page file
  std::string error;
};

struct DocJob {
  std::string source, name, format;
  int page_count = 0;
  std::unique_ptr<io::Document> doc;
  std::vector<PageJob> pages;
  std::string error;   // could not open / select pages
  std::string output;  // OUTDIR-relative document file, when complete
};

struct ManifestHead {
  nlohmann::json options;  // run_options of this run
  std::string backend, format;
  // pages_done: every page done, by this run or (pages_skipped of them) by an earlier one.
  int pages_total = 0, pages_skipped = 0, pages_done = 0, pages_failed = 0;
  double elapsed_s = 0;
  bool complete = false;  // false while the run goes on (or if it was killed)
};

nlohmann::json manifest_json(const std::vector<DocJob>& docs, const ManifestHead& head);

// What an earlier run left in OUTDIR/manifest.json and may be reused.
struct PreviousRun {
  bool reusable = false;  // a manifest written under the same options
  std::string why_not;    // when a manifest exists but cannot be reused ("" if there is none)
  std::map<std::pair<std::string, int>, nlohmann::json> done;  // (source, page) -> its page record
};
PreviousRun read_previous_run(const std::string& manifest_path, const nlohmann::json& options);

// Restores `pj` from the earlier run's record if that page is done and its file (OUTDIR/pj.file)
// and figure files exist.
bool restore_page(const PreviousRun& prev, const std::string& source, const std::string& outdir, PageJob& pj);

}  // namespace locr::app
