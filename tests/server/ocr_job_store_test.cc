// The on-disk store of async OCR jobs (server/ocr_job_store.h): a job written and read back whole,
// its finished pages with it; damaged job directories and page records skipped, never a throw,
// never another job lost; ids that are not "ocrjob-<32 hex>" refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/ocr_job_store.h"

namespace locr::server {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "locr-jobstore-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

JobRecord record(const std::string& id) {
  JobRecord r;
  r.id = id;
  r.model = "m";
  r.owner = "digest";
  r.format = "PDF";
  r.created = 1700000000;
  r.seq = 42;
  r.page_count = 3;
  r.pages = {1, 3};
  r.request = {{"body", {{"max_tokens", 5}}}, {"mistral", {{"active", false}}}};
  return r;
}

StoredPage page(const std::string& text) {
  StoredPage p;
  p.result.text = text;
  p.result.finish_reason = runtime::FinishReason::kLength;
  p.result.n_tokens = 5;
  p.result.confidence = {5, -1.25, -0.5f, 2};
  p.render_s = 0.01;
  p.first_token_s = 0.02;
  p.finished_s = 0.5;
  p.event = {{"page", 1}, {"text", text}};
  p.finished_at = 1700000001.5;
  p.run = 1;
  return p;
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::string page_record_text() { return OcrJobStore::page_record(page("x")).dump(); }

const std::string kGood = "ocrjob-" + std::string(32, 'a');

TEST(OcrJobStore, JobIdsAreStrict) {
  EXPECT_TRUE(valid_job_id(kGood));
  EXPECT_FALSE(valid_job_id("ocrjob-" + std::string(31, 'a')));
  EXPECT_FALSE(valid_job_id("ocrjob-" + std::string(32, 'A')));
  EXPECT_FALSE(valid_job_id("../" + kGood.substr(3)));
  EXPECT_FALSE(valid_job_id("ocrjob-" + std::string(30, 'a') + "/."));
  EXPECT_FALSE(valid_job_id(""));
}

TEST(OcrJobStore, WritesAndLoadsAJobWithItsPages) {
  TempDir d;
  OcrJobStore store(d.path.string());
  JobRecord r = record(kGood);
  r.document_bytes = 4;
  store.create(r, "%PDF");
  store.save_page(kGood, 1, page("second"));
  r.status = "running";
  r.runs = 1;
  store.save_status(r);
  const auto jobs = store.load();
  ASSERT_EQ(jobs.size(), 1u);
  const LoadedJob& j = jobs[0];
  EXPECT_EQ(j.rec.id, kGood);
  EXPECT_EQ(j.rec.status, "running");
  EXPECT_EQ(j.rec.runs, 1);
  EXPECT_EQ(j.rec.pages, (std::vector<int>{1, 3}));
  EXPECT_EQ(j.rec.request["body"]["max_tokens"], 5);
  EXPECT_FALSE(j.has_result);
  ASSERT_EQ(j.pages.size(), 1u);
  const StoredPage& p = j.pages.at(1);
  EXPECT_EQ(p.result.text, "second");
  EXPECT_EQ(p.result.confidence.min_logprob, -0.5f);
  EXPECT_EQ(p.result.confidence.sum_logprob, -1.25);
  EXPECT_EQ(p.finished_at, 1700000001.5);
  EXPECT_EQ(store.read_document(kGood), "%PDF");
  EXPECT_GT(j.disk_bytes, 4);
  EXPECT_EQ(fs::status(d.path / kGood).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(d.path / kGood / "document").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // No temporary file is left behind by the atomic writes.
  for (const auto& e : fs::recursive_directory_iterator(d.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(OcrJobStore, DamagedDirectoriesAreSkippedAndTheOthersKept) {
  TempDir d;
  OcrJobStore store(d.path.string());
  JobRecord good = record(kGood);
  good.document_bytes = 3;
  store.create(good, "abc");
  store.save_page(kGood, 0, page("first"));
  write(d.path / kGood / "pages" / "1.json", "{\"result\": ");             // a damaged page record
  write(d.path / kGood / "pages" / "7.json", page_record_text());          // past the selection
  write(d.path / kGood / "pages" / "0.json.tmp-123", "half");              // an interrupted write

  auto make = [&](char c) {
    const std::string id = "ocrjob-" + std::string(32, c);
    JobRecord r = record(id);
    r.document_bytes = 3;
    store.create(r, "abc");
    return d.path / id;
  };
  write(make('b') / "request.json", "{not json");                          // unreadable record
  fs::remove(make('c') / "document");                                      // document missing
  write(make('d') / "document", "abcdef");                                 // document of another size
  write(make('e') / "status.json", "{\"status\": \"exploded\"}");          // unknown status
  {
    JobRecord r = record("ocrjob-" + std::string(32, 'f'));
    r.document_bytes = 3;
    r.status = "succeeded";
    store.create(r, "abc");                                                // succeeded, no result
  }
  fs::create_directories(d.path / ("ocrjob-" + std::string(32, '1')));     // created, nothing written
  fs::create_directories(d.path / "not-a-job");
  write(d.path / "stray", "?");
  {  // a record whose id is not its directory's
    const fs::path other = make('2');
    JobRecord r = record("ocrjob-" + std::string(32, '3'));
    write(other / "request.json", OcrJobStore::record_json(r).dump());
  }

  std::vector<LoadedJob> jobs;
  ASSERT_NO_THROW(jobs = store.load());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].rec.id, kGood);
  ASSERT_EQ(jobs[0].pages.size(), 1u);  // page 1's damaged record: that page runs again
  EXPECT_EQ(jobs[0].pages.at(0).result.text, "first");
  EXPECT_TRUE(fs::exists(d.path / ("ocrjob-" + std::string(32, 'b'))));  // left as found
}

// A server killed between a write and its rename leaves `<file>.tmp-<n>`: the next start removes
// them (they would otherwise count against nothing and stay forever) and keeps the job.
TEST(OcrJobStore, StaleTemporaryFilesAreRemovedAtLoad) {
  TempDir d;
  OcrJobStore store(d.path.string());
  JobRecord r = record(kGood);
  r.document_bytes = 3;
  store.create(r, "abc");
  store.save_page(kGood, 0, page("first"));
  write(d.path / kGood / "status.json.tmp-77", "half a status");
  write(d.path / kGood / "pages" / "1.json.tmp-123", "half a page");
  const auto jobs = store.load();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].pages.size(), 1u);
  EXPECT_FALSE(fs::exists(d.path / kGood / "status.json.tmp-77"));
  EXPECT_FALSE(fs::exists(d.path / kGood / "pages" / "1.json.tmp-123"));
  EXPECT_TRUE(fs::exists(d.path / kGood / "pages" / "0.json"));
}

}  // namespace
}  // namespace locr::server
