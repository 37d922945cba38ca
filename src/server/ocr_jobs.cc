#include "server/ocr_jobs.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "core/log.h"
#include "runtime/metrics.h"
#include "server/decode_budget.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/ocr_document.h"
#include "server/request_log.h"
#include "server/sse.h"

namespace locr::server {

namespace fs = std::filesystem;
using json = nlohmann::json;

// What the status shows of a finished page (its text and event stay on disk).
struct PageDone {
  int64_t tokens = 0;
  bool error = false;
  double finished_at = 0;
  int run = 1;
};

PageDone page_done(const StoredPage& p) { return {p.result.n_tokens, !p.result.error.empty(), p.finished_at, p.run}; }

struct OcrJobs::Job {
  JobRecord rec;
  std::map<int, PageDone> done;  // by position in the selection
  std::vector<int64_t> tokens;     // this run: tokens so far of each page
  std::vector<char> started;       // this run: the page has begun
  int64_t disk_bytes = 0;
  bool claimed = false;            // a runner has it
  bool cancel = false;
  std::atomic<bool> deleted{false};  // also read by result streams between their locks
  std::shared_ptr<Generation> gen;  // while it generates
};

namespace {

const char* const kStatuses[] = {"queued", "running", "succeeded", "failed", "cancelled"};

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool finished(const std::string& status) { return status == "succeeded" || status == "failed" || status == "cancelled"; }

json mistral_options_json(const MistralOptions& m) {
  return {{"active", m.active},
          {"include_image_base64", m.include_image_base64},
          {"image_limit", m.image_limit},
          {"image_min_size", m.image_min_size},
          {"page_confidence", m.page_confidence},
          {"doc_size_bytes", m.doc_size_bytes}};
}

MistralOptions mistral_options_from(const json& j) {
  MistralOptions m;
  if (!j.is_object()) return m;
  m.active = j.value("active", false);
  m.include_image_base64 = j.value("include_image_base64", false);
  m.image_limit = j.value("image_limit", -1);
  m.image_min_size = j.value("image_min_size", 0);
  m.page_confidence = j.value("page_confidence", false);
  m.doc_size_bytes = j.value("doc_size_bytes", int64_t{0});
  return m;
}

std::string make_temp_dir() {
  const char* t = std::getenv("TMPDIR");
  std::string templ = std::string(t && *t ? t : "/tmp") + "/locr-jobs-XXXXXX";
  if (!::mkdtemp(templ.data())) fail(ErrorKind::kIo, "cannot create a temporary directory for the OCR jobs (", templ, ")");
  return templ;
}

[[noreturn]] void not_found(const std::string& id) {
  throw ApiError(404, str("no OCR job '", id.substr(0, 64), id.size() > 64 ? "...'" : "'"), "job_id");
}

}  // namespace

OcrJobs::OcrJobs(ServerContext& ctx) : ctx_(ctx) {
  std::string dir = ctx.opts().jobs_dir;
  temporary_ = dir.empty();
  if (temporary_) dir = make_temp_dir();
  store_ = std::make_unique<OcrJobStore>(dir);
  int resumed = 0;
  for (LoadedJob& l : store_->load()) {
    auto j = std::make_shared<Job>();
    j->rec = std::move(l.rec);
    for (const auto& [i, p] : l.pages) j->done[i] = page_done(p);
    j->disk_bytes = l.disk_bytes;
    j->tokens.assign(j->rec.pages.size(), 0);
    j->started.assign(j->rec.pages.size(), 0);
    if (j->rec.status == "running") j->rec.status = "queued";  // interrupted: resumes
    resumed += j->rec.status == "queued";
    last_seq_ = std::max(last_seq_, j->rec.seq);
    jobs_[j->rec.id] = std::move(j);
  }
  if (!temporary_) LOCR_INFO("jobs: ", jobs_.size(), " OCR job(s) in ", dir, ", ", resumed, " to run");
  const int n = std::max(1, ctx.opts().max_running_jobs);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { worker(); });
}

OcrJobs::~OcrJobs() {
  stop();
  if (temporary_) {
    std::error_code ec;
    fs::remove_all(store_->dir(), ec);
  }
}

void OcrJobs::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    for (auto& [id, j] : jobs_)
      if (j->gen) j->gen->cancel();
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void OcrJobs::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    expire_locked();
    std::shared_ptr<Job> next;
    for (auto& [id, j] : jobs_)
      if (j->rec.status == "queued" && !j->claimed && (!next || j->rec.seq < next->rec.seq)) next = j;
    if (!next) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      continue;
    }
    next->claimed = true;
    lock.unlock();
    try {
      run(next);
    } catch (const std::exception& e) {
      lock.lock();
      if (!next->deleted && !finished(next->rec.status)) finish_locked(*next, "failed", e.what());
      lock.unlock();
    }
    lock.lock();
    next->claimed = false;
    next->gen.reset();
    cv_.notify_all();
  }
}

void OcrJobs::finish_locked(Job& job, const std::string& status, const std::string& error) {
  job.rec.status = status;
  job.rec.error = error;
  job.rec.finished_at = finished(status) ? unix_seconds() : 0;
  if (!job.deleted) {
    try {
      store_->save_status(job.rec);
    } catch (const std::exception& e) {
      LOCR_WARN("jobs: ", job.rec.id, ": ", e.what());
    }
  }
  if (finished(status)) LOCR_INFO("jobs: ", job.rec.id, " ", status, error.empty() ? "" : ": ", error);
  cv_.notify_all();
}

void OcrJobs::run(const std::shared_ptr<Job>& job) {
  JobRecord rec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (job->deleted || stopping_ || job->rec.status != "queued") return;
    if (job->cancel) return finish_locked(*job, "cancelled", "");  // cancelled as a runner took it
    job->rec.status = "running";
    ++job->rec.runs;
    job->rec.started_at = unix_seconds();
    job->tokens.assign(job->rec.pages.size(), 0);
    job->started.assign(job->rec.pages.size(), 0);
    store_->save_status(job->rec);
    rec = job->rec;
  }
  std::map<int, StoredPage> done = store_->load_pages(rec.id, static_cast<int>(rec.pages.size()));
  LOCR_INFO("jobs: ", rec.id, " running (run ", rec.runs, ", ", done.size(), " of ", rec.pages.size(), " page(s) done)");
  auto fail_job = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!job->deleted) finish_locked(*job, "failed", why);
  };
  PreparedOcr prep;
  try {
    OcrRequest in;
    in.body = rec.request["body"];
    in.mistral = mistral_options_from(rec.request.value("mistral", json()));
    in.bytes = store_->read_document(rec.id);
    prep = prepare_ocr(ctx_, std::move(in));
  } catch (const std::exception& e) {
    return fail_job(str("cannot prepare the document: ", e.what()));
  }
  const int n = static_cast<int>(prep.prompts.size());
  bool same = n == static_cast<int>(rec.pages.size());
  for (int i = 0; same && i < n; ++i) same = prep.job->pages[i].page == rec.pages[i];
  if (!same) return fail_job("the document no longer selects the pages it was submitted with");
  OcrJob& oj = *prep.job;
  oj.id = rec.id;
  oj.created = rec.created;
  oj.submitted = Clock::now();
  std::vector<PreparedPrompt> ids(n);
  for (int i = 0; i < n; ++i) ids[i].ids = prep.prompts[i].ids;
  OcrResults results(prep.params, std::move(ids));
  std::vector<int> todo;
  std::vector<PreparedPrompt> prompts;
  for (int i = 0; i < n; ++i) {
    auto d = done.find(i);
    if (d == done.end()) {
      todo.push_back(i);
      prompts.push_back(std::move(prep.prompts[i]));
      continue;
    }
    PageState& ps = oj.pages[i];
    ps.render_s = d->second.render_s;
    ps.first_token_s = d->second.first_token_s;
    ps.finished_s = d->second.finished_s;
    ps.image = d->second.image;
    results.results()[i] = d->second.result;
  }
  prep.prompts.clear();

  bool aborted = false;
  if (!todo.empty()) {
    std::shared_ptr<Generation> gen;
    try {
      gen = std::make_shared<Generation>(ctx_, prep.params, std::move(prompts), str(rec.id, "-", rec.runs), prep.in_flight);
    } catch (const std::exception& e) {
      return fail_job(e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      job->gen = gen;
      if (job->deleted || job->cancel || stopping_) gen->cancel();
    }
    std::vector<ChoiceDelta> deltas;
    while (!gen->done()) {
      deltas.clear();
      gen->poll(deltas, std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> lock(mu_);
      if (job->deleted || job->cancel || stopping_) break;
      for (ChoiceDelta& d : deltas) {
        const int i = todo[d.index];
        PageState& ps = oj.pages[i];
        if (ps.first_token_s < 0 && (!d.text.empty() || d.finished)) ps.first_token_s = seconds_since(oj.submitted);
        job->started[i] = 1;
        job->tokens[i] = gen->results()[d.index].n_tokens;
        if (!d.finished) continue;
        if (d.finish_reason == runtime::FinishReason::kAbort) {  // cancelled under it (a second signal): runs again
          aborted = true;
          continue;
        }
        ps.finished_s = seconds_since(oj.submitted);
        results.results()[i] = gen->results()[d.index];
        StoredPage sp;
        sp.result = results.results()[i];
        sp.render_s = ps.render_s;
        sp.first_token_s = ps.first_token_s;
        sp.finished_s = ps.finished_s;
        sp.image = ps.image;
        sp.event = page_json(oj, results, i);
        sp.finished_at = unix_seconds();
        sp.run = rec.runs;
        job->disk_bytes += store_->save_page(rec.id, i, sp);
        job->done[i] = page_done(sp);
        cv_.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    job->gen.reset();
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (job->deleted) return;
    const bool all = static_cast<int>(job->done.size()) == n;
    if (!all) {
      if (job->cancel) finish_locked(*job, "cancelled", "");
      else if (stopping_ || aborted) finish_locked(*job, "queued", "");  // resumes at the next start
      else finish_locked(*job, "failed", "the generation ended before every page finished");
      return;
    }
  }
  // Every page done: the result in the request's shape, built as /v1/ocr builds it.
  if (oj.mistral.include_image_base64) {
    for (int i = 0; i < n; ++i) {
      PageState& ps = oj.pages[i];
      if (!ps.kept.rgb.empty() || !results.results()[i].error.empty()) continue;
      try {  // a page finished in an earlier run: rendered again for its figures' crops
        const io::ImageSize size = prep.doc->page_size(ps.page - 1);
        const DecodeBudget::Lease lease(ctx_.decode_budget(), DecodeBudget::estimate(size.width, size.height));
        ps.kept = ctx_.model().shrink_for_model(prep.doc->render_page(ps.page - 1));
      } catch (const std::exception& e) {
        LOCR_WARN("jobs: ", rec.id, ": cannot render page ", ps.page, " again for its figures: ", e.what());
      }
    }
  }
  const std::string summary = json_text(summary_json(oj, results, false));
  const std::string result =
      rec.shape == "mistral" ? json_text(mistral_json(oj, results)) : json_text(summary_json(oj, results, true));
  std::lock_guard<std::mutex> lock(mu_);
  if (job->deleted) return;
  job->disk_bytes += store_->save_result(rec.id, result, summary);
  finish_locked(*job, "succeeded", "");
}

void OcrJobs::expire_locked() {
  const double now = unix_seconds();
  const double ttl = ctx_.opts().job_ttl_s;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& j = *it->second;
    if (finished(j.rec.status) && !j.claimed && j.rec.finished_at > 0 && j.rec.finished_at + ttl <= now) {
      LOCR_INFO("jobs: ", j.rec.id, " expired (", j.rec.status, " ", static_cast<int64_t>(now - j.rec.finished_at),
                " s ago, --job-ttl ", ttl, ")");
      j.deleted = true;
      store_->remove(j.rec.id);
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<OcrJobs::Job> OcrJobs::find_locked(const std::string& id, const std::string& owner) {
  if (!valid_job_id(id)) not_found(id);
  expire_locked();
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second->deleted || it->second->rec.owner != owner) not_found(id);
  return it->second;
}

json OcrJobs::job_json_locked(const Job& j) const {
  const JobRecord& r = j.rec;
  json pages = json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < r.pages.size(); ++i) {
    json p = {{"page", r.pages[i]}};
    auto d = j.done.find(static_cast<int>(i));
    if (d != j.done.end()) {
      p["state"] = d->second.error ? "error" : "done";
      p["completion_tokens"] = d->second.tokens;
      p["finished_at"] = d->second.finished_at;
      p["run"] = d->second.run;
      tokens += d->second.tokens;
    } else {
      const bool running = r.status == "running" && i < j.started.size() && j.started[i];
      p["state"] = running ? "running" : "waiting";
      p["completion_tokens"] = running ? j.tokens[i] : 0;
      p["finished_at"] = nullptr;
      p["run"] = nullptr;
      if (running) tokens += j.tokens[i];
    }
    pages.push_back(std::move(p));
  }
  auto time_or_null = [](double t) { return t > 0 ? json(t) : json(nullptr); };
  return {{"id", r.id},
          {"object", "ocr.job"},
          {"status", r.status},
          {"created", r.created},
          {"model", r.model},
          {"shape", r.shape},
          {"format", r.format},
          {"page_count", r.page_count},
          {"pages_total", static_cast<int>(r.pages.size())},
          {"pages_done", static_cast<int>(j.done.size())},
          {"completion_tokens", tokens},
          {"runs", r.runs},
          {"started_at", time_or_null(r.started_at)},
          {"finished_at", time_or_null(r.finished_at)},
          {"expires_at", r.finished_at > 0 ? json(r.finished_at + ctx_.opts().job_ttl_s) : json(nullptr)},
          {"error", r.error.empty() ? json(nullptr) : json{{"message", r.error}}},
          {"pages", std::move(pages)}};
}

json OcrJobs::submit(const httplib::Request& req, const std::string& owner) {
  OcrRequest in = read_ocr_request(req, ctx_.opts());
  JobRecord rec;
  rec.request = {{"body", in.body}, {"mistral", mistral_options_json(in.mistral)}};
  rec.shape = in.mistral.active ? "mistral" : "locr";
  std::string document = in.bytes;
  {
    // Every check /v1/ocr makes, now: a request the run would refuse is refused here.
    PreparedOcr prep = prepare_ocr(ctx_, std::move(in));
    if (prep.params.stream)
      bad_request("'stream' does not apply to a job: submit it without, then stream its result with "
                  "GET /v1/ocr/jobs/{id}/result?stream=true", "stream");
    Generation::check(ctx_, prep.params, prep.prompts);
    rec.model = prep.job->model;
    rec.format = prep.job->format;
    rec.page_count = prep.job->page_count;
    for (const PageState& p : prep.job->pages) rec.pages.push_back(p.page);
  }
  rec.id = "ocrjob-" + ctx_.random_hex();
  rec.owner = owner;
  rec.created = unix_now();
  rec.document_bytes = static_cast<int64_t>(document.size());
  const int64_t need = rec.document_bytes + (4 << 10);
  const int64_t max_bytes = ctx_.opts().max_jobs_bytes;
  if (need > max_bytes)
    throw ApiError(413, str("the document (", rec.document_bytes, " bytes) is larger than this server keeps for all "
                            "OCR jobs together (--max-jobs-bytes ", max_bytes, ")"), "document");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw ApiError(503, "the server is shutting down");
    expire_locked();
    const int max_jobs = ctx_.opts().max_jobs;
    if (static_cast<int>(jobs_.size()) + reserved_jobs_ >= max_jobs)
      throw ApiError(429, str("this server already keeps ", max_jobs, " OCR job(s) (--max-jobs); delete finished "
                              "jobs (DELETE /v1/ocr/jobs/{id}) or wait for them to expire (--job-ttl ",
                              ctx_.opts().job_ttl_s, " s)"));
    int64_t used = reserved_bytes_;
    for (const auto& [id, j] : jobs_) used += j->disk_bytes;
    if (used + need > max_bytes)
      throw ApiError(429, str("the OCR jobs' documents and results take ", used, " of the ", max_bytes,
                              " bytes this server keeps for them (--max-jobs-bytes), too little for this document (",
                              rec.document_bytes, " bytes); delete finished jobs or wait for them to expire"));
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
    rec.seq = last_seq_ = std::max(now_ns, last_seq_ + 1);
    ++reserved_jobs_;
    reserved_bytes_ += need;
  }
  auto j = std::make_shared<Job>();
  j->rec = rec;
  j->tokens.assign(rec.pages.size(), 0);
  j->started.assign(rec.pages.size(), 0);
  int64_t written = 0;
  std::string error;
  try {
    written = store_->create(rec, document);
  } catch (const std::exception& e) {
    error = e.what();
    store_->remove(rec.id);
  }
  std::lock_guard<std::mutex> lock(mu_);
  --reserved_jobs_;
  reserved_bytes_ -= need;
  if (!error.empty()) {
    LOCR_ERROR("jobs: cannot store a job: ", error);
    throw ApiError(500, "cannot store the job: " + error);
  }
  j->disk_bytes = written;
  jobs_[rec.id] = j;
  request_log().note = str(rec.id, ", ", rec.pages.size(), " page(s)");
  cv_.notify_all();
  return job_json_locked(*j);
}

json OcrJobs::get(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  return job_json_locked(*find_locked(id, owner));
}

json OcrJobs::list(const std::string& owner, int limit, const std::string& after) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked();
  std::vector<const Job*> mine;
  for (const auto& [id, j] : jobs_)
    if (j->rec.owner == owner && !j->deleted) mine.push_back(j.get());
  std::sort(mine.begin(), mine.end(), [](const Job* a, const Job* b) { return a->rec.seq > b->rec.seq; });
  size_t start = 0;
  if (!after.empty()) {
    auto it = std::find_if(mine.begin(), mine.end(), [&](const Job* j) { return j->rec.id == after; });
    if (it == mine.end()) throw ApiError(400, str("'after': no OCR job '", after.substr(0, 64), "'"), "after");
    start = static_cast<size_t>(it - mine.begin()) + 1;
  }
  json data = json::array();
  for (size_t i = start; i < mine.size() && static_cast<int>(data.size()) < limit; ++i)
    data.push_back(job_json_locked(*mine[i]));
  const bool more = start + data.size() < mine.size();
  return {{"object", "list"},
          {"data", data},
          {"first_id", data.empty() ? json(nullptr) : data.front()["id"]},
          {"last_id", data.empty() ? json(nullptr) : data.back()["id"]},
          {"has_more", more}};
}

std::string OcrJobs::result(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto j = find_locked(id, owner);
  const JobRecord& r = j->rec;
  if (r.status != "succeeded")
    throw ApiError(409, str("OCR job ", id, " is ", r.status, " (", j->done.size(), " of ", r.pages.size(),
                            " page(s) done)", r.error.empty() ? "" : ": " + r.error,
                            finished(r.status) ? "; it has no result" : "; its result is ready when its status is succeeded"),
                   "", "ConflictError");
  return store_->read_result(id);
}

void OcrJobs::stream_result(const std::string& id, const std::string& owner, httplib::Response& res) {
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job = find_locked(id, owner);
  }
  auto emitted = std::make_shared<std::vector<char>>(job->rec.pages.size(), 0);
  httplib::ContentProviderWithoutLength provider = [this, job, emitted](size_t, httplib::DataSink& sink) {
    try {
      for (;;) {
        std::string buf, status, error;
        std::vector<int> ready;
        bool gone = false;
        {
          std::unique_lock<std::mutex> lock(mu_);
          auto collect = [&] {
            for (const auto& [i, d] : job->done)
              if (!(*emitted)[i]) ready.push_back(i);
          };
          collect();
          if (ready.empty() && !job->deleted && !finished(job->rec.status) && !stopping_ && !ctx_.draining) {
            cv_.wait_for(lock, std::chrono::milliseconds(200));
            collect();
          }
          status = job->rec.status;
          error = job->rec.error;
          gone = job->deleted || stopping_ || ctx_.draining;
        }
        for (int i : ready) {  // read from disk, in page order
          json e;
          try {
            e = store_->read_page(job->rec.id, i).event;
          } catch (const std::exception&) {
            if (!job->deleted) throw;
            break;  // deleted meanwhile: said below
          }
          (*emitted)[i] = 1;
          e["id"] = job->rec.id;
          e["object"] = "ocr.page";
          e["created"] = job->rec.created;
          e["model"] = job->rec.model;
          buf += sse_event(e);
        }
        if (!buf.empty()) {
          if (!sink.write(buf.data(), buf.size())) return false;
        } else if (!sink.is_writable()) {
          return false;
        }
        std::string end;
        if (job->deleted) {
          end = sse_event(error_body(404, str("OCR job ", job->rec.id, " was deleted")));
        } else if (status == "succeeded") {
          end = "data: " + store_->read_summary(job->rec.id) + "\n\n";
        } else if (finished(status)) {
          end = sse_event(error_body(409, str("OCR job ", job->rec.id, " ", status, error.empty() ? "" : ": " + error)));
        } else if (gone) {
          end = sse_event(error_body(503, str("the server is shutting down; OCR job ", job->rec.id,
                                              " resumes when it starts again")));
        } else {
          continue;
        }
        end += "data: [DONE]\n\n";
        if (!sink.write(end.data(), end.size())) return false;
        sink.done();
        return true;
      }
    } catch (const std::exception& e) {
      LOCR_ERROR("jobs: streaming ", job->rec.id, " failed: ", e.what());
      return false;
    }
  };
  res.set_chunked_content_provider("text/event-stream", std::move(provider));
}

json OcrJobs::cancel(const std::string& id, const std::string& owner) {
  std::unique_lock<std::mutex> lock(mu_);
  auto j = find_locked(id, owner);
  if (j->rec.status == "succeeded" || j->rec.status == "failed")
    throw ApiError(409, str("OCR job ", id, " has already ", j->rec.status == "failed" ? "failed" : "succeeded",
                            "; there is nothing to cancel"), "", "ConflictError");
  j->cancel = true;
  if (j->rec.status == "queued" && !j->claimed) {
    finish_locked(*j, "cancelled", "");
  } else if (!finished(j->rec.status)) {
    if (j->gen) j->gen->cancel();
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return finished(j->rec.status) || !j->claimed; });
  }
  return job_json_locked(*j);
}

json OcrJobs::remove(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto j = find_locked(id, owner);
  j->deleted = true;
  j->cancel = true;
  if (j->gen) j->gen->cancel();
  store_->remove(id);
  jobs_.erase(id);
  cv_.notify_all();
  return {{"id", id}, {"object", "ocr.job.deleted"}, {"deleted", true}};
}

std::string OcrJobs::render_metrics(const std::string& model_name) {
  std::map<std::string, int> n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, j] : jobs_) ++n[j->rec.status];
  }
  std::string o = "# HELP locr:ocr_jobs OCR jobs stored (/v1/ocr/jobs), by status.\n# TYPE locr:ocr_jobs gauge\n";
  for (const char* s : kStatuses)
    o += str("locr:ocr_jobs{model_name=\"", runtime::prom_escape(model_name), "\",status=\"", s, "\"} ", n[s], "\n");
  return o;
}

}  // namespace locr::server
