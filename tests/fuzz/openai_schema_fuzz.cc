// The JSON request schema (server/openai_schema.cc): a request body, as chat and as completions,
// through parse_body, check_model, parse_gen_params, parse_chat_messages and
// parse_completion_prompts against the tiny fixture model. Every rejection is an ApiError 4xx (a
// json::exception or anything else escaping would be a 500); whatever is accepted is in range.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/engine.h"
#include "server/errors.h"
#include "server/openai_schema.h"
#include "server/server_context.h"

namespace {

using namespace locr;

server::ServerContext& context() {
  // Built once and never destroyed (the engine thread outlives the fuzzing loop).
  static server::ServerContext* ctx = [] {
    auto* model = model::LightOnOcr::load(fuzz::fixture("models/tiny_a")).release();
    runtime::EngineOptions eo;
    eo.kv_cache_bytes = 1 << 20;
    eo.max_model_len = 1024;
    auto* engine = new runtime::Engine(*model, eo);
    server::ServerOptions so;
    so.served_model_names = {"lightonocr-2-1b", "alias"};
    return new server::ServerContext(*model, *engine, so);
  }();
  return *ctx;
}

void check_params(const server::GenParams& p, const server::ServerContext& ctx, int32_t vocab) {
  LOCR_FUZZ_CHECK(p.n >= 1 && p.n <= ctx.opts().max_n);
  LOCR_FUZZ_CHECK(p.max_tokens == -1 || p.max_tokens >= 1);
  LOCR_FUZZ_CHECK(p.min_tokens >= 0);
  LOCR_FUZZ_CHECK(p.max_tokens == -1 || p.min_tokens <= p.max_tokens);
  LOCR_FUZZ_CHECK(p.logprobs >= -1 && p.logprobs <= ctx.opts().max_logprobs);
  LOCR_FUZZ_CHECK(p.sampling.temperature >= 0 && p.sampling.temperature <= 1e6f);
  LOCR_FUZZ_CHECK(p.sampling.top_p > 0 && p.sampling.top_p <= 1);
  LOCR_FUZZ_CHECK(p.sampling.top_k >= -1 && p.sampling.top_k <= vocab);
  LOCR_FUZZ_CHECK(p.penalties.repetition > 0);
  for (int32_t id : p.stop_token_ids) LOCR_FUZZ_CHECK(id >= 0 && id < vocab);
  for (const auto& s : p.stop) LOCR_FUZZ_CHECK(!s.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  server::ServerContext& ctx = context();
  const int32_t vocab = ctx.model().vocab_size();
  const std::string body_text(reinterpret_cast<const char*>(data), size);
  server::json body;
  try {
    body = server::parse_body(body_text);
  } catch (const server::ApiError& e) {
    LOCR_FUZZ_CHECK(e.status() == 400);
    return 0;
  }
  LOCR_FUZZ_CHECK(body.is_object());
  try {
    LOCR_FUZZ_CHECK(ctx.serves(server::check_model(body, ctx)));
  } catch (const server::ApiError& e) {
    LOCR_FUZZ_CHECK(e.status() == 400 || e.status() == 404);
  }
  for (server::Api api : {server::Api::kChat, server::Api::kCompletions}) {
    try {
      check_params(server::parse_gen_params(body, api, ctx), ctx, vocab);
    } catch (const server::ApiError& e) {
      LOCR_FUZZ_CHECK(e.status() == 400 && e.what()[0] != '\0');
    }
  }
  try {
    const server::ChatInput ci = server::parse_chat_messages(body);
    LOCR_FUZZ_CHECK(ci.messages.is_array() && !ci.messages.empty());
    size_t images = 0;
    for (const auto& m : ci.messages) {
      LOCR_FUZZ_CHECK(m.at("role").is_string());
      if (m.at("content").is_array())
        for (const auto& part : m.at("content")) images += part.at("type") == "image";
    }
    LOCR_FUZZ_CHECK(images == ci.image_urls.size());
  } catch (const server::ApiError& e) {
    LOCR_FUZZ_CHECK(e.status() == 400 && e.what()[0] != '\0');
  }
  try {
    const auto prompts = server::parse_completion_prompts(body, vocab);
    LOCR_FUZZ_CHECK(!prompts.empty());
    for (const auto& p : prompts) {
      LOCR_FUZZ_CHECK(!p.is_tokens || !p.ids.empty());
      for (int32_t id : p.ids) LOCR_FUZZ_CHECK(id >= 0 && id < vocab);
    }
  } catch (const server::ApiError& e) {
    LOCR_FUZZ_CHECK(e.status() == 400 && e.what()[0] != '\0');
  }
  return 0;
}
