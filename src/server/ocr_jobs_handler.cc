// The /v1/ocr/jobs routes (server/ocr_jobs.h does the work): submit (202 and a Location), status,
// list (newest first, OpenAI's `limit` / `after`), result (409 until it is ready; SSE with
// ?stream=true or Accept: text/event-stream), cancel, delete. The caller is the digest of its API
// key when the server has one, so a job is only ever found by the key that submitted it.
#include <string>

#include "server/auth.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/ocr_jobs.h"
#include "server/sse.h"

namespace locr::server {

namespace {

constexpr int kDefaultListLimit = 20;
constexpr int kMaxListLimit = 100;

OcrJobs& jobs(ServerContext& ctx) {
  LOCR_CHECK(ctx.ocr_jobs, "the OCR jobs are set up");
  return *ctx.ocr_jobs;
}

std::string owner(const ServerContext& ctx, const httplib::Request& req) {
  return ctx.opts().api_key.empty() ? std::string() : api_key_digest(req.get_header_value("Authorization"));
}

std::string job_id(const httplib::Request& req) { return req.matches.size() > 1 ? req.matches[1].str() : std::string(); }

bool wants_stream(const httplib::Request& req) {
  if (req.has_param("stream")) {
    const std::string v = req.get_param_value("stream");
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    bad_request(str("'stream' must be true or false, got '", v.substr(0, 32), "'"), "stream");
  }
  return req.get_header_value("Accept").find("text/event-stream") != std::string::npos;
}

}  // namespace

void handle_ocr_job_submit(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const nlohmann::json j = jobs(ctx).submit(req, owner(ctx, req));
  res.set_header("Location", ctx.opts().root_path + "/v1/ocr/jobs/" + j["id"].get<std::string>());
  send_json(res, j, 202);
}

void handle_ocr_jobs_list(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  int limit = kDefaultListLimit;
  if (req.has_param("limit")) {
    const std::string v = req.get_param_value("limit");
    const bool digits = !v.empty() && v.size() <= 4 && v.find_first_not_of("0123456789") == std::string::npos;
    limit = digits ? std::stoi(v) : 0;
    if (limit < 1 || limit > kMaxListLimit)
      bad_request(str("'limit' must be an integer in [1, ", kMaxListLimit, "], got '", v.substr(0, 32), "'"), "limit");
  }
  send_json(res, jobs(ctx).list(owner(ctx, req), limit, req.get_param_value("after")));
}

void handle_ocr_job_get(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  send_json(res, jobs(ctx).get(job_id(req), owner(ctx, req)));
}

void handle_ocr_job_result(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (wants_stream(req)) {
    jobs(ctx).stream_result(job_id(req), owner(ctx, req), res);
    return;
  }
  res.status = 200;
  res.set_content(jobs(ctx).result(job_id(req), owner(ctx, req)), "application/json");
}

void handle_ocr_job_cancel(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  send_json(res, jobs(ctx).cancel(job_id(req), owner(ctx, req)));
}

void handle_ocr_job_delete(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  send_json(res, jobs(ctx).remove(job_id(req), owner(ctx, req)));
}

}  // namespace locr::server
