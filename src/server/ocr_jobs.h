// Async OCR jobs (/v1/ocr/jobs): a document submitted now, its pages generated in the background,
// its result fetched (or streamed) later. A job takes exactly the bodies /v1/ocr takes and is
// checked the same way at submission (ocr_document.h), so a bad request is refused at once and
// never becomes a failed job. Jobs run --max-running-jobs at a time in submission order, each as
// one Generation over the pages it has not finished yet; every finished page is stored at once
// (ocr_job_store.h), so a server restarted on the same --jobs-dir answers for finished jobs and
// resumes the others without redoing a page. A drain (SIGTERM) stops the running jobs at once
// (their pages resume at the next start): jobs never hold a drain up. Without --jobs-dir the
// jobs live in a private temporary directory removed at exit.
//
// Bounds: --max-jobs stored jobs and --max-jobs-bytes on disk (429 at submission past either, 413
// for a document larger than the whole allowance); finished jobs are deleted --job-ttl seconds
// after they end. With --api-key a job belongs to (the SHA-256 of) the key that submitted it: to
// any other caller it does not exist (404), as is any id that is not "ocrjob-<32 hex>".
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/ocr_job_store.h"
#include "server/server_context.h"

namespace locr::server {

class OcrJobs {
 public:
  // Opens --jobs-dir (or makes the temporary one), loads the jobs in it and starts the runners.
  explicit OcrJobs(ServerContext& ctx);
  ~OcrJobs();  // stop(); removes the temporary directory
  OcrJobs(const OcrJobs&) = delete;
  OcrJobs& operator=(const OcrJobs&) = delete;

  // Cancels the running generations (their jobs stay queued on disk) and joins the runners.
  void stop();

  // The routes' work. `owner`: the caller's key digest ("" without --api-key). ApiError on refusal.
  nlohmann::json submit(const httplib::Request& req, const std::string& owner);
  nlohmann::json get(const std::string& id, const std::string& owner);
  nlohmann::json list(const std::string& owner, int limit, const std::string& after);
  std::string result(const std::string& id, const std::string& owner);  // 409 until succeeded
  void stream_result(const std::string& id, const std::string& owner, httplib::Response& res);
  nlohmann::json cancel(const std::string& id, const std::string& owner);
  nlohmann::json remove(const std::string& id, const std::string& owner);

  // locr:ocr_jobs{status=...}: the jobs stored, by status.
  std::string render_metrics(const std::string& model_name);
  const std::string& dir() const { return store_->dir(); }

 private:
  struct Job;
  std::shared_ptr<Job> find_locked(const std::string& id, const std::string& owner);
  void worker();
  void run(const std::shared_ptr<Job>& job);
  void finish_locked(Job& job, const std::string& status, const std::string& error);
  void expire_locked();
  nlohmann::json job_json_locked(const Job& job) const;

  ServerContext& ctx_;
  bool temporary_ = false;
  std::unique_ptr<OcrJobStore> store_;
  std::mutex mu_;
  std::condition_variable cv_;  // the queue, a job's pages or status changed, stopping
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  int reserved_jobs_ = 0;      // submissions writing their files
  int64_t reserved_bytes_ = 0;
  int64_t last_seq_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace locr::server
