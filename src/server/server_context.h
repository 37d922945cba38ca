// What every HTTP handler shares: the server options (from `locr serve` flags), the loaded model
// and the engine, server-side metrics, the request-seed generator and the registry of in-flight
// generations (so shutdown can drain or cancel them). Not here: routing (http_server) or the
// OpenAI request/response shapes (openai_schema).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/request_path.h"
#include "server/cors.h"
#include "server/decode_budget.h"
#include "server/server_metrics.h"
#include "server/tls.h"

namespace locr::server {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8000;
  std::vector<std::string> served_model_names;  // first one is the primary (metrics label)
  std::string model_path;                       // shown as `root` in /v1/models
  std::string version = "0.0.0";
  std::string api_key;                          // empty: no authentication
  std::vector<std::string> extra_api_keys;      // --api-key K1 K2 ...: the keys after the first, also accepted
  std::string device;                           // what /version reports, e.g. "cpu-bf16 (avx2, 2 threads)"
  // The web UI at / (--no-ui: off), and --root-path: the prefix a proxy serves this server under
  // ("" or "/prefix", no trailing slash). Requests whose path starts with it are routed without it.
  bool ui = true;
  std::string root_path;
  // Multimodal inputs.
  int limit_images = 999;                       // per prompt (--limit-mm-per-prompt '{"image": N}')
  std::string allowed_local_media_path;         // empty: file:// URLs refused
  std::vector<std::string> allowed_media_domains;  // empty: http(s) image URLs refused
  int64_t max_image_pixels = 178956970;         // one image (--max-image-pixels)
  int64_t max_request_image_pixels = 50000000;  // all images of a request, as decoded (--max-request-image-pixels)
  int64_t max_decode_bytes = 512LL << 20;       // image decoding in flight, server-wide (--max-decode-bytes)
  int64_t max_image_bytes = 32LL << 20;
  int media_fetch_timeout_s = 10;
  int max_document_pages = 200;                 // selected pages per /v1/ocr request (--max-document-pages)
  int ocr_pages_in_flight = 8;                  // pages of one /v1/ocr request rendered and in the engine at once
  int64_t max_ocr_request_bytes = 256LL << 20;  // estimated memory one /v1/ocr request may hold (--max-ocr-request-bytes)
  // Async OCR jobs (/v1/ocr/jobs, server/ocr_jobs.h).
  std::string jobs_dir;                         // --jobs-dir; empty: a private temporary directory removed at exit
  int max_jobs = 1000;                          // jobs stored at once, any status (--max-jobs)
  int64_t max_jobs_bytes = 10LL << 30;          // their documents and results on disk (--max-jobs-bytes)
  double job_ttl_s = 86400;                     // finished jobs are deleted this long after they end (--job-ttl)
  int max_running_jobs = 1;                     // jobs generating at once (--max-running-jobs)
  // Generation defaults.
  bool use_generation_config = true;            // --generation-config auto|vllm
  uint64_t seed = 0;                            // seeds the generator of per-request seeds
  int max_logprobs = 20;
  runtime::LoopGuardConfig loop_guard;          // --loop-guard / --no-loop-guard and its thresholds
  int max_n = 128;
  int max_choices = 1024;                       // prompts x n per request (--max-choices-per-request)
  // HTTP.
  int64_t max_body_bytes = 64LL << 20;
  int64_t max_header_bytes = 64 << 10;          // request line + headers (431 past it)
  int max_headers = 100;                        // header fields per request (431 past it)
  int read_timeout_s = 60;
  int write_timeout_s = 60;
  int keep_alive_timeout_s = 5;
  int http_threads = 1024;                      // upper bound; threads start on demand
  int listen_backlog = 0;                       // --listen-backlog; 0: the system maximum (net.core.somaxconn)
  double max_queue_wait_s = 0;                  // --max-queue-wait-s: 503 + Retry-After past it; 0: off
  double shutdown_timeout_s = 30;
  bool access_log = true;
  std::vector<std::string> access_log_skip_paths;  // --disable-access-log-for-endpoints
  int max_log_len = -1;                         // --max-log-len: most characters of a logged prompt or note; -1 all
  CorsOptions cors;                             // --allowed-origins/-methods/-headers, --allow-credentials
  TlsOptions tls;                               // --ssl-keyfile/--ssl-certfile/...: HTTPS when set
  std::string response_role = "assistant";      // --response-role: the role of chat responses
  nlohmann::json override_generation_config;    // --override-generation-config (null: none)
  nlohmann::json default_chat_template_kwargs;  // --default-chat-template-kwargs (null: none)
  runtime::SpeculativeConfig speculative;       // --speculative-config (off unless enabled)
  std::vector<int32_t> debug_forced_ids;        // --debug-forced-output (testing): every generation emits these
};

class Generation;
class OcrJobs;

class ServerContext {
 public:
  ServerContext(const model::Model& model, runtime::Engine& engine, ServerOptions opts);

  const model::Model& model() const { return model_; }
  // How requests are built and their output processed, as `locr ocr` and `locr generate` do
  // (runtime/request_path.h): from the generation defaults (generation_config.json or vLLM's, with
  // --override-generation-config merged; server/generation_defaults.h), the engine's
  // --max-model-len, the server's loop guard and --debug-forced-output.
  const runtime::RequestPath& request_path() const { return request_path_; }
  runtime::Engine& engine() { return engine_; }
  const ServerOptions& opts() const { return opts_; }
  ServerMetrics& metrics() { return metrics_; }
  DecodeBudget& decode_budget() { return decode_budget_; }
  const std::string& model_name() const { return opts_.served_model_names.front(); }
  bool serves(const std::string& name) const;

  // Seconds a request submitted now would wait for admission, from the engine's queue and recent
  // service times (server/queue_wait.h).
  double estimated_queue_wait_s() const;

  // A seed for a request that did not give one: drawn from a generator seeded with --seed, so a
  // whole run is reproducible while equal requests still differ (vLLM's global-seed behaviour).
  uint64_t next_seed();
  // 32 random hex digits for request ids.
  std::string random_hex();

  // In-flight generations, for graceful shutdown.
  void add_active(Generation* g);
  void remove_active(Generation* g);
  size_t n_active();
  void cancel_all();

  std::atomic<bool> draining{false};

  // The async OCR jobs (set by HttpServer, which owns them); null until then.
  OcrJobs* ocr_jobs = nullptr;

 private:
  const model::Model& model_;
  runtime::Engine& engine_;
  ServerOptions opts_;
  runtime::RequestPath request_path_;
  ServerMetrics metrics_;
  DecodeBudget decode_budget_;
  std::mutex rng_mu_;
  std::mt19937_64 seed_rng_, id_rng_;
  std::mutex active_mu_;
  std::unordered_set<Generation*> active_;
};

}  // namespace locr::server
