// `locr serve`'s flags (declare_serve_options) and what they set up (open_serving): model, engine and
// server context, shared by `locr serve` (apps/cmd_serve.cc) and the Python package's LLM
// (python/src), which takes vLLM's engine arguments as these flags.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "apps/model_args.h"
#include "apps/serve_setup.h"
#include "apps/vllm_compat.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/devices.h"
#include "model/kv_cache_dtype.h"
#include "runtime/executor_factory.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "server/memory_plan.h"
#include "server/tls.h"

namespace locr::app {

namespace {

int parse_count(const std::string& v, const std::string& flag) {
  // vLLM accepts 8k / 8K style lengths.
  return static_cast<int>(server::parse_size(v, "--" + flag));
}

int image_limit(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    // The older vLLM syntax: image=1,video=0.
    j = nlohmann::json::object();
    size_t start = 0;
    while (start < text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      const std::string item = text.substr(start, comma - start);
      const size_t eq = item.find('=');
      char* end = nullptr;
      const long n = eq == std::string::npos ? -1 : std::strtol(item.c_str() + eq + 1, &end, 10);
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size() || *end || n < 0)
        fail(ErrorKind::kInvalidArgument, "--limit-mm-per-prompt expects JSON like '{\"image\": 1}' or image=1, got '",
             text, "'");
      j[item.substr(0, eq)] = n;
      start = comma + 1;
    }
  }
  if (!j.is_object()) fail(ErrorKind::kInvalidArgument, "--limit-mm-per-prompt expects a JSON object");
  int limit = 999;
  for (auto& [k, v] : j.items()) {
    const nlohmann::json n = v.is_object() ? v.value("count", nlohmann::json()) : v;
    if (!n.is_number_integer() || n.get<int64_t>() < 0)
      fail(ErrorKind::kInvalidArgument, "--limit-mm-per-prompt: '", k, "' needs a count >= 0");
    if (k == "image") limit = n.get<int>();
    else if (n.get<int64_t>() > 0)
      LOCR_WARN("note: --limit-mm-per-prompt '", k, "' has no effect: this model takes images only");
  }
  return limit;
}

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    size_t start = 0;
    while (start <= v.size()) {
      size_t end = v.find_first_of(", ", start);
      if (end == std::string::npos) end = v.size();
      if (end > start) out.push_back(v.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

// --chat-template takes a file or, as in vLLM, the template text itself.
std::string chat_template_file(const std::string& value) {
  if (value.empty() || std::filesystem::is_regular_file(value)) return value;
  if (value.find("{%") == std::string::npos && value.find("{{") == std::string::npos)
    fail(ErrorKind::kInvalidArgument, "--chat-template: '", value, "' is neither a file nor a Jinja template");
  const auto path = std::filesystem::temp_directory_path() / ("locr-chat-template-" + std::to_string(::getpid()) + ".jinja");
  std::ofstream(path) << value;
  return path.string();
}

}  // namespace

runtime::SpeculativeConfig speculative_flag(const Args& a) {
  if (!a.has("speculative-config")) return {};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(a.get("speculative-config"));
  } catch (const std::exception&) {
    fail(ErrorKind::kInvalidArgument, "--speculative-config expects JSON such as '{\"method\": \"ngram\", "
         "\"num_speculative_tokens\": 8}', got '", a.get("speculative-config"), "'");
  }
  return runtime::parse_speculative_config(j);
}

void declare_serve_options(Args& a) {
  a.positional("MODEL", "model directory (Hugging Face layout: config.json, *.safetensors, tokenizer.json, ...) or a "
               "text GGUF (TEXT.gguf, as llama-server takes it)", false);
  a.option("model", "model directory or text GGUF (alternative to the positional MODEL)", "DIR");
  a.option("mmproj", "with a text GGUF: its mmproj GGUF (vision encoder + projector); without it images are refused",
           "FILE");
  a.option("host", "address to listen on (default 0.0.0.0)", "ADDR");
  a.option("port", "port to listen on (default 8000; 0 picks a free one)", "N");
  a.values("served-model-name", "name(s) clients use in 'model' (default: MODEL as given)", "NAME");
  a.values("api-key", "require 'Authorization: Bearer KEY' on the API routes (/v1/*, /tokenize, /detokenize); "
           "default: $VLLM_API_KEY", "KEY");
  a.option("max-num-seqs", "sequences decoded together (default 32)", "N");
  a.option("max-num-batched-tokens", "tokens per engine step (default 4096)", "N");
  a.option("max-model-len", "prompt + output token limit (default: the model's max_position_embeddings)", "N");
  a.option("block-size", "KV cache block size in tokens (default 16)", "N");
  a.option("kv-cache-dtype", "KV cache element type: auto (default: bfloat16 on cpu-bf16 and CUDA, float32 on "
                             "cpu-f32/ref), bfloat16, fp8 / fp8_e4m3 (FP8 E4M3 with a scale per token and kv head, "
                             "~1.94x the tokens of bfloat16 per byte)", "TYPE");
  a.option("seed", "seeds the per-request seeds of requests that give none (default 0)", "N");
  a.flag("enable-prefix-caching", "reuse KV blocks of equal prompt prefixes (default on; --no-enable-prefix-caching)");
  a.flag("vision-lane", "CPU, 2+ threads: encode pages' images on a thread of their own beside the decoder steps, "
         "the cores split between the two (default off: a few encoder layers inside each step; on 2 cores the lane "
         "costs pages per hour, see docs/benchmarks.md)");
  a.option("gpu-memory-utilization", "fraction of RAM for weights + activations + KV cache (default 0.9)", "F");
  a.option("kv-cache-memory", "KV cache size, e.g. 4GiB (overrides --gpu-memory-utilization)", "BYTES");
  a.option("kv-cache-memory-bytes", "same as --kv-cache-memory", "BYTES");
  a.option("limit-mm-per-prompt", "e.g. '{\"image\": 1}' (or image=1): most images per request", "JSON");
  a.option("threads", "compute threads (default: physical cores)", "N");
  a.option("dtype", "compute precision: auto/bfloat16 (default: BF16 matmul inputs, FP32 accumulation) or float32",
           "TYPE");
  a.option("backend", "kernel backend, overriding --dtype and --device: cpu-bf16, cpu-f32, ref (scalar oracle), cuda",
           "NAME");
  a.option("device",
           "cpu (default until the CUDA path has been validated on a GPU), cuda, or auto (cuda when this locr "
           "has CUDA and a GPU is usable, else cpu)",
           "NAME");
  a.option("chat-template", "chat template file (or template text) overriding the model's", "FILE");
  a.option("image-align", "align resized image sides to 28 (vLLM, default) or 14 (transformers) px", "N");
  a.option("allowed-local-media-path", "directory whose files may be sent as file:// image URLs", "DIR");
  a.values("allowed-media-domains", "host(s) whose http(s) image URLs may be fetched (default: none)", "HOST");
  a.option("generation-config", "'auto' (defaults from generation_config.json) or 'vllm' (ignore it)", "MODE");
  a.option("max-logprobs", "most log-probabilities per token a request may ask for (default 20)", "N");
  a.flag("loop-guard", "stop a request whose output repeats itself (default on; --no-loop-guard; a request may set "
                       "\"loop_guard\": true|false; ignore_eos requests default to off)");
  a.option("loop-guard-window", "generated tokens the loop guard examines (default 512)", "N");
  a.option("loop-guard-max-distinct", "fire when the window holds at most this many distinct 8-grams (default 128)", "N");
  a.option("tokenizer", "must be MODEL (the model's own tokenizer.json)", "DIR");
  a.flag("disable-log-requests", "no access log line per request");
  a.flag("enable-log-requests", "access log line per request (default)");
  a.flag("disable-uvicorn-access-log", "no access log line per request");
  a.option("http-threads", "most HTTP worker threads, started on demand (default 1024)", "N");
  a.option("max-queue-wait-s", "answer 503 with Retry-After, instead of queueing, a request the engine queue would keep "
           "waiting longer than this many seconds (estimated; default 0: off, every request is queued)", "S");
  a.option("listen-backlog", "connections the kernel queues for accepting (default: the system maximum, "
           "net.core.somaxconn; vLLM's uvicorn takes 2048)", "N");
  a.option("max-document-pages", "most pages one /v1/ocr request may select (default 200)", "N");
  a.option("max-body-bytes", "largest request body (default 64MiB)", "BYTES");
  a.option("max-image-pixels", "largest decoded image in pixels (default 178956970, as Pillow)", "N");
  a.option("max-request-image-pixels",
           "most decoded pixels of all images of one request, and of one /v1/ocr page (default 50000000)", "N");
  a.option("max-decode-bytes",
           "server-wide memory for image decoding at once; requests wait their turn (default 512MiB)", "BYTES");
  a.option("max-choices-per-request", "most prompts x n in one request (default 1024)", "N");
  a.option("ocr-pages-in-flight", "pages of one /v1/ocr request rendered and in the engine at once (default 8)", "N");
  a.option("max-ocr-request-bytes", "estimated memory one /v1/ocr request may hold (default 256MiB)", "BYTES");
  a.option("jobs-dir", "directory keeping the async OCR jobs (/v1/ocr/jobs) across restarts (default: a temporary "
           "one removed at exit)", "DIR");
  a.option("max-jobs", "most OCR jobs stored at once, any status (default 1000; more: 429)", "N");
  a.option("max-jobs-bytes", "most bytes the OCR jobs' documents and results take on disk (default 10GiB)", "BYTES");
  a.option("job-ttl", "seconds a finished OCR job is kept before it is deleted (default 86400)", "S");
  a.option("max-running-jobs", "OCR jobs generating at once, the others queued in submission order (default 1)", "N");
  a.option("max-header-bytes", "largest request line + headers; 431 past it (default 64KiB)", "BYTES");
  a.option("max-headers", "most header fields in a request; 431 past it (default 100)", "N");
  a.option("read-timeout", "seconds to wait for a client's request bytes (default 60)", "S");
  a.option("write-timeout", "seconds a response write may block on a slow client (default 60)", "S");
  a.option("keep-alive-timeout", "seconds an idle keep-alive connection stays open (default 5)", "S");
  add_forced_output_option(a);
  a.option("debug-fail-step", "TESTING ONLY: the N-th decoder step throws, as an internal error would (its requests "
           "end with an error, the server goes on)", "N");
  a.option("debug-fail-vision", "TESTING ONLY: the N-th vision encoding throws (that request ends with an error)", "N");
  a.flag("ui", "serve the web page at / to OCR documents in a browser (default on; --no-ui turns it off)");
  a.option("root-path", "the path prefix a reverse proxy serves locr under (e.g. /ocr): the web page builds its URLs "
           "from it, and requests that still carry it are routed without it", "PATH");
  a.option("allowed-origins", "CORS: JSON list of origins allowed (default [\"*\"])", "JSON");
  a.option("allowed-methods", "CORS: JSON list of methods allowed (default [\"*\"])", "JSON");
  a.option("allowed-headers", "CORS: JSON list of request headers allowed (default [\"*\"])", "JSON");
  a.flag("allow-credentials", "CORS: Access-Control-Allow-Credentials: true");
  a.option("ssl-keyfile", "serve HTTPS: the PEM private key (with --ssl-certfile)", "FILE");
  a.option("ssl-certfile", "serve HTTPS: the PEM certificate (chain)", "FILE");
  a.option("ssl-ca-certs", "HTTPS: CA file client certificates are checked against", "FILE");
  a.option("ssl-cert-reqs", "HTTPS: client certificate 0 not asked (default), 1 optional, 2 required", "N");
  a.option("ssl-ciphers", "HTTPS: OpenSSL cipher list for TLS 1.2", "LIST");
  a.option("max-log-len", "most characters of a prompt (debug log) or note (access log) logged (default: all)", "N");
  a.option("response-role", "the role of chat responses (default assistant)", "ROLE");
  a.option("speculative-config", "speculative decoding, vLLM's JSON: {\"method\": \"ngram\" or \"text-layer\", "
           "\"num_speculative_tokens\": K (1-16), \"prompt_lookup_max\": N, \"prompt_lookup_min\": M}; greedy output "
           "unchanged, sampled output the same distribution (docs/api.md)", "JSON");
  a.option("default-chat-template-kwargs", "JSON object of chat template variables every chat request starts from, "
           "e.g. '{\"enable_thinking\": false}'; a request's chat_template_kwargs are set over them", "JSON");
  a.option("override-generation-config", "JSON merged over the generation defaults, e.g. '{\"temperature\": 0.2}'",
           "JSON");
  a.option("uvicorn-log-level", "log level: critical, error, warning, info (default), debug, trace", "LEVEL");
  a.option("disable-access-log-for-endpoints", "comma-separated paths whose requests are not access-logged, e.g. "
           "/health,/metrics", "PATHS");
  a.option("shutdown-timeout", "seconds in-flight requests may take to finish on SIGTERM (default 30)", "S");
  declare_vllm_compat(a);
}


Serving::~Serving() {
  if (engine) engine->shutdown(false);
  ctx.reset();
  engine.reset();
}

std::unique_ptr<Serving> open_serving(const Args& a) {
  if (a.has("uvicorn-log-level")) {
    // vLLM's uvicorn log level, as the level of locr's one log (which is uvicorn's and vLLM's).
    const std::string l = a.get("uvicorn-log-level");
    if (l == "critical" || l == "error") set_log_level(LogLevel::kError);
    else if (l == "warning") set_log_level(LogLevel::kWarn);
    else if (l == "info") set_log_level(LogLevel::kInfo);
    else if (l == "debug" || l == "trace") set_log_level(LogLevel::kDebug);
    else fail(ErrorKind::kInvalidArgument, "--uvicorn-log-level must be critical, error, warning, info, debug or trace, "
              "got '", l, "'");
  }
  // The device: --backend wins, else --device (auto: a usable GPU when built with CUDA). The default
  // stays cpu until the CUDA path has run on a GPU (it compiles and its tests skip without one).
  const std::string device = a.get("device", "cpu");
  if (device != "auto" && device != "cpu" && device != "cuda")
    fail(ErrorKind::kInvalidArgument, "--device must be auto, cpu or cuda, got '", device, "'");
  bool on_cuda = device == "cuda";
  if (a.has("backend")) on_cuda = a.get("backend") == "cuda";
  else if (device == "auto") {
    // A usable GPU and a model the CUDA kernels take (the tiny test fixtures have head_dim < 64).
    std::string why;
    on_cuda = kernels::cuda_usable(&why);
    const std::string mdir = a.get("model", a.get("MODEL"));
    if (on_cuda && is_qwen35_model(mdir)) {
      on_cuda = false;
      why = "the Qwen3.5 family's CUDA executor has not run on a GPU yet; --device cuda selects it";
    }
    if (on_cuda && std::filesystem::is_regular_file(std::filesystem::path(mdir) / "config.json") &&
        !runtime::cuda_supports(model::ModelConfig::from_file((std::filesystem::path(mdir) / "config.json").string()), &why))
      on_cuda = false;
    LOCR_INFO("serve: --device auto: ", on_cuda ? "cuda" : "cpu", on_cuda ? std::string() : " (" + why + ")");
  } else if (device == "cpu" && kernels::cuda_usable()) {
    LOCR_INFO("serve: a CUDA GPU is usable; --device cuda (or auto) runs on it. The CUDA path is new and has not "
              "yet been validated on hardware, so the default stays cpu");
  }
  bool cuda_graphs = true;

  // Flags that cannot be honoured, then those that mean nothing here (apps/vllm_compat.cc); some
  // of those mean something on CUDA.
  std::set<std::string> handled;
  if (a.has("compilation-config")) {
    nlohmann::json parsed;
    try {
      parsed = nlohmann::json::parse(a.get("compilation-config"));
    } catch (const std::exception&) {
      // vLLM's -O3 / --compilation-config 3: an optimisation level.
      const std::string v = a.get("compilation-config");
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
        fail(ErrorKind::kInvalidArgument, "--compilation-config expects JSON or a level, got '", v, "'");
    }
    if (on_cuda) {
      // vLLM's cudagraph_mode: NONE turns graphs off; FULL_DECODE_ONLY (and the FULL /
      // PIECEWISE modes, which include decode) capture decode-only steps, as locr does.
      const nlohmann::json mode = parsed.is_object() ? parsed.value("cudagraph_mode", nlohmann::json()) : nlohmann::json();
      if (mode.is_string()) {
        const std::string m = mode.get<std::string>();
        if (m == "NONE") cuda_graphs = false;
        else if (m != "FULL_DECODE_ONLY" && m != "FULL" && m != "PIECEWISE" && m != "FULL_AND_PIECEWISE")
          fail(ErrorKind::kInvalidArgument, "--compilation-config: unknown cudagraph_mode '", m, "'");
      }
      LOCR_INFO("serve: CUDA graphs for decode-only steps ", cuda_graphs ? "on" : "off");
      handled.insert("compilation-config");
    }
  }
  // --kv-cache-dtype auto | bfloat16 | fp8 | fp8_e4m3 (model/kv_cache_dtype.h), on every backend.
  std::string kv_cache_dtype;
  if (a.has("kv-cache-dtype")) {
    kv_cache_dtype = a.get("kv-cache-dtype");
    model::parse_kv_cache_dtype(kv_cache_dtype);  // a bad value fails before the weights load
    handled.insert("kv-cache-dtype");
  }
  // --quantization q8_0|q4_k|q4_k_m quantizes the weights at load (model/quantize_matrix.h), and so does
  // vLLM's fp8 (online 8-bit weights: Q8_0 here); vLLM's other methods (awq, gptq, ...) name checkpoint
  // formats locr does not read and stay a note.
  std::string quantization;
  if (a.has("quantization")) {
    std::string v = a.get("quantization");
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (v == "q8_0" || v == "q4_k" || v == "q4_k_m" || v == "fp8") {
      quantization = v;
      handled.insert("quantization");
    }
  }
  if (on_cuda && a.get_flag("enforce-eager")) {
    cuda_graphs = false;
    LOCR_INFO("serve: --enforce-eager: no CUDA graphs");
    handled.insert("enforce-eager");
  }
  check_vllm_compat(a, handled);

  const std::string spec = a.get("model", a.get("MODEL"));
  if (spec.empty()) fail(ErrorKind::kInvalidArgument, "give the model: locr serve MODEL (a directory or a hub repo id)");
  // A directory as is; ORG/NAME (as vllm serve takes it) from the Hugging Face cache, pulled when
  // missing (HF_HUB_OFFLINE=1: the cache only): the same function as `locr ocr --model`.
  // A text GGUF (`*.gguf`, not a directory) is loaded as it is (LightOnOcr::load names a missing file).
  const bool gguf = is_gguf_path(spec) && !std::filesystem::is_directory(spec);
  const std::string dir = model_path(spec);
  if (!gguf && !std::filesystem::is_directory(dir))
    fail(ErrorKind::kNotFound, "model directory '", dir, "' does not exist (give a model directory or a hub repo id "
                                                         "ORG/NAME)");
  if (a.has("tokenizer") && a.get("tokenizer") != spec &&
      std::filesystem::weakly_canonical(a.get("tokenizer")) != std::filesystem::weakly_canonical(dir))
    fail(ErrorKind::kUnsupported, "--tokenizer must be the model directory; a separate tokenizer is not supported");
  const std::string gen_mode = a.get("generation-config", "auto");
  if (gen_mode != "auto" && gen_mode != "vllm")
    fail(ErrorKind::kUnsupported, "--generation-config must be 'auto' or 'vllm', got '", gen_mode, "'");

  server::ServerOptions so;
  so.host = a.get("host", "0.0.0.0");
  so.port = a.get_int("port", 8000);
  if (so.port < 0 || so.port > 65535) fail(ErrorKind::kInvalidArgument, "--port must be in [0, 65535]");
  so.served_model_names = a.get_all("served-model-name");
  if (so.served_model_names.empty()) so.served_model_names.push_back(spec);  // as vLLM: the name as given
  so.model_path = dir;
  so.version = LOCR_VERSION_STRING;
  // vLLM's --api-key takes several keys; any of them is accepted.
  const std::vector<std::string> keys = a.get_all("api-key");
  so.api_key = server::resolve_api_key(keys.empty() ? std::nullopt : std::optional<std::string>(keys.front()));
  for (size_t i = 1; i < keys.size(); ++i)
    if (!keys[i].empty()) so.extra_api_keys.push_back(keys[i]);
  if (!so.api_key.empty())
    LOCR_INFO("serve: API key required on /v1/*, /tokenize and /detokenize (from ",
              a.has("api-key") ? "--api-key" : "VLLM_API_KEY", ")");
  if (a.has("limit-mm-per-prompt")) so.limit_images = image_limit(a.get("limit-mm-per-prompt"));
  so.allowed_local_media_path = a.get("allowed-local-media-path");
  if (!so.allowed_local_media_path.empty() && !std::filesystem::is_directory(so.allowed_local_media_path))
    fail(ErrorKind::kInvalidArgument, "--allowed-local-media-path '", so.allowed_local_media_path, "' is not a directory");
  so.allowed_media_domains = split_list(a.get_all("allowed-media-domains"));
  so.use_generation_config = gen_mode == "auto";
  {
    const std::string seed = a.get("seed", "0");
    char* end = nullptr;
    so.seed = std::strtoull(seed.c_str(), &end, 10);
    if (seed.empty() || *end) fail(ErrorKind::kInvalidArgument, "--seed expects a non-negative integer, got '", seed, "'");
  }
  so.max_logprobs = a.get_int("max-logprobs", 20);
  so.loop_guard.enabled = a.get_flag("loop-guard", true);
  so.loop_guard.window = a.get_int("loop-guard-window", so.loop_guard.window);
  so.loop_guard.max_distinct = a.get_int("loop-guard-max-distinct", so.loop_guard.max_distinct);
  if (so.loop_guard.window < so.loop_guard.ngram || so.loop_guard.max_distinct < 1)
    fail(ErrorKind::kInvalidArgument, "--loop-guard-window must be >= ", so.loop_guard.ngram,
         " and --loop-guard-max-distinct >= 1");
  so.access_log = !a.get_flag("disable-log-requests") && !a.get_flag("disable-uvicorn-access-log");
  so.http_threads = a.get_int("http-threads", so.http_threads);
  so.max_queue_wait_s = a.get_double("max-queue-wait-s", 0);
  if (!(so.max_queue_wait_s >= 0)) fail(ErrorKind::kInvalidArgument, "--max-queue-wait-s must be >= 0 (0: off)");
  so.listen_backlog = a.get_int("listen-backlog", 0);
  if (so.listen_backlog < 0) fail(ErrorKind::kInvalidArgument, "--listen-backlog must be >= 1 (0: the system maximum)");
  if (so.listen_backlog > server::system_listen_backlog())
    LOCR_WARN("note: --listen-backlog ", so.listen_backlog, " is more than the system allows (net.core.somaxconn = ",
              server::system_listen_backlog(), "); the kernel uses ", server::system_listen_backlog());
  if (a.has("max-body-bytes")) so.max_body_bytes = server::parse_size(a.get("max-body-bytes"), "--max-body-bytes");
  if (a.has("max-image-pixels")) so.max_image_pixels = server::parse_size(a.get("max-image-pixels"), "--max-image-pixels");
  if (a.has("max-request-image-pixels"))
    so.max_request_image_pixels = server::parse_size(a.get("max-request-image-pixels"), "--max-request-image-pixels");
  if (a.has("max-decode-bytes")) so.max_decode_bytes = server::parse_size(a.get("max-decode-bytes"), "--max-decode-bytes");
  if (a.has("max-ocr-request-bytes"))
    so.max_ocr_request_bytes = server::parse_size(a.get("max-ocr-request-bytes"), "--max-ocr-request-bytes");
  if (a.has("max-header-bytes")) so.max_header_bytes = server::parse_size(a.get("max-header-bytes"), "--max-header-bytes");
  so.max_choices = a.get_int("max-choices-per-request", so.max_choices);
  so.ocr_pages_in_flight = a.get_int("ocr-pages-in-flight", so.ocr_pages_in_flight);
  so.max_headers = a.get_int("max-headers", so.max_headers);
  if (so.max_request_image_pixels < 1 || so.max_decode_bytes < 1 || so.max_ocr_request_bytes < 1 || so.max_choices < 1 ||
      so.ocr_pages_in_flight < 1 || so.max_header_bytes < 1024 || so.max_headers < 8)
    fail(ErrorKind::kInvalidArgument, "--max-request-image-pixels, --max-decode-bytes, --max-ocr-request-bytes, "
         "--max-choices-per-request and --ocr-pages-in-flight must be >= 1, --max-header-bytes >= 1024 and "
         "--max-headers >= 8");
  so.jobs_dir = a.get("jobs-dir");
  so.max_jobs = a.get_int("max-jobs", so.max_jobs);
  if (a.has("max-jobs-bytes")) so.max_jobs_bytes = server::parse_size(a.get("max-jobs-bytes"), "--max-jobs-bytes");
  so.job_ttl_s = a.get_double("job-ttl", so.job_ttl_s);
  so.max_running_jobs = a.get_int("max-running-jobs", so.max_running_jobs);
  if (so.max_jobs < 1 || so.max_jobs_bytes < 1 || !(so.job_ttl_s > 0) || so.max_running_jobs < 1)
    fail(ErrorKind::kInvalidArgument, "--max-jobs, --max-jobs-bytes and --max-running-jobs must be >= 1 and --job-ttl > 0");
  so.max_document_pages = a.get_int("max-document-pages", so.max_document_pages);
  if (so.max_document_pages < 1) fail(ErrorKind::kInvalidArgument, "--max-document-pages must be >= 1");
  so.read_timeout_s = a.get_int("read-timeout", so.read_timeout_s);
  so.write_timeout_s = a.get_int("write-timeout", so.write_timeout_s);
  so.keep_alive_timeout_s = a.get_int("keep-alive-timeout", so.keep_alive_timeout_s);
  so.shutdown_timeout_s = a.get_double("shutdown-timeout", so.shutdown_timeout_s);
  so.ui = a.get_flag("ui", true);
  so.root_path = server::normalize_root_path(a.get("root-path"));
  if (a.has("allowed-origins")) so.cors.origins = server::parse_cors_list(a.get("allowed-origins"), "allowed-origins");
  if (a.has("allowed-methods")) so.cors.methods = server::parse_cors_list(a.get("allowed-methods"), "allowed-methods");
  if (a.has("allowed-headers")) so.cors.headers = server::parse_cors_list(a.get("allowed-headers"), "allowed-headers");
  so.cors.credentials = a.get_flag("allow-credentials");
  so.tls.keyfile = a.get("ssl-keyfile");
  so.tls.certfile = a.get("ssl-certfile");
  so.tls.ca_certs = a.get("ssl-ca-certs");
  so.tls.cert_reqs = a.get_int("ssl-cert-reqs", 0);
  so.tls.ciphers = a.get("ssl-ciphers");
  if (so.tls.keyfile.empty() != so.tls.certfile.empty())
    fail(ErrorKind::kInvalidArgument, "HTTPS needs both --ssl-keyfile and --ssl-certfile");
  if (!so.tls.enabled() && (a.has("ssl-ca-certs") || a.has("ssl-cert-reqs") || a.has("ssl-ciphers")))
    fail(ErrorKind::kInvalidArgument, "--ssl-ca-certs, --ssl-cert-reqs and --ssl-ciphers need --ssl-keyfile and --ssl-certfile");
  if (so.tls.enabled()) server::TlsContext check_early(so.tls);  // a bad key or certificate stops start-up before loading
  so.max_log_len = a.get_int("max-log-len", -1);
  if (so.max_log_len < -1) fail(ErrorKind::kInvalidArgument, "--max-log-len must be >= 0");
  so.response_role = a.get("response-role", "assistant");
  if (so.response_role.empty()) fail(ErrorKind::kInvalidArgument, "--response-role must not be empty");
  if (a.has("override-generation-config")) {
    try {
      so.override_generation_config = nlohmann::json::parse(a.get("override-generation-config"));
    } catch (const std::exception&) {
      fail(ErrorKind::kInvalidArgument, "--override-generation-config expects a JSON object such as "
           "'{\"temperature\": 0.2}', got '", a.get("override-generation-config"), "'");
    }
    if (!so.override_generation_config.is_object())
      fail(ErrorKind::kInvalidArgument, "--override-generation-config expects a JSON object");
  }
  if (a.has("speculative-config")) {
    so.speculative = speculative_flag(a);
    if (so.speculative.enabled())
      LOCR_INFO("serve: speculative decoding: ", so.speculative.method_name(), ", up to ",
                so.speculative.num_speculative_tokens, " draft tokens per step");
  }
  if (a.has("default-chat-template-kwargs")) {
    try {
      so.default_chat_template_kwargs = nlohmann::json::parse(a.get("default-chat-template-kwargs"));
    } catch (const std::exception&) {
    }
    if (!so.default_chat_template_kwargs.is_object())
      fail(ErrorKind::kInvalidArgument, "--default-chat-template-kwargs expects a JSON object such as "
           "'{\"enable_thinking\": false}', got '", a.get("default-chat-template-kwargs"), "'");
  }
  for (const auto& path : split_list({a.get("disable-access-log-for-endpoints")})) so.access_log_skip_paths.push_back(path);

  ThreadPool::set_global_threads(a.get_int("threads", 0));
  model::LoadOptions lo;
  const std::string dtype = a.get("dtype", "auto");
  std::string backend = "cpu-bf16";
  if (dtype == "float32" || dtype == "float" || dtype == "f32") backend = "cpu-f32";
  else if (dtype == "float16" || dtype == "half") LOCR_INFO("note: --dtype ", dtype, " runs as bfloat16 on this backend");
  else if (dtype != "auto" && dtype != "bfloat16" && dtype != "bf16")
    fail(ErrorKind::kInvalidArgument, "--dtype must be auto, bfloat16 or float32, got '", dtype, "'");
  if (on_cuda) {
    backend = "cuda";
    if (dtype == "float32" || dtype == "float" || dtype == "f32")
      LOCR_INFO("note: --dtype ", dtype, " on CUDA: BF16 weights and activations, FP32 accumulation and residual");
  }
  lo.backend = a.get("backend", backend);
  lo.chat_template_file = chat_template_file(a.get("chat-template"));
  lo.image_align = a.get_int("image-align", 28);
  lo.quantization = quantization;
  lo.kv_cache_dtype = kv_cache_dtype;
  if (lo.image_align != 28 && lo.image_align != 14) fail(ErrorKind::kInvalidArgument, "--image-align must be 28 or 14");
  lo.mmproj = a.get("mmproj");
  std::unique_ptr<model::Model> model = load_model_at(dir, lo);  // either architecture (config.json)
  so.debug_forced_ids = forced_output_ids(a, *model);
  if (so.speculative.enabled() && model->state_bytes_per_sequence() > 0) {
    LOCR_WARN("serve: --speculative-config has no effect on this model (", model->architecture(),
              "): its recurrent state cannot take back rejected drafts; requests decode one token per step");
    so.speculative = {};
  }
  if (lo.chat_template_file != a.get("chat-template")) std::filesystem::remove(lo.chat_template_file);  // inline text

  runtime::EngineOptions eo;
  eo.max_num_seqs = a.has("max-num-seqs") ? parse_count(a.get("max-num-seqs"), "max-num-seqs") : eo.max_num_seqs;
  eo.max_num_batched_tokens = a.has("max-num-batched-tokens")
                                  ? parse_count(a.get("max-num-batched-tokens"), "max-num-batched-tokens")
                                  : eo.max_num_batched_tokens;
  const int model_max = model->max_position_embeddings();
  eo.max_model_len = a.has("max-model-len") ? parse_count(a.get("max-model-len"), "max-model-len") : model_max;
  if (eo.max_model_len > model_max)
    fail(ErrorKind::kInvalidArgument, "--max-model-len ", eo.max_model_len, " is more than the model's ", model_max,
         " (max_position_embeddings)");
  eo.block_size = a.get_int("block-size", eo.block_size);
  if (eo.max_num_seqs < 1 || eo.max_num_batched_tokens < 1 || eo.max_model_len < 2 || eo.block_size < 1)
    fail(ErrorKind::kInvalidArgument, "--max-num-seqs, --max-num-batched-tokens, --block-size must be >= 1 and "
                                      "--max-model-len >= 2");
  eo.enable_prefix_caching = a.get_flag("enable-prefix-caching", true);
  eo.vision_lane = a.get_flag("vision-lane", false);
  for (const char* k : {"debug-fail-step", "debug-fail-vision"}) {
    if (!a.has(k)) continue;
    const int64_t n = parse_count(a.get(k), k);
    (std::string(k) == "debug-fail-step" ? eo.debug_fail_step : eo.debug_fail_vision) = n;
    LOCR_WARN("debug: --", k, " ", n, ": a fault is injected into the engine (testing only)");
  }
  int64_t kv_memory = -1;
  if (a.has("kv-cache-memory")) kv_memory = server::parse_size(a.get("kv-cache-memory"), "--kv-cache-memory");
  if (a.has("kv-cache-memory-bytes"))
    kv_memory = server::parse_size(a.get("kv-cache-memory-bytes"), "--kv-cache-memory-bytes");
  if (lo.backend == "cuda") {
    // Device memory: the CUDA executor sizes the pool once the weights are on the GPU.
    eo.kv_cache_bytes = kv_memory;  // -1: from --gpu-memory-utilization of the device
    eo.gpu_memory_utilization = a.get_double("gpu-memory-utilization", 0.9);
    eo.cuda_graphs = cuda_graphs;
    if (kv_memory < 0 && !(eo.gpu_memory_utilization > 0 && eo.gpu_memory_utilization <= 1))
      fail(ErrorKind::kInvalidArgument, "--gpu-memory-utilization must be in (0, 1], got ", eo.gpu_memory_utilization);
  } else {
    const server::MemoryPlan plan =
        server::plan_memory(*model, eo, dir, a.get_double("gpu-memory-utilization", 0.9), kv_memory);
    eo.kv_cache_bytes = plan.kv_bytes;
    LOCR_INFO("serve: ", plan.explain());
  }

  if (lo.backend == "cuda") {
    so.device = "cuda";
  } else {
    const char* isa = std::getenv("LOCR_CPU_ISA");
    so.device = str(lo.backend, " (", isa && *isa ? isa : kernels::cpu_isa_name(kernels::cpu_best_isa()), ", ",
                    ThreadPool::global().size(), " threads)");
  }
  auto s = std::make_unique<Serving>();
  s->model = std::move(model);
  s->engine = std::make_unique<runtime::Engine>(*s->model, eo);
  s->ctx = std::make_unique<server::ServerContext>(*s->model, *s->engine, so);
  return s;
}

}  // namespace locr::app
