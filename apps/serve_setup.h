// `locr serve`'s flags and what they set up: the model (device, dtype, quantization, KV cache type,
// chat template), the engine (max-num-seqs, max-model-len, KV pool from --gpu-memory-utilization
// or --kv-cache-memory, prefix caching) and the server context (every ServerOptions field: media,
// limits, generation defaults, loop guard). vLLM's flags that have no effect here are noted once
// each, those that cannot be honoured refused (apps/vllm_compat.h). `locr serve` adds HTTP and
// signals; the Python package (python/src) drives the same context in-process.
#pragma once

#include <memory>

#include "apps/args.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/speculative.h"
#include "server/server_context.h"

namespace locr::app {

void declare_serve_options(Args& a);
// --speculative-config JSON (vLLM's form), parsed; off when not given. Throws on bad JSON or fields.
runtime::SpeculativeConfig speculative_flag(const Args& a);

struct Serving {
  std::unique_ptr<model::Model> model;  // model::LightOnOcr or model::qwen35::Model (config.json)
  std::unique_ptr<runtime::Engine> engine;
  std::unique_ptr<server::ServerContext> ctx;
  ~Serving();  // aborts what is still in flight, then frees context, engine and model in that order
};

// Loads and starts everything the parsed flags describe. Throws locr::Error naming the flag on bad
// values, a missing model, a refused vLLM flag.
std::unique_ptr<Serving> open_serving(const Args& a);

}  // namespace locr::app
