#include "server/http_server.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <thread>

#include <httplib.h>

#include "core/log.h"
#include "server/auth.h"
#include "server/cors.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/http_connection.h"
#include "server/ocr_jobs.h"
#include "server/queue_wait.h"
#include "server/request_log.h"
#include "server/sse.h"
#include "server/tls.h"
#include "server/ui.h"

namespace locr::server {

RequestLog& request_log() {
  thread_local RequestLog log;
  return log;
}

namespace {

// httplib's TaskQueue with threads started on demand up to a cap (a streaming request holds its
// worker thread for its whole life, so the pool must grow with the concurrent clients).
class ElasticPool : public httplib::TaskQueue {
 public:
  explicit ElasticPool(size_t max_threads) : max_(std::max<size_t>(2, max_threads)) {}
  ~ElasticPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(fn));
    if (idle_ < jobs_.size() && threads_.size() < max_) threads_.emplace_back([this] { work(); });
    cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, nothing left
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::list<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':')) return false;
  return true;
}

const char* const kKnownPaths[] = {"/",         "/v1/chat/completions", "/v1/completions", "/v1/ocr", "/v1/ocr/jobs", "/v1/models",
                                   "/tokenize", "/detokenize",          "/health",         "/ping",   "/ready",
                                   "/version",  "/metrics",             "/v2/health/live", "/v2/health/ready",
                                   "/generate"};

// Shuts down this process's connected sockets whose local port is `port`: at the end of a drain
// only idle keep-alive connections are left, and httplib would otherwise wait out their
// keep-alive timeout. (httplib 0.11 gives no handle on accepted sockets.)
void shutdown_idle_connections(int port) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == ::dirfd(d)) continue;
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;  // not connected
    int local_port = -1;
    if (local.ss_family == AF_INET) local_port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
    else if (local.ss_family == AF_INET6) local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
    if (local_port == port) ::shutdown(fd, SHUT_RDWR);
  }
  ::closedir(d);
}

// A request answered before routing leaves its body (if any) unread: the connection cannot carry
// another request after it.
void close_if_body_unread(const httplib::Request& req, httplib::Response& res) {
  const std::string len = req.get_header_value("Content-Length");
  if (req.has_header("Transfer-Encoding") || (!len.empty() && len != "0")) {
    res.set_header("Connection", "close");
    close_connection_after_response();
  }
}

std::string handler_label(const std::string& path) {
  for (const char* p : kKnownPaths)
    if (path == p) return p;
  if (path.rfind("/v1/ocr/jobs/", 0) == 0) return "/v1/ocr/jobs/{id}";
  return "other";
}

}  // namespace

std::string normalize_root_path(const std::string& path) {
  if (path.empty()) return path;
  const bool safe = std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
  });
  if (path[0] != '/' || !safe || path.find("//") != std::string::npos)
    fail(ErrorKind::kInvalidArgument, "--root-path must be an absolute URL path such as /ocr (letters, digits, "
         "'/', '-', '_', '.', '~'), got '", path, "'");
  std::string p = path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p;
}

class HttpServer::Impl : public httplib::Server {
 public:
  HeaderLimits header_limits;
  std::unique_ptr<TlsContext> tls;  // --ssl-certfile: every connection is TLS
  // The methods of each path routed with route(), for 405 and its Allow header.
  std::map<std::string, std::vector<std::string>> route_methods;
  // Logs and counts a request refused before httplib could log it (a request line too long).
  std::function<void(const ConnectionStream&)> log_refused;

  // httplib's keep-alive loop over one accepted connection, with our own socket stream (header
  // limits, 431) and connections closed where a handler asked for it.
  bool process_and_close_socket(socket_t sock) override {
    bool ret = false;
    SSL* ssl = nullptr;
    if (tls) {
      // The handshake is bounded by the read/write timeouts (SSL_accept reads and writes blocking).
      const timeval rt{static_cast<time_t>(read_timeout_sec_), 0}, wt{static_cast<time_t>(write_timeout_sec_), 0};
      ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof rt);
      ::setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &wt, sizeof wt);
      ssl = tls->accept(sock, read_timeout_sec_);
      if (!ssl) {
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        return false;
      }
    }
    {
      ConnectionStream strm(sock, read_timeout_sec_, write_timeout_sec_, header_limits, ssl);
      for (size_t count = keep_alive_max_count_; count > 0; --count) {
        if (!strm.wait_for_request(keep_alive_timeout_sec_, [this] { return svr_sock_ != INVALID_SOCKET; })) break;
        strm.begin_request();
        bool connection_closed = false;
        ret = process_request(strm, count == 1, connection_closed, nullptr);
        if (strm.rejected() && !response_logged() && log_refused) log_refused(strm);
        const bool close_after = take_close_after_response();
        if (!ret || connection_closed || close_after || strm.rejected()) break;
      }
    }
    tls_close(ssl);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  // httplib 0.11 (a compiled library: CPPHTTPLIB_LISTEN_BACKLOG cannot be changed) listens with a
  // backlog of 5, so a burst of clients overflows the accept queue and their SYNs are dropped (a
  // connect then waits out a 1 s SYN retransmission, or fails). listen() again on the listening
  // socket sets the backlog (Linux only updates the queue's length).
  bool set_backlog(int backlog) {
    const socket_t s = svr_sock_;
    return s != INVALID_SOCKET && ::listen(s, backlog) == 0;
  }

  // Makes the accept loop end without marking the server stopped, so responses in progress
  // keep streaming.
  void stop_accepting() {
    const socket_t s = svr_sock_;
    if (s != INVALID_SOCKET) ::shutdown(s, SHUT_RDWR);
  }
  // Ends keep-alive loops and any body still being written.
  void end() { svr_sock_.exchange(INVALID_SOCKET); }
};

HttpServer::HttpServer(ServerContext& ctx)
    : ctx_(ctx), jobs_(std::make_unique<OcrJobs>(ctx)), impl_(std::make_unique<Impl>()) {
  ctx.ocr_jobs = jobs_.get();
  const ServerOptions& o = ctx.opts();
  const size_t max_threads = static_cast<size_t>(std::max(2, o.http_threads));
  impl_->new_task_queue = [max_threads] { return new ElasticPool(max_threads); };
  impl_->set_payload_max_length(static_cast<size_t>(o.max_body_bytes));
  impl_->set_read_timeout(o.read_timeout_s, 0);
  impl_->set_write_timeout(o.write_timeout_s, 0);
  impl_->set_keep_alive_timeout(o.keep_alive_timeout_s);
  impl_->set_keep_alive_max_count(1000);
  impl_->header_limits = {o.max_header_bytes, o.max_headers};
  if (o.tls.enabled()) impl_->tls = std::make_unique<TlsContext>(o.tls);
  install_routes();
}

HttpServer::~HttpServer() {
  jobs_->stop();
  ctx_.ocr_jobs = nullptr;
}

void HttpServer::install_routes() {
  Impl& s = *impl_;
  ServerContext& ctx = ctx_;

  s.set_pre_routing_handler([&ctx, &impl = s](const httplib::Request& req, httplib::Response& res) {
    // --root-path: a request that still carries the prefix (a proxy that does not strip it) is
    // routed without it, as Starlette does. httplib routes on req.path after this handler; the
    // request object is httplib's own, not const, so rewriting its path here is sound.
    const std::string& root = ctx.opts().root_path;
    if (!root.empty() && req.path.compare(0, root.size(), root) == 0 &&
        (req.path.size() == root.size() || req.path[root.size()] == '/')) {
      std::string& path = const_cast<httplib::Request&>(req).path;
      path = path.size() == root.size() ? std::string("/") : path.substr(root.size());
    }
    RequestLog& log = request_log();
    log = RequestLog{};
    log.active = true;
    log.start = std::chrono::steady_clock::now();
    const std::string given = req.get_header_value("X-Request-Id");
    log.id = valid_request_id(given) ? given : ctx.random_hex();
    log.http10 = req.version == "HTTP/1.0";
    res.set_header("X-Request-Id", log.id);
    ctx.metrics().in_flight.fetch_add(1);
    // CORS (server/cors.h): a preflight is answered here; any other request from an Origin gets
    // the simple-response headers now, so every answer carries them, errors included.
    if (req.has_header("Origin")) {
      const std::string origin = req.get_header_value("Origin");
      if (req.method == "OPTIONS" && req.has_header("Access-Control-Request-Method")) {
        const CorsPreflight p = cors_preflight(ctx.opts().cors, origin, req.get_header_value("Access-Control-Request-Method"),
                                               req.get_header_value("Access-Control-Request-Headers"),
                                               req.has_header("Access-Control-Request-Headers"));
        for (const auto& [k, v] : p.headers) res.set_header(k, v);
        close_if_body_unread(req, res);
        res.status = p.status;
        res.set_content(p.body, "text/plain; charset=utf-8");
        return httplib::Server::HandlerResponse::Handled;
      }
      for (const auto& [k, v] : cors_simple_headers(ctx.opts().cors, origin, req.has_header("Cookie"))) res.set_header(k, v);
    }
    // A known route asked with a method it does not take: 405 with Allow (as Starlette), not 404.
    if (auto r = impl.route_methods.find(req.path); r != impl.route_methods.end()) {
      const auto& ms = r->second;
      const bool head_ok = req.method == "HEAD" && std::find(ms.begin(), ms.end(), "GET") != ms.end();
      if (!head_ok && std::find(ms.begin(), ms.end(), req.method) == ms.end()) {
        std::string allow;
        for (const auto& m : ms) allow += (allow.empty() ? "" : ", ") + m;
        res.set_header("Allow", allow);
        close_if_body_unread(req, res);
        send_json(res, error_body(405, str("Method Not Allowed: ", req.method, " ", req.path, " (allowed: ", allow, ")")), 405);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (ctx.draining) {
      res.set_header("Connection", "close");
      close_connection_after_response();
    }
    // The body has not been read yet: a length that is not a number, or too large, is answered
    // now (instead of after reading, or waiting out the read timeout for, bytes that never come),
    // and the connection is closed since the body is left unread.
    auto refuse = [&](int status, const std::string& msg) {
      res.set_header("Connection", "close");
      close_connection_after_response();
      send_json(res, error_body(status, msg), status);
      return httplib::Server::HandlerResponse::Handled;
    };
    const size_t n_lengths = req.headers.count("Content-Length");
    if (n_lengths > 0) {
      const std::string v = req.get_header_value("Content-Length");
      const bool digits =
          !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      bool same = true;
      for (size_t i = 1; i < n_lengths; ++i) same &= req.get_header_value("Content-Length", i) == v;
      if (!same) return refuse(400, "the request has several different Content-Length headers");
      if (!digits) return refuse(400, "Content-Length '" + v.substr(0, 64) + "' is not a non-negative decimal number");
      if (v.size() > 18 || std::stoll(v) > ctx.opts().max_body_bytes)
        return refuse(413, str("the request body (Content-Length ", v.substr(0, 64), ") is larger than ",
                               ctx.opts().max_body_bytes, " bytes (--max-body-bytes)"));
      if (req.has_header("Transfer-Encoding"))
        return refuse(400, "the request has both Content-Length and Transfer-Encoding");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  s.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    response_logged() = true;
    RequestLog& log = request_log();
    const double secs =
        log.active ? std::chrono::duration<double>(std::chrono::steady_clock::now() - log.start).count() : 0.0;
    if (log.active) ctx.metrics().in_flight.fetch_sub(1);
    const int status = status_override() ? status_override() : res.status;
    ctx.metrics().count_request(handler_label(req.path), req.method, status, secs);
    const auto& skip = ctx.opts().access_log_skip_paths;
    if (ctx.opts().access_log && std::find(skip.begin(), skip.end(), req.path) == skip.end()) {
      std::string line = str(req.remote_addr, ":", req.remote_port, " \"", req.method, " ", req.path, "\" ", status,
                             " id=", log.active ? log.id : "-", " ", static_cast<int64_t>(secs * 1000), "ms");
      if (log.prompt_tokens >= 0) line += str(" prompt_tokens=", log.prompt_tokens, " completion_tokens=", log.completion_tokens);
      if (!log.note.empty()) line += " (" + clip_for_log(log.note, ctx.opts().max_log_len) + ")";
      LOCR_INFO("http: ", line);
    }
    log.active = false;
  });

  s.log_refused = [&ctx](const ConnectionStream& strm) {
    const int status = status_override();
    const std::string method = strm.request_method().empty() ? "-" : strm.request_method();
    ctx.metrics().count_request("other", method, status, 0.0);
    if (ctx.opts().access_log) {
      std::string ip;
      int port = 0;
      strm.get_remote_ip_and_port(ip, port);
      LOCR_INFO("http: ", ip, ":", port, " \"", method, " (request line cut)\" ", status, " id=- 0ms (",
                clip_for_log(strm.reject_reason(), ctx.opts().max_log_len), ")");
    }
  };

  s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    std::string msg;
    switch (res.status) {
      case 404: msg = "Not Found: " + req.method + " " + req.path; break;
      case 413: msg = "the request body is too large"; break;
      case 414: msg = "the request URI is too long"; break;
      case 400: msg = "malformed or incomplete HTTP request (or the body arrived slower than --read-timeout)"; break;
      default: msg = "HTTP error " + std::to_string(res.status);
    }
    res.set_content(json_text(error_body(res.status, msg)), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));

  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    LOCR_ERROR("http: unhandled exception: ", msg);
    send_json(res, error_body(500, msg), 500);
  });

  using Fn = void (*)(ServerContext&, const httplib::Request&, httplib::Response&);
  // Every API handler: API key (all API routes; server/auth.h), refusal while draining, and errors
  // as OpenAI JSON. A failing request only ever affects itself. `queued`: a request a client waits
  // on while the engine queue runs, refused at once (503, Retry-After) when that queue would keep
  // it waiting longer than --max-queue-wait-s (server/queue_wait.h).
  auto api = [&ctx](Fn fn, bool generation, bool queued = false) {
    return [&ctx, fn, generation, queued](const httplib::Request& req, httplib::Response& res) {
      const std::string& key = ctx.opts().api_key;
      bool key_ok = key.empty();
      if (!key_ok) {
        const std::string auth = req.get_header_value("Authorization");
        key_ok = api_key_matches(auth, key);
        for (const std::string& k : ctx.opts().extra_api_keys) key_ok = api_key_matches(auth, k) || key_ok;  // all compared
      }
      if (!key_ok) {
        res.set_header("WWW-Authenticate", "Bearer");
        send_json(res, error_body(401, "Unauthorized: a valid API key is required (Authorization: Bearer KEY)"), 401);
        return;
      }
      if (generation && ctx.draining) {
        ctx.metrics().rejected_while_draining.fetch_add(1);
        send_json(res, error_body(503, "the server is shutting down"), 503);
        return;
      }
      if (const double limit = ctx.opts().max_queue_wait_s; queued && limit > 0) {
        const double wait = ctx.estimated_queue_wait_s();
        if (wait > limit) {
          const int retry = retry_after_s(wait, limit);
          ctx.metrics().rejected_queue_full.fetch_add(1);
          request_log().note = str("queue full: ~", static_cast<int64_t>(wait), " s of work ahead");
          res.set_header("Retry-After", std::to_string(retry));
          send_json(res, error_body(503, str("the server is busy: the requests queued ahead would keep this one waiting "
                                             "about ", static_cast<int64_t>(std::ceil(wait)), " s, more than "
                                             "--max-queue-wait-s ", limit, "; retry after ", retry, " s")),
                    503);
          return;
        }
      }
      try {
        fn(ctx, req, res);
      } catch (const ApiError& e) {
        send_json(res, error_body(e), e.status());
      } catch (const locr::Error& e) {
        const ApiError a = from_locr_error(e);
        send_json(res, error_body(a), a.status());
      }
    };
  };

  // Routes whose methods are recorded for 405 (a known path, a wrong method).
  auto route = [&s](const char* method, const std::string& path, httplib::Server::Handler h) {
    s.route_methods[path].push_back(method);
    if (std::string(method) == "GET") s.Get(path, std::move(h));
    else if (std::string(method) == "DELETE") s.Delete(path, std::move(h));
    else s.Post(path, std::move(h));
  };
  route("POST", "/v1/chat/completions", api(handle_chat, true, true));
  route("POST", "/v1/completions", api(handle_completions, true, true));
  route("POST", "/v1/ocr", api(handle_ocr, true, true));
  // vLLM's legacy demo server (python -m vllm.entrypoints.api_server): server/legacy_api.h.
  route("POST", "/generate", api(handle_generate, true, true));
  // Async OCR jobs (server/ocr_jobs.h). Ids are matched as one path segment; anything that is not
  // a job id is 404 before any lookup.
  route("POST", "/v1/ocr/jobs", api(handle_ocr_job_submit, true));
  route("GET", "/v1/ocr/jobs", api(handle_ocr_jobs_list, false));
  s.Get(R"(/v1/ocr/jobs/([^/]+))", api(handle_ocr_job_get, false));
  s.Delete(R"(/v1/ocr/jobs/([^/]+))", api(handle_ocr_job_delete, false));
  s.Get(R"(/v1/ocr/jobs/([^/]+)/result)", api(handle_ocr_job_result, false));
  s.Post(R"(/v1/ocr/jobs/([^/]+)/cancel)", api(handle_ocr_job_cancel, false));
  route("POST", "/tokenize", api(handle_tokenize, true));
  route("POST", "/detokenize", api(handle_detokenize, false));
  route("GET", "/v1/models", api(handle_models, false));
  // Liveness: 200 until the process exits, drain included (a drain is not a failure to restart).
  auto health = [](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_header("Content-Length", "0");
  };
  // Readiness: 503 as soon as a drain starts, so load balancers and Kubernetes send new work elsewhere
  // while the requests in flight finish here.
  auto ready = [&ctx](const httplib::Request&, httplib::Response& res) {
    if (ctx.draining) {
      send_json(res, error_body(503, "the server is shutting down"), 503);
      return;
    }
    res.status = 200;
    res.set_header("Content-Length", "0");
  };
  route("GET", "/health", health);
  route("GET", "/ping", health);
  route("POST", "/ping", health);
  route("GET", "/ready", ready);
  // KServe's Open Inference Protocol names for the same two probes.
  route("GET", "/v2/health/live", health);
  route("GET", "/v2/health/ready", ready);
  route("GET", "/version", [&ctx](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"version", ctx.opts().version}, {"engine", "locr"}, {"device", ctx.opts().device}});
  });
  route("GET", "/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    std::string text = ctx.engine().metrics().render(ctx.model_name());
    text += ctx.metrics().render(ctx.model_name());
    runtime::prom_family(text, "locr:estimated_queue_wait_seconds", "gauge",
                         "Estimated seconds a new request would wait for the engine to admit it (0: at once, or no "
                         "request finished yet).");
    text += "locr:estimated_queue_wait_seconds{model_name=\"" + runtime::prom_escape(ctx.model_name()) + "\"} " +
            runtime::prom_number(ctx.estimated_queue_wait_s()) + "\n";
    if (ctx.ocr_jobs) text += ctx.ocr_jobs->render_metrics(ctx.model_name());
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  if (ctx.opts().ui && find_ui_file("index.html")) {
    register_ui_routes(s, ctx.opts().root_path);
    s.route_methods["/"].push_back("GET");
  }
}

int system_listen_backlog() {
  std::ifstream f("/proc/sys/net/core/somaxconn");
  long n = 0;
  if (f >> n && n > 0) return static_cast<int>(std::min<long>(n, std::numeric_limits<int>::max()));
  return SOMAXCONN;
}

int HttpServer::bind() {
  const ServerOptions& o = ctx_.opts();
  if (o.port == 0) {
    port_ = impl_->bind_to_any_port(o.host);
    if (port_ <= 0) fail(ErrorKind::kIo, "cannot listen on ", o.host, " (any port)");
  } else {
    if (!impl_->bind_to_port(o.host, o.port))
      fail(ErrorKind::kIo, "cannot listen on ", o.host, ":", o.port, " (is the port in use, or the address not local?)");
    port_ = o.port;
  }
  const int backlog = o.listen_backlog > 0 ? o.listen_backlog : system_listen_backlog();
  if (!impl_->set_backlog(backlog))
    fail(ErrorKind::kIo, "cannot set the listen backlog to ", backlog, ": ", std::strerror(errno));
  return port_;
}

void HttpServer::serve() { impl_->listen_after_bind(); }

void HttpServer::shutdown(double timeout_s) {
  // Draining: still accepting, so /health answers 200, /ready 503 and new generation requests 503
  // (every response closes its connection), until the requests in flight are done or cancelled.
  ctx_.draining = true;
  // Running OCR jobs stop now (their finished pages are kept; the rest run at the next start).
  jobs_->stop();
  using Clock = std::chrono::steady_clock;
  auto wait_idle = [&](double secs) {
    const auto until = Clock::now() + std::chrono::duration<double>(secs);
    while (Clock::now() < until) {
      if (ctx_.n_active() == 0 && ctx_.metrics().in_flight.load() <= 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  if (!wait_idle(timeout_s)) {
    LOCR_WARN("shutdown: ", ctx_.n_active(), " request(s) still running after ", timeout_s, " s; cancelling them");
    ctx_.cancel_all();
    wait_idle(5.0);
  }
  impl_->stop_accepting();
  impl_->end();
  shutdown_idle_connections(port_);
}

}  // namespace locr::server
