// The on-disk side of /v1/ocr/jobs (--jobs-dir): one directory per job, named by its id,
//
//   <dir>/<id>/request.json   the job: id, owner (SHA-256 of the submitting API key), shape, model,
//                             selected pages, the request's options (document removed)
//   <dir>/<id>/document       the document's bytes
//   <dir>/<id>/status.json    queued|running|succeeded|failed|cancelled, runs, times, error
//   <dir>/<id>/pages/<i>.json each finished page (i: 0-based position in the selection)
//   <dir>/<id>/result.json    the finished result, in the request's shape (bytes as served)
//   <dir>/<id>/summary.json   the locr-shaped summary (the last event of a streamed result)
//
// Every file is written whole to a temporary name, flushed and renamed over its final name, so a
// crash leaves either the old file or the new one. Loading a directory skips (and logs) every job
// that cannot be read back; it never throws for a job's content. No HTTP, no engine here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/generation.h"

namespace locr::server {

// What request.json and status.json hold.
struct JobRecord {
  std::string id, model, shape = "locr", owner, format;
  int64_t created = 0;  // unix seconds
  int64_t seq = 0;      // submission order (unix nanoseconds at submission)
  int page_count = 0;
  std::vector<int> pages;       // 1-based page numbers selected
  nlohmann::json request;       // {"body": options, "mistral": {...}}
  int64_t document_bytes = 0;
  // status.json
  std::string status = "queued";
  std::string error;
  double started_at = 0, finished_at = 0;  // unix seconds (0: not yet)
  int runs = 0;                            // times a server started running it
};

// A finished page: what the JSON builders need of it, and when and in which run it finished.
struct StoredPage {
  ChoiceResult result;
  double render_s = 0, first_token_s = -1, finished_s = -1;
  std::string image;        // include_page_image: the JPEG data: URL
  nlohmann::json event;     // its page object (page_json), as streamed
  double finished_at = 0;   // unix seconds
  int run = 1;
};

struct LoadedJob {
  JobRecord rec;
  std::map<int, StoredPage> pages;
  bool has_result = false;
  int64_t disk_bytes = 0;
};

// "ocrjob-" and 32 lowercase hex digits: the only names a job id (and its directory) may have.
bool valid_job_id(const std::string& id);

class OcrJobStore {
 public:
  // Creates `dir` if needed (locr::Error kIo when it cannot).
  explicit OcrJobStore(std::string dir);
  const std::string& dir() const { return dir_; }

  // Every job found in the directory; one that cannot be read is logged and left out (its
  // directory left as it is), as is a page record that cannot be read (the page runs again).
  std::vector<LoadedJob> load() const;

  // Each returns the bytes written; locr::Error kIo on failure.
  int64_t create(const JobRecord& rec, const std::string& document) const;
  int64_t save_status(const JobRecord& rec) const;
  int64_t save_page(const std::string& id, int index, const StoredPage& page) const;
  int64_t save_result(const std::string& id, const std::string& result, const std::string& summary) const;

  // The job's page records (index -> page) that can be read; `n_pages` bounds the indices.
  std::map<int, StoredPage> load_pages(const std::string& id, int n_pages, int64_t* bytes = nullptr) const;
  StoredPage read_page(const std::string& id, int index) const;
  std::string read_document(const std::string& id) const;
  std::string read_result(const std::string& id) const;
  std::string read_summary(const std::string& id) const;
  void remove(const std::string& id) const;

  static nlohmann::json record_json(const JobRecord& rec);
  static nlohmann::json status_json(const JobRecord& rec);
  static nlohmann::json page_record(const StoredPage& page);
  static StoredPage page_from(const nlohmann::json& j);  // throws on a malformed record

 private:
  std::string path(const std::string& id, const std::string& file = "") const;
  std::string dir_;
};

// Writes `bytes` to `path` through a temporary file in the same directory, fsync, rename.
void write_file_atomic(const std::string& path, const std::string& bytes);
std::string read_whole_file(const std::string& path);

}  // namespace locr::server
