#include "apps/ocr_manifest.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"

namespace locr::app {

using json = nlohmann::json;

namespace {

json page_json(const PageJob& pj) {
  json p = {{"page", pj.page}, {"file", pj.file}, {"status", pj.status}, {"attempts", pj.attempts}};
  if (pj.status == "ok" || pj.status == "skipped") {
    p["seconds"] = pj.seconds;
    p["finish_reason"] = pj.out.finish_reason;
    p["prompt_tokens"] = pj.out.prompt_tokens;
    p["completion_tokens"] = pj.out.completion_tokens;
    p["figures"] = figures_json(pj.figures);
    p["confidence"] = pj.out.confidence.to_json();
    if (pj.out.drafted > 0) p["speculative"] = {{"drafted", pj.out.drafted}, {"accepted", pj.out.accepted}};
  }
  if (pj.status == "failed") p["error"] = pj.error;
  return p;
}

// "max_tokens: 24 -> 5, format: md -> json" for the keys that differ.
std::string differences(const json& before, const json& now) {
  std::string d;
  auto show = [](const json& o, const std::string& k) { return o.contains(k) ? o[k].dump() : std::string("(unset)"); };
  for (const auto& [k, v] : now.items())
    if (!before.contains(k) || before[k] != v) d += (d.empty() ? "" : ", ") + k + ": " + show(before, k) + " -> " + v.dump();
  for (const auto& [k, v] : before.items())
    if (!now.contains(k)) d += (d.empty() ? "" : ", ") + k + ": " + v.dump() + " -> (unset)";
  return d;
}

}  // namespace

json manifest_json(const std::vector<DocJob>& docs, const ManifestHead& head) {
  json jdocs = json::array(), failures = json::array();
  int doc_failures = 0;
  for (const DocJob& dj : docs) {
    json pages = json::array();
    for (const PageJob& pj : dj.pages) {
      pages.push_back(page_json(pj));
      if (pj.status == "failed") failures.push_back({{"source", dj.source}, {"page", pj.page}, {"error", pj.error}});
    }
    if (!dj.error.empty()) {
      ++doc_failures;
      failures.push_back({{"source", dj.source}, {"page", nullptr}, {"error", dj.error}});
    }
    jdocs.push_back({{"source", dj.source},
                     {"name", dj.name},
                     {"format", dj.format},
                     {"page_count", dj.page_count},
                     {"output", dj.output.empty() ? json(nullptr) : json(dj.output)},
                     {"error", dj.error.empty() ? json(nullptr) : json(dj.error)},
                     {"pages", std::move(pages)}});
  }
  // pages_done counts every page done, those an earlier run did (pages_skipped) included; the rate
  // is of this run's pages only.
  const int ran = head.pages_done - head.pages_skipped;
  return {{"backend", head.backend},
          {"format", head.format},
          {"options", head.options},
          {"complete", head.complete},
          {"pages_total", head.pages_total},
          {"pages_done", head.pages_done},
          {"pages_skipped", head.pages_skipped},
          {"pages_failed", head.pages_failed},
          {"documents_failed", doc_failures},
          {"elapsed_s", head.elapsed_s},
          {"pages_per_s", head.elapsed_s > 0 ? ran / head.elapsed_s : 0.0},
          {"documents", std::move(jdocs)},
          {"failures", std::move(failures)}};
}

PreviousRun read_previous_run(const std::string& manifest_path, const json& options) {
  PreviousRun prev;
  if (!std::filesystem::exists(manifest_path)) return prev;
  json m;
  try {
    m = json::parse(io::read_file(manifest_path));
  } catch (const std::exception& e) {
    prev.why_not = std::string("it is not valid JSON (") + e.what() + ")";
    return prev;
  }
  if (!m.is_object() || !m.contains("options") || !m["options"].is_object()) {
    prev.why_not = "it records no run options (written by an older locr)";
    return prev;
  }
  if (m["options"] != options) {
    prev.why_not = "the options differ (" + differences(m["options"], options) + ")";
    return prev;
  }
  prev.reusable = true;
  if (!m.contains("documents") || !m["documents"].is_array()) return prev;
  for (const json& d : m["documents"]) {
    if (!d.is_object() || !d.contains("source") || !d["source"].is_string() || !d.contains("pages")) continue;
    for (const json& p : d["pages"]) {
      if (!p.is_object() || !p.contains("page") || !p["page"].is_number_integer()) continue;
      const std::string status = p.value("status", "");
      if (status == "ok" || status == "skipped") prev.done[{d["source"].get<std::string>(), p["page"].get<int>()}] = p;
    }
  }
  return prev;
}

bool restore_page(const PreviousRun& prev, const std::string& source, const std::string& outdir, PageJob& pj) {
  namespace fs = std::filesystem;
  if (!prev.reusable) return false;
  auto it = prev.done.find({source, pj.page});
  if (it == prev.done.end() || !fs::exists(fs::path(outdir) / pj.file)) return false;
  const json& p = it->second;
  if (p.value("file", "") != pj.file) return false;
  PageJob r = pj;
  try {
    r.out.finish_reason = p.value("finish_reason", "");
    r.out.prompt_tokens = p.value("prompt_tokens", int64_t{0});
    r.out.completion_tokens = p.value("completion_tokens", int64_t{0});
    r.out.confidence = PageConfidence::from_json(p.value("confidence", json(nullptr)));
    if (p.contains("speculative") && p["speculative"].is_object()) {
      r.out.drafted = p["speculative"].value("drafted", int64_t{0});
      r.out.accepted = p["speculative"].value("accepted", int64_t{0});
    }
    r.figures = p.contains("figures") ? figures_from_json(p["figures"]) : std::vector<PageFigure>{};
    r.seconds = p.value("seconds", 0.0);
    r.attempts = p.value("attempts", 0);
  } catch (const json::exception&) {
    return false;  // a record of the wrong shape: redo the page
  }
  for (const PageFigure& f : r.figures)
    if (!fs::exists(fs::path(outdir) / f.file)) return false;  // a crop is gone: redo the page
  r.status = "skipped";
  pj = std::move(r);
  return true;
}

}  // namespace locr::app
