// The HTTP front of `locr serve`: routes (OpenAI endpoints, /tokenize, /detokenize, /health,
// /version, /metrics, the web UI at /), --root-path prefixes stripped, API-key check on /v1, X-Request-Id (echoed, or generated), an access log
// line per request, errors as OpenAI JSON for every status httplib produces itself (404, 413,
// malformed HTTP), body size limit and read/write timeouts, worker threads started on demand,
// and graceful shutdown (stop accepting, drain or cancel what is in flight).
#pragma once

#include <memory>

#include "server/server_context.h"

namespace locr::server {

class OcrJobs;

// The largest listen backlog the kernel takes (net.core.somaxconn; SOMAXCONN when it cannot be
// read). A larger backlog is cut to it by the kernel.
int system_listen_backlog();

// --root-path as given ("", "/", "/ocr", "/ocr/") to "" or "/ocr"; throws locr::Error
// kInvalidArgument unless it is an absolute path of URL-safe characters.
std::string normalize_root_path(const std::string& path);

class HttpServer {
 public:
  explicit HttpServer(ServerContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket (port 0: any free port) with --listen-backlog. Returns the port;
  // throws locr::Error.
  int bind();
  // Accepts and serves until shutdown() completes. Blocks; call from a dedicated thread.
  void serve();
  // Stops accepting, lets in-flight requests finish for up to timeout_s, cancels the rest, and
  // makes serve() return. Call from another thread than serve().
  void shutdown(double timeout_s);

 private:
  class Impl;
  void install_routes();
  ServerContext& ctx_;
  std::unique_ptr<OcrJobs> jobs_;  // /v1/ocr/jobs: stopped first on shutdown
  std::unique_ptr<Impl> impl_;
  int port_ = -1;
};

}  // namespace locr::server
