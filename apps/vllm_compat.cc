#include "apps/vllm_compat.h"

#include <cstdlib>

#include "core/error.h"
#include "core/log.h"

namespace locr::app {

namespace {

enum class Takes { kFlag, kValue, kValues, kOptional };

struct NoEffect {
  const char* name;
  Takes takes;
  const char* why;
  // --help text of a flag that some values make do something (the front end handles those); by
  // default "accepted for vLLM compatibility; no effect".
  const char* help = nullptr;
};

// vLLM flags (vllm/entrypoints/openai/cli_args.py, vllm/engine/arg_utils.py) that mean nothing here.
const NoEffect kNoEffect[] = {
    // Frontend.
    {"chat-template-content-format", Takes::kValue, "the chat template is given the message content as sent"},
    {"trust-request-chat-template", Takes::kFlag, "the server's chat template is always used"},
    {"return-tokens-as-token-ids", Takes::kFlag, "a request asks for it with return_tokens_as_token_ids"},
    {"enable-auto-tool-choice", Takes::kFlag, "the OCR model calls no tools; tool_calls is always empty"},
    {"exclude-tools-when-tool-choice-none", Takes::kFlag, "tools are never put in the prompt"},
    {"tool-call-parser", Takes::kValue, "the OCR model calls no tools"},
    {"tool-parser-plugin", Takes::kValue, "no Python plugin is ever loaded"},
    {"tool-server", Takes::kValue, "there is no /v1/responses tool loop"},
    {"log-config-file", Takes::kValue, "logs go to stderr; LOCR_LOG_LEVEL or --uvicorn-log-level set the level"},
    {"enable-prompt-tokens-details", Takes::kFlag, "usage.prompt_tokens_details stays null"},
    {"enable-per-request-metrics", Takes::kFlag, "per-request timings are in /metrics and the access log"},
    {"enable-server-load-tracking", Takes::kFlag, "the load is in /metrics (vllm:num_requests_running/_waiting)"},
    {"enable-force-include-usage", Takes::kFlag, "usage is in every non-streamed response; streams send it on stream_options.include_usage"},
    {"enable-tokenizer-info-endpoint", Takes::kFlag, "there is no /tokenizer_info endpoint"},
    {"enable-log-outputs", Takes::kFlag, "outputs are never logged; the access log has the token counts"},
    {"enable-log-deltas", Takes::kFlag, "outputs are never logged"},
    {"cohere-is-reasoning-model", Takes::kFlag, "there is no /cohere endpoint"},
    {"cohere-format", Takes::kValue, "there is no /cohere endpoint"},
    {"log-error-stack", Takes::kFlag, "errors are logged as one line, without a stack"},
    {"tokens-only", Takes::kFlag, "every endpoint stays on"},
    {"fingerprint-mode", Takes::kValue, "responses carry no system_fingerprint"},
    {"fingerprint-value", Takes::kValue, "responses carry no system_fingerprint"},
    {"data-parallel-supervisor-port", Takes::kValue, "one process serves the model"},
    {"dp-supervisor-probe-interval-s", Takes::kValue, "one process serves the model"},
    {"dp-supervisor-probe-timeout-s", Takes::kValue, "one process serves the model"},
    {"dp-supervisor-probe-failure-threshold", Takes::kValue, "one process serves the model"},
    {"enable-ssl-refresh", Takes::kFlag, "certificates are read at start-up; restart to load new ones"},
    {"enable-request-id-headers", Takes::kFlag, "X-Request-Id is always sent"},
    {"disable-fastapi-docs", Takes::kFlag, "there are no /docs, /redoc or /openapi.json pages"},
    {"enable-offline-docs", Takes::kFlag, "there are no /docs pages"},
    {"h11-max-incomplete-event-size", Takes::kValue, "see --max-header-bytes and --max-body-bytes"},
    {"h11-max-header-count", Takes::kValue, "see --max-headers"},
    {"enable-flash-late-interaction", Takes::kFlag, "there is no pooling / score endpoint"},
    {"api-server-count", Takes::kValue, "the HTTP front is multi-threaded in one process (--http-threads)"},
    // Model.
    {"hf-config-path", Takes::kValue, "config.json is read from MODEL"},
    {"code-revision", Takes::kValue, "no Python code is ever run"},
    {"rope-scaling", Takes::kValue, "LightOnOCR's rope is fixed by config.json"},
    {"rope-theta", Takes::kValue, "LightOnOCR's rope is fixed by config.json"},
    {"tokenizer-revision", Takes::kValue, "MODEL must be a local directory"},
    {"quantization", Takes::kValue, "only q8_0, q4_k, q4_k_m and fp8 (quantized at load) are supported; the weights run as stored",
     "q8_0, q4_k or q4_k_m: quantize the weights at load (GGUF Q8_0 / Q4_K / llama.cpp's Q4_K_M mix); "
     "fp8 (vLLM's online 8-bit weights) quantizes them to Q8_0; vLLM's other methods (awq, gptq, ...) are "
     "accepted and have no effect"},
    {"trust-remote-code", Takes::kFlag, "no Python code is ever run; LightOnOCR is built in"},
    {"enforce-eager", Takes::kFlag, "there are no CUDA graphs on CPU"},
    {"logprobs-mode", Takes::kValue, "logprobs are those of the processed (sampled-from) distribution"},
    {"disable-sliding-window", Takes::kFlag, "LightOnOCR has no sliding window"},
    {"disable-cascade-attn", Takes::kFlag, "there is no cascade attention"},
    {"skip-tokenizer-init", Takes::kFlag, "the tokenizer is needed for chat requests and is loaded"},
    {"enable-prompt-embeds", Takes::kFlag, "prompts are text or token ids; prompt_embeds is not read"},
    {"config-format", Takes::kValue, "config.json is read in the Hugging Face format"},
    {"hf-token", Takes::kOptional, "MODEL must be a local directory; nothing is downloaded"},
    {"hf-overrides", Takes::kValue, "config.json is used as it is"},
    {"pooler-config", Takes::kValue, "there is no pooling runner"},
    {"override-pooler-config", Takes::kValue, "there is no pooling runner"},
    {"logits-processor-pattern", Takes::kValue, "no Python logits processor is ever loaded"},
    {"enable-sleep-mode", Takes::kFlag, "there is no /sleep endpoint"},
    {"model-impl", Takes::kValue, "LightOnOCR is implemented in locr itself"},
    {"override-attention-dtype", Takes::kValue, "attention runs in the kernels' precision (see --dtype)"},
    {"logits-processors", Takes::kValues, "no Python logits processor is ever loaded"},
    {"io-processor-plugin", Takes::kValue, "no Python plugin is ever loaded"},
    {"revision", Takes::kValue, "MODEL must be a local directory"},
    {"tokenizer-mode", Takes::kValue, "the tokenizer is tokenizer.json"},
    // Load.
    {"download-dir", Takes::kValue, "MODEL must be a local directory"},
    {"safetensors-load-strategy", Takes::kValue, "safetensors files are memory-mapped"},
    {"model-loader-extra-config", Takes::kValue, "safetensors files are memory-mapped"},
    {"ignore-patterns", Takes::kValues, "only the *.safetensors files the index names are read"},
    {"use-tqdm-on-load", Takes::kFlag, "loading logs one line"},
    {"pt-load-map-location", Takes::kValue, "PyTorch checkpoints are not read"},
    // Structured outputs.
    {"reasoning-parser", Takes::kValue, "the OCR model does not reason"},
    {"guided-decoding-backend", Takes::kValue, "structured outputs (guided decoding) are refused per request"},
    {"guided-decoding-disable-fallback", Takes::kValue, "structured outputs are refused per request"},
    {"guided-decoding-disable-any-whitespace", Takes::kValue, "structured outputs are refused per request"},
    {"guided-decoding-disable-additional-properties", Takes::kValue, "structured outputs are refused per request"},
    {"structured-outputs-config", Takes::kValue, "structured outputs are refused per request"},
    // Parallel.
    {"distributed-executor-backend", Takes::kValue, "one process serves the model"},
    {"data-parallel-address", Takes::kValue, "one process serves the model"},
    {"data-parallel-rpc-port", Takes::kValue, "one process serves the model"},
    {"data-parallel-backend", Takes::kValue, "one process serves the model"},
    {"data-parallel-hybrid-lb", Takes::kFlag, "one process serves the model"},
    {"enable-expert-parallel", Takes::kFlag, "LightOnOCR has no experts"},
    {"all2all-backend", Takes::kValue, "LightOnOCR has no experts"},
    {"enable-dbo", Takes::kFlag, "one process serves the model"},
    {"dbo-decode-token-threshold", Takes::kValue, "one process serves the model"},
    {"dbo-prefill-token-threshold", Takes::kValue, "one process serves the model"},
    {"disable-nccl-for-dp-synchronization", Takes::kFlag, "one process serves the model"},
    {"enable-eplb", Takes::kFlag, "LightOnOCR has no experts"},
    {"eplb-config", Takes::kValue, "LightOnOCR has no experts"},
    {"expert-placement-strategy", Takes::kValue, "LightOnOCR has no experts"},
    {"num-redundant-experts", Takes::kValue, "LightOnOCR has no experts"},
    {"eplb-window-size", Takes::kValue, "LightOnOCR has no experts"},
    {"eplb-step-interval", Takes::kValue, "LightOnOCR has no experts"},
    {"eplb-log-balancedness", Takes::kFlag, "LightOnOCR has no experts"},
    {"max-parallel-loading-workers", Takes::kValue, "the weights are memory-mapped by one process"},
    {"ray-workers-use-nsight", Takes::kFlag, "there are no Ray workers"},
    {"disable-custom-all-reduce", Takes::kFlag, "one process serves the model"},
    {"worker-cls", Takes::kValue, "no Python worker is ever loaded"},
    {"worker-extension-cls", Takes::kValue, "no Python worker is ever loaded"},
    {"enable-multimodal-encoder-data-parallel", Takes::kFlag, "one process serves the model"},
    {"disable-frontend-multiprocessing", Takes::kFlag, "one process serves the model"},
    // Cache.
    {"swap-space", Takes::kValue, "preempted sequences are recomputed, never swapped"},
    {"num-gpu-blocks-override", Takes::kValue, "see --kv-cache-memory-bytes"},
    {"prefix-caching-hash-algo", Takes::kValue, "prefix blocks are keyed by SHA-256 (vLLM's sha256)"},
    {"cpu-offload-gb", Takes::kValue, "the weights already live in host memory"},
    {"calculate-kv-scales", Takes::kFlag, "the FP8 KV cache computes a scale per token and kv head as it writes"},
    {"kv-sharing-fast-prefill", Takes::kFlag, "every layer has its own KV cache"},
    {"mamba-cache-dtype", Takes::kValue, "LightOnOCR has no Mamba layers"},
    {"mamba-ssm-cache-dtype", Takes::kValue, "LightOnOCR has no Mamba layers"},
    {"mamba-block-size", Takes::kValue, "LightOnOCR has no Mamba layers"},
    // Multimodal.
    {"enable-mm-embeds", Takes::kFlag, "images are sent as image_url; embeddings are not read"},
    {"media-io-kwargs", Takes::kValue, "images are decoded by locr's own decoders"},
    {"mm-processor-kwargs", Takes::kValue, "the image processor is fixed by preprocessor_config.json (see --image-align)"},
    {"mm-processor-cache-gb", Takes::kValue, "image preprocessing is not cached"},
    {"disable-mm-preprocessor-cache", Takes::kFlag, "image preprocessing is not cached"},
    {"mm-processor-cache-type", Takes::kValue, "image preprocessing is not cached"},
    {"mm-shm-cache-max-object-size-mb", Takes::kValue, "image preprocessing is not cached"},
    {"mm-encoder-tp-mode", Takes::kValue, "one process serves the model"},
    {"mm-encoder-attn-backend", Takes::kValue, "the vision encoder runs locr's own attention kernels"},
    {"interleave-mm-strings", Takes::kFlag, "text and image parts are kept in the order sent"},
    {"skip-mm-profiling", Takes::kFlag, "there is no profiling run at start-up"},
    {"video-pruning-rate", Takes::kValue, "the model reads images only"},
    // LoRA.
    {"enable-lora", Takes::kFlag, "no LoRA adapter is loaded (--lora-modules is refused)"},
    {"max-loras", Takes::kValue, "no LoRA adapter is loaded"},
    {"max-lora-rank", Takes::kValue, "no LoRA adapter is loaded"},
    {"lora-extra-vocab-size", Takes::kValue, "no LoRA adapter is loaded"},
    {"lora-dtype", Takes::kValue, "no LoRA adapter is loaded"},
    {"max-cpu-loras", Takes::kValue, "no LoRA adapter is loaded"},
    {"fully-sharded-loras", Takes::kFlag, "no LoRA adapter is loaded"},
    {"default-mm-loras", Takes::kValue, "no LoRA adapter is loaded"},
    // Observability.
    {"show-hidden-metrics-for-version", Takes::kValue, "no metric is hidden"},
    {"otlp-traces-endpoint", Takes::kValue, "no OpenTelemetry traces are exported"},
    {"collect-detailed-traces", Takes::kValues, "no OpenTelemetry traces are exported"},
    // Scheduler.
    {"max-num-partial-prefills", Takes::kValue, "prefills are chunked within --max-num-batched-tokens"},
    {"max-long-partial-prefills", Takes::kValue, "prefills are chunked within --max-num-batched-tokens"},
    {"long-prefill-token-threshold", Takes::kValue, "prefills are chunked within --max-num-batched-tokens"},
    {"num-lookahead-slots", Takes::kValue, "draft tokens are verified in the decode step itself (--speculative-config)"},
    {"scheduling-policy", Takes::kValue, "requests are scheduled first come, first served"},
    {"enable-chunked-prefill", Takes::kFlag, "chunked prefill is always on"},
    {"disable-chunked-mm-input", Takes::kFlag, "an image's tokens are prefilled as they come"},
    {"scheduler-cls", Takes::kValue, "no Python scheduler is ever loaded"},
    {"external-parameters", Takes::kValue, "no Python scheduler is ever loaded"},
    {"disable-hybrid-kv-cache-manager", Takes::kFlag, "there is one KV cache manager"},
    {"async-scheduling", Takes::kFlag, "the engine loop schedules the next step while the HTTP threads stream"},
    // Compilation and the rest.
    {"compilation-config", Takes::kValue, "there is no graph compiler; the CPU kernels run as they are (on CUDA: cudagraph_mode)"},
    {"cudagraph-capture-sizes", Takes::kValues, "there are no CUDA graphs on CPU; on CUDA decode graphs cover every batch size"},
    {"cuda-graph-sizes", Takes::kValues, "there are no CUDA graphs on CPU; on CUDA decode graphs cover every batch size"},
    {"max-cudagraph-capture-size", Takes::kValue, "on CUDA decode graphs cover every batch size"},
    {"max-seq-len-to-capture", Takes::kValue, "decode graphs cover every length up to --max-model-len"},
    {"kv-events-config", Takes::kValue, "no KV cache events are published"},
    {"additional-config", Takes::kValue, "there is no platform plugin"},
    {"disable-log-stats", Takes::kFlag, "engine statistics are not logged; they are in /metrics"},
    {"aggregate-engine-logging", Takes::kFlag, "one engine serves the model"},
};

struct Refused {
  const char* name;
  Takes takes;
  const char* allowed;  // comma-separated values that are accepted (for a flag: "false")
  const char* why;
};

const Refused kRefused[] = {
    {"tensor-parallel-size", Takes::kValue, "1", "locr runs one model replica in one process on one device"},
    {"pipeline-parallel-size", Takes::kValue, "1", "locr runs one model replica in one process on one device"},
    {"data-parallel-size", Takes::kValue, "1", "locr runs one model replica in one process on one device; run several locr serve behind a load balancer"},
    {"decode-context-parallel-size", Takes::kValue, "1", "locr runs one model replica in one process on one device"},
    {"data-parallel-size-local", Takes::kValue, "1", "locr runs one model replica in one process on one device"},
    {"data-parallel-rank", Takes::kValue, "0", "locr runs one model replica in one process on one device"},
    {"data-parallel-start-rank", Takes::kValue, "0", "locr runs one model replica in one process on one device"},
    {"headless", Takes::kFlag, "false", "locr always serves the API (there is no separate engine process)"},
    {"grpc", Takes::kFlag, "false", "locr serves HTTP only"},
    {"uds", Takes::kValue, "", "locr listens on TCP only (--host, --port)"},
    {"config", Takes::kValue, "", "flags are not read from a YAML file; pass them on the command line"},
    {"middleware", Takes::kValue, "", "no Python ASGI middleware can be loaded"},
    {"lora-modules", Takes::kValues, "", "LoRA adapters are not supported"},
    {"kv-transfer-config", Takes::kValue, "", "disaggregated prefill/decode is not supported: KV is never transferred"},
    {"task", Takes::kValue, "auto,generate", "LightOnOCR only generates text"},
    {"runner", Takes::kValue, "auto,generate", "LightOnOCR only generates text"},
    {"convert", Takes::kValue, "auto,none", "LightOnOCR only generates text"},
    {"load-format", Takes::kValue, "auto,safetensors", "the weights are read from *.safetensors"},
};

const std::pair<const char*, const char*> kAliases[] = {
    {"tp", "tensor-parallel-size"}, {"pp", "pipeline-parallel-size"}, {"dp", "data-parallel-size"},
    {"dcp", "decode-context-parallel-size"}, {"dpn", "data-parallel-rank"}, {"dpr", "data-parallel-start-rank"},
    {"dpl", "data-parallel-size-local"}, {"dpa", "data-parallel-address"}, {"dpp", "data-parallel-rpc-port"},
    {"dpb", "data-parallel-backend"}, {"q", "quantization"}, {"O", "compilation-config"}, {"asc", "api-server-count"},
};

void declare_one(Args& a, const char* name, Takes takes, const std::string& help) {
  switch (takes) {
    case Takes::kFlag: a.flag(name, help); break;
    case Takes::kValue: a.option(name, help, "VALUE"); break;
    case Takes::kValues: a.values(name, help, "VALUE"); break;
    case Takes::kOptional: a.optional_value(name, help, "true"); break;
  }
}

bool allowed(const std::string& value, const std::string& list) {
  // Integers compare by value (-tp 01 is 1); "None" and "" are vLLM's way to say "unset".
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  const bool numeric = !value.empty() && !*end;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    if (item == value) return true;
    if (numeric && !item.empty() && std::strtol(item.c_str(), nullptr, 10) == v) return true;
    start = comma + 1;
  }
  return list.empty() && (value.empty() || value == "None");
}

}  // namespace

void declare_vllm_compat(Args& a) {
  for (const auto& r : kRefused)
    declare_one(a, r.name, r.takes,
                *r.allowed ? str("accepted for vLLM compatibility; only ", r.allowed, " is possible") : "not supported");
  for (const auto& n : kNoEffect)
    declare_one(a, n.name, n.takes, n.help ? n.help : "accepted for vLLM compatibility; no effect");
  for (const auto& [s, name] : kAliases) a.alias(s, name);
}

void check_vllm_compat(const Args& a, const std::set<std::string>& handled) {
  for (const auto& r : kRefused) {
    if (!a.has(r.name)) continue;
    if (r.takes == Takes::kFlag) {
      if (a.get_flag(r.name)) fail(ErrorKind::kUnsupported, "--", r.name, " is not possible: ", r.why);
      continue;
    }
    for (const std::string& v : a.get_all(r.name))
      if (!allowed(v, r.allowed))
        fail(ErrorKind::kUnsupported, "--", r.name, " ", v, " is not possible: ", r.why,
             *r.allowed ? str(" (accepted: ", r.allowed, ")") : std::string());
  }
  for (const auto& n : kNoEffect)
    if (a.has(n.name) && !handled.count(n.name)) LOCR_INFO("note: --", n.name, " has no effect in locr: ", n.why);
}

}  // namespace locr::app
