#include "server/server_context.h"

#include <algorithm>

#include "server/generation.h"
#include "server/generation_defaults.h"
#include "server/queue_wait.h"

namespace locr::server {

namespace {

runtime::RequestPath server_request_path(const model::Model& model, const runtime::Engine& engine,
                                         const ServerOptions& o) {
  // --generation-config vllm: vLLM's defaults (sampling on, temperature 1, no max_new_tokens),
  // which are also what a request starts from without any.
  const model::GenerationConfig g = apply_generation_overrides(
      o.use_generation_config ? model.generation_config() : vllm_generation_defaults(model.generation_config()),
      o.override_generation_config);
  runtime::RequestDefaults d = runtime::request_defaults(g);
  d.loop_guard = o.loop_guard;
  runtime::RequestPathOptions ro;
  ro.max_model_len = engine.options().max_model_len;
  ro.forced_ids = o.debug_forced_ids;
  return runtime::RequestPath(model, std::move(d), ro);
}

}  // namespace

ServerContext::ServerContext(const model::Model& model, runtime::Engine& engine, ServerOptions opts)
    : model_(model),
      engine_(engine),
      opts_(std::move(opts)),
      request_path_(server_request_path(model, engine, opts_)),
      metrics_(engine.options().max_model_len),
      decode_budget_(opts_.max_decode_bytes),
      seed_rng_(opts_.seed),
      id_rng_(std::random_device{}()) {
  LOCR_CHECK(!opts_.served_model_names.empty(), "at least one served model name");
}

bool ServerContext::serves(const std::string& name) const {
  return std::find(opts_.served_model_names.begin(), opts_.served_model_names.end(), name) !=
         opts_.served_model_names.end();
}

double ServerContext::estimated_queue_wait_s() const {
  // The running gauge is set once per engine step; the count of unfinished requests is exact, so a
  // request that has just finished is not counted as holding its slot until the next step.
  const runtime::EngineMetrics& m = engine_.metrics();
  const int64_t unfinished = std::max<int64_t>(0, m.num_unfinished.load());
  const int64_t running = std::min(m.num_running.load(), unfinished);
  return estimate_queue_wait_s(running, unfinished - running, engine_.options().max_num_seqs, m.recent_service_s.load());
}

uint64_t ServerContext::next_seed() {
  std::lock_guard<std::mutex> lock(rng_mu_);
  return seed_rng_();
}

std::string ServerContext::random_hex() {
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> lock(rng_mu_);
    a = id_rng_();
    b = id_rng_();
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

void ServerContext::add_active(Generation* g) {
  std::lock_guard<std::mutex> lock(active_mu_);
  active_.insert(g);
}

void ServerContext::remove_active(Generation* g) {
  std::lock_guard<std::mutex> lock(active_mu_);
  active_.erase(g);
}

size_t ServerContext::n_active() {
  std::lock_guard<std::mutex> lock(active_mu_);
  return active_.size();
}

void ServerContext::cancel_all() {
  std::lock_guard<std::mutex> lock(active_mu_);
  for (Generation* g : active_) g->cancel();
}

}  // namespace locr::server
