// POST /generate: vLLM's legacy demo API (server/legacy_api.h), over the same Generation as
// /v1/completions: one text prompt, n choices, the same limits, stop strings and loop guard.
#include "core/log.h"
#include "server/errors.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/legacy_api.h"
#include "server/request_log.h"
#include "server/sse.h"

namespace locr::server {

namespace {

std::vector<std::string> texts_so_far(const Generation& g) {
  std::vector<std::string> out;
  for (const ChoiceResult& r : g.results()) out.push_back(r.text);
  return out;
}

}  // namespace

void handle_generate(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const LegacyGenerateRequest r = parse_legacy_generate(parse_body(req.body));
  GenParams p = parse_gen_params(r.sampling, Api::kCompletions, ctx);
  p.stream = r.stream;
  LOCR_DEBUG("http: request ", request_log().id, " prompt: ", clip_for_log(r.prompt, ctx.opts().max_log_len));
  PreparedPrompt pp;
  pp.ids = ctx.model().tokenizer().encode(r.prompt);
  std::vector<PreparedPrompt> prompts;
  prompts.push_back(std::move(pp));
  auto gen = std::make_shared<Generation>(ctx, p, std::move(prompts), request_log().id);
  const std::string prompt = r.prompt;

  GenerationWriter w;
  if (!r.stream) {
    w.on_deltas = [](std::vector<ChoiceDelta>&, std::string&) {};
    w.on_done = [gen, prompt](std::string& out) {
      json j = legacy_text_json(prompt, texts_so_far(*gen));
      // The status (200) is sent already: an engine fault is reported in the body, next to the text.
      for (const ChoiceResult& c : gen->results())
        if (!c.error.empty()) j["error"] = error_body(500, c.error)["error"];
      out = json_text(j);
    };
    respond_with_generation(ctx, res, gen, "application/json", std::move(w));
    return;
  }
  request_log().note = "stream";
  // One object per batch of progress: every choice's prompt + text so far (vLLM sends one per
  // engine output), each followed by a NUL byte.
  w.on_deltas = [gen, prompt](std::vector<ChoiceDelta>& ds, std::string& out) {
    bool any = false;
    for (const ChoiceDelta& d : ds) {
      any |= !d.text.empty() || d.finished;
      if (d.finished && d.finish_reason == runtime::FinishReason::kError) {
        out += json_text(error_body(500, d.error));
        out += kLegacyStreamDelimiter;
      }
    }
    if (!any) return;
    out += json_text(legacy_text_json(prompt, texts_so_far(*gen)));
    out += kLegacyStreamDelimiter;
  };
  w.on_done = [](std::string&) {};
  respond_with_generation(ctx, res, gen, "application/octet-stream", std::move(w));
}

}  // namespace locr::server
