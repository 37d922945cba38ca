// `locr serve MODEL [flags]`: the OpenAI-compatible server, a drop-in for `vllm serve`. The flags and
// what they set up (model, engine, server context) are apps/serve_setup.h's; here: the open files
// limit, signals (SIGINT/SIGTERM: graceful shutdown, a second one cancels), the HTTP server.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/serve_setup.h"
#include "core/heap.h"
#include "core/log.h"
#include "server/http_server.h"
#include "server/server_context.h"

namespace locr::app {

namespace {

void raise_open_files_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  const rlim_t want = r.rlim_max == RLIM_INFINITY ? rlim_t{65536} : std::min<rlim_t>(r.rlim_max, 65536);
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    const rlim_t was = r.rlim_cur;
    r.rlim_cur = want;
    if (::setrlimit(RLIMIT_NOFILE, &r) == 0) LOCR_DEBUG("serve: open files limit ", was, " -> ", want);
    else LOCR_WARN("serve: cannot raise the open files limit from ", was, " to ", want, ": ", std::strerror(errno));
  }
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args a("serve", "Serve the model over an OpenAI-compatible HTTP API (a drop-in for `vllm serve`).");
  declare_serve_options(a);
  if (!a.parse(argc, argv)) return 0;
  // Freed page images and activations go back to the system instead of piling up in the malloc
  // arenas of the HTTP and engine threads (core/heap.h): RSS follows what requests hold.
  pin_mmap_threshold();
  // One descriptor per connection: the soft limit on open files (often 1024) goes up to the hard
  // limit (at most 65536), as vLLM's set_ulimit does, so a thousand clients at once are accepted.
  raise_open_files_limit();
  // SIGINT/SIGTERM are taken by sigwait once the server runs. Blocked before any thread starts
  // (the kernels' thread pool starts while loading), since every thread inherits the mask and
  // the kernel may deliver a process signal to any thread that does not block it. A signal during
  // loading waits and then shuts the fresh server down gracefully.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const std::unique_ptr<Serving> setup = open_serving(a);
  runtime::Engine& engine = *setup->engine;
  server::ServerContext& ctx = *setup->ctx;
  const server::ServerOptions& so = ctx.opts();
  const std::string& dir = so.model_path;
  server::HttpServer http(ctx);
  const int port = http.bind();
  LOCR_INFO("serve: model '", so.served_model_names.front(), "' from ", dir, "; listening on ",
            so.tls.enabled() ? "https" : "http", "://", so.host, ":", port, " (listen backlog ",
            std::min(so.listen_backlog > 0 ? so.listen_backlog : server::system_listen_backlog(),
                     server::system_listen_backlog()), ")");
  std::thread serving([&] { http.serve(); });

  int sig = 0;
  sigwait(&sigs, &sig);
  LOCR_INFO("serve: received ", sig == SIGTERM ? "SIGTERM" : "SIGINT", "; finishing in-flight requests (up to ",
            so.shutdown_timeout_s, " s; signal again to cancel them)");
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    http.shutdown(so.shutdown_timeout_s);
    done = true;
  });
  while (!done) {
    timespec ts{0, 100 * 1000 * 1000};
    if (sigtimedwait(&sigs, nullptr, &ts) > 0) {
      LOCR_WARN("serve: second signal; cancelling in-flight requests");
      ctx.cancel_all();
    }
  }
  stopper.join();
  serving.join();
  engine.shutdown(false);
  LOCR_INFO("serve: stopped");
  return 0;
}

}  // namespace locr::app
