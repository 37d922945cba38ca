#include "server/ocr_job_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace locr::server {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kRequest = "request.json";
constexpr const char* kStatus = "status.json";
constexpr const char* kDocument = "document";
constexpr const char* kResult = "result.json";
constexpr const char* kSummary = "summary.json";
constexpr int kFormat = 1;  // request.json's "format_version"

json result_json(const ChoiceResult& r) {
  return {{"text", r.text},
          {"finish_reason", finish_reason_json(r.finish_reason)},
          {"stop_reason", r.stop_reason},
          {"n_tokens", r.n_tokens},
          {"error", r.error},
          {"confidence",
           {{"tokens", r.confidence.tokens},
            {"sum_logprob", r.confidence.sum_logprob},
            {"min_logprob", r.confidence.min_logprob},
            {"below_threshold", r.confidence.below_threshold}}}};
}

ChoiceResult result_from(const json& j) {
  ChoiceResult r;
  r.text = j.at("text").get<std::string>();
  runtime::FinishReason reason;
  if (!runtime::parse_finish_reason(j.at("finish_reason").get<std::string>(), &reason))
    throw std::runtime_error("a finished page without a known finish_reason");
  r.finish_reason = reason;
  r.stop_reason = j.at("stop_reason");
  r.n_tokens = j.at("n_tokens").get<int64_t>();
  r.error = j.at("error").get<std::string>();
  const json& c = j.at("confidence");
  r.confidence.tokens = c.at("tokens").get<int64_t>();
  r.confidence.sum_logprob = c.at("sum_logprob").get<double>();
  r.confidence.min_logprob = c.at("min_logprob").get<float>();
  r.confidence.below_threshold = c.at("below_threshold").get<int64_t>();
  return r;
}

void apply_status(JobRecord& rec, const json& s) {
  rec.status = s.at("status").get<std::string>();
  if (rec.status != "queued" && rec.status != "running" && rec.status != "succeeded" && rec.status != "failed" &&
      rec.status != "cancelled")
    throw std::runtime_error("unknown status '" + rec.status + "'");
  rec.error = s.value("error", "");
  rec.started_at = s.value("started_at", 0.0);
  rec.finished_at = s.value("finished_at", 0.0);
  rec.runs = s.value("runs", 0);
}

int64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

}  // namespace

bool valid_job_id(const std::string& id) {
  static const std::string kPrefix = "ocrjob-";
  if (id.size() != kPrefix.size() + 32 || id.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  for (size_t i = kPrefix.size(); i < id.size(); ++i)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return false;
  return true;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const std::string tmp = path + ".tmp-" + std::to_string(rng() % 1000000000);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail(ErrorKind::kIo, "cannot write ", tmp, ": ", std::strerror(errno));
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(ErrorKind::kIo, "cannot write ", tmp, ": ", std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = synced ? errno : err;
    ::unlink(tmp.c_str());
    fail(ErrorKind::kIo, "cannot write ", path, ": ", std::strerror(e));
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::kIo, "cannot read ", path);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail(ErrorKind::kIo, "cannot read ", path);
  return s.str();
}

OcrJobStore::OcrJobStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) fail(ErrorKind::kIo, "--jobs-dir '", dir_, "' is not a directory that can be created: ", ec.message());
}

std::string OcrJobStore::path(const std::string& id, const std::string& file) const {
  LOCR_CHECK(valid_job_id(id), "a valid job id");
  return (fs::path(dir_) / id / file).string();
}

json OcrJobStore::record_json(const JobRecord& r) {
  return {{"format_version", kFormat}, {"id", r.id},         {"model", r.model},
          {"shape", r.shape},          {"owner", r.owner},   {"format", r.format},
          {"created", r.created},      {"seq", r.seq},       {"page_count", r.page_count},
          {"pages", r.pages},          {"request", r.request}, {"document_bytes", r.document_bytes}};
}

json OcrJobStore::status_json(const JobRecord& r) {
  return {{"status", r.status}, {"error", r.error}, {"started_at", r.started_at}, {"finished_at", r.finished_at},
          {"runs", r.runs}};
}

json OcrJobStore::page_record(const StoredPage& p) {
  return {{"result", result_json(p.result)}, {"render_s", p.render_s}, {"first_token_s", p.first_token_s},
          {"finished_s", p.finished_s},      {"image", p.image},       {"event", p.event},
          {"finished_at", p.finished_at},    {"run", p.run}};
}

StoredPage OcrJobStore::page_from(const json& j) {
  StoredPage p;
  p.result = result_from(j.at("result"));
  p.render_s = j.at("render_s").get<double>();
  p.first_token_s = j.at("first_token_s").get<double>();
  p.finished_s = j.at("finished_s").get<double>();
  p.image = j.at("image").get<std::string>();
  p.event = j.at("event");
  if (!p.event.is_object()) throw std::runtime_error("the page event is not an object");
  p.finished_at = j.at("finished_at").get<double>();
  p.run = j.at("run").get<int>();
  return p;
}

int64_t OcrJobStore::create(const JobRecord& rec, const std::string& document) const {
  const std::string d = path(rec.id);
  std::error_code ec;
  fs::create_directories(fs::path(d) / "pages", ec);
  if (ec) fail(ErrorKind::kIo, "cannot create ", d, ": ", ec.message());
  // Documents and results are the callers' data: readable by the server's user only.
  fs::permissions(d, fs::perms::owner_all, ec);
  fs::permissions(fs::path(d) / "pages", fs::perms::owner_all, ec);
  // The document and the status first: a directory with request.json is a whole job.
  write_file_atomic(path(rec.id, kDocument), document);
  const std::string status = status_json(rec).dump();
  write_file_atomic(path(rec.id, kStatus), status);
  const std::string request = record_json(rec).dump();
  write_file_atomic(path(rec.id, kRequest), request);
  return static_cast<int64_t>(document.size() + status.size() + request.size());
}

int64_t OcrJobStore::save_status(const JobRecord& rec) const {
  const std::string s = status_json(rec).dump();
  write_file_atomic(path(rec.id, kStatus), s);
  return static_cast<int64_t>(s.size());
}

int64_t OcrJobStore::save_page(const std::string& id, int index, const StoredPage& page) const {
  const std::string s = page_record(page).dump(-1, ' ', false, json::error_handler_t::replace);
  write_file_atomic(path(id, "pages/" + std::to_string(index) + ".json"), s);
  return static_cast<int64_t>(s.size());
}

int64_t OcrJobStore::save_result(const std::string& id, const std::string& result, const std::string& summary) const {
  write_file_atomic(path(id, kSummary), summary);
  write_file_atomic(path(id, kResult), result);
  return static_cast<int64_t>(result.size() + summary.size());
}

std::string OcrJobStore::read_document(const std::string& id) const { return read_whole_file(path(id, kDocument)); }
std::string OcrJobStore::read_result(const std::string& id) const { return read_whole_file(path(id, kResult)); }
std::string OcrJobStore::read_summary(const std::string& id) const { return read_whole_file(path(id, kSummary)); }

void OcrJobStore::remove(const std::string& id) const {
  std::error_code ec;
  fs::remove_all(path(id), ec);
  if (ec) LOCR_WARN("jobs: cannot remove ", path(id), ": ", ec.message());
}

StoredPage OcrJobStore::read_page(const std::string& id, int index) const {
  return page_from(json::parse(read_whole_file(path(id, "pages/" + std::to_string(index) + ".json"))));
}

std::map<int, StoredPage> OcrJobStore::load_pages(const std::string& id, int n_pages, int64_t* bytes) const {
  std::map<int, StoredPage> pages;
  std::error_code ec;
  for (const fs::directory_entry& pe : fs::directory_iterator(path(id, "pages"), ec)) {
    const std::string f = pe.path().filename().string();
    const size_t dot = f.find(".json");
    int index = -1;
    if (dot != std::string::npos && dot + 5 == f.size() && dot > 0 && dot <= 6 && f.find_first_not_of("0123456789") == dot)
      index = std::stoi(f.substr(0, dot));
    if (index < 0 || index >= n_pages) {
      if (f.find(".tmp-") == std::string::npos) LOCR_WARN("jobs: ", id, ": ignoring '", f, "' in pages/");
      continue;
    }
    try {
      pages[index] = page_from(json::parse(read_whole_file(pe.path().string())));
      if (bytes) *bytes += file_size_or_zero(pe.path());
    } catch (const std::exception& ex) {
      LOCR_WARN("jobs: ", id, ": page record '", f, "' cannot be read (", ex.what(), "); the page runs again");
    }
  }
  return pages;
}

namespace {

// Temporary files of writes a killed server never renamed (`<file>.tmp-<n>`): nothing reads them,
// and nothing else writes while the store loads at start.
void remove_stale_temps(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) continue;
    if (e.path().filename().string().find(".tmp-") == std::string::npos) continue;
    std::error_code rm;
    fs::remove(e.path(), rm);
    if (rm) LOCR_WARN("jobs: cannot remove the stale temporary file ", e.path().string(), ": ", rm.message());
  }
}

}  // namespace

std::vector<LoadedJob> OcrJobStore::load() const {
  std::vector<LoadedJob> out;
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  if (ec) fail(ErrorKind::kIo, "cannot list --jobs-dir '", dir_, "': ", ec.message());
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    if (!valid_job_id(name) || !e.is_directory()) {
      LOCR_WARN("jobs: skipping '", e.path().string(), "': not a job directory");
      continue;
    }
    remove_stale_temps(e.path());
    remove_stale_temps(e.path() / "pages");
    LoadedJob job;
    try {
      const json r = json::parse(read_whole_file(path(name, kRequest)));
      if (r.at("format_version").get<int>() != kFormat) throw std::runtime_error("unknown format_version");
      JobRecord& rec = job.rec;
      rec.id = r.at("id").get<std::string>();
      if (rec.id != name) throw std::runtime_error("its id '" + rec.id + "' is not its directory's name");
      rec.model = r.at("model").get<std::string>();
      rec.shape = r.at("shape").get<std::string>();
      if (rec.shape != "locr" && rec.shape != "mistral") throw std::runtime_error("unknown shape '" + rec.shape + "'");
      rec.owner = r.at("owner").get<std::string>();
      rec.format = r.at("format").get<std::string>();
      rec.created = r.at("created").get<int64_t>();
      rec.seq = r.at("seq").get<int64_t>();
      rec.page_count = r.at("page_count").get<int>();
      rec.pages = r.at("pages").get<std::vector<int>>();
      rec.request = r.at("request");
      if (!rec.request.is_object() || !rec.request.contains("body") || !rec.request["body"].is_object())
        throw std::runtime_error("no request body");
      rec.document_bytes = r.at("document_bytes").get<int64_t>();
      apply_status(rec, json::parse(read_whole_file(path(name, kStatus))));
      const int64_t doc = file_size_or_zero(path(name, kDocument));
      if (!fs::is_regular_file(path(name, kDocument)) || doc != rec.document_bytes)
        throw std::runtime_error(str("its document has ", doc, " bytes, not ", rec.document_bytes));
      job.has_result = fs::is_regular_file(path(name, kResult)) && fs::is_regular_file(path(name, kSummary));
      if (rec.status == "succeeded" && !job.has_result) throw std::runtime_error("succeeded but its result is missing");
      for (const fs::path& f : {fs::path(path(name, kRequest)), fs::path(path(name, kStatus)), fs::path(path(name, kDocument)),
                               fs::path(path(name, kResult)), fs::path(path(name, kSummary))})
        job.disk_bytes += file_size_or_zero(f);
    } catch (const std::exception& ex) {
      LOCR_WARN("jobs: skipping job directory '", e.path().string(), "': ", ex.what());
      continue;
    }
    job.pages = load_pages(name, static_cast<int>(job.rec.pages.size()), &job.disk_bytes);
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace locr::server
