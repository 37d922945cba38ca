// The HTTP handlers, one per endpoint family, each turning a parsed request into a response.
// They throw ApiError for client errors; http_server maps that to the OpenAI error body.
#pragma once

#include <httplib.h>

#include "server/openai_schema.h"
#include "server/server_context.h"

namespace locr::server {

void handle_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_models(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /generate (generate_handler.cc): vLLM's legacy api_server (server/legacy_api.h).
void handle_generate(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/ocr (ocr_handler.cc): a document in, per-page OCR results out.
void handle_ocr(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// /v1/ocr/jobs (ocr_jobs_handler.cc): async OCR jobs; the job id is the route's first match.
void handle_ocr_job_submit(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ocr_jobs_list(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ocr_job_get(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ocr_job_result(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ocr_job_cancel(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ocr_job_delete(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// Checks the image count against --limit-mm-per-prompt, fetches the images and reads their sizes,
// renders + tokenises the chat, checks the prompt length (with `max_tokens`, -1 for none) from
// the image sizes, then decodes the images (400 on any failure). With decode false (/tokenize)
// it stops before decoding and length checks: only `ids` is filled, image tokens expanded from
// the image sizes.
model::Prompt build_chat_prompt(ServerContext& ctx, const ChatInput& ci, int max_tokens, bool decode);

// Unix seconds now.
int64_t unix_now();
// Sets a JSON body with the given status.
void send_json(httplib::Response& res, const nlohmann::json& j, int status = 200);

}  // namespace locr::server
