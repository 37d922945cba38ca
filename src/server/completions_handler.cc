// POST /v1/completions: a prompt string, a list of strings, token ids or lists of token ids,
// each with n choices (choice index = prompt index * n + j, as vLLM numbers them).
#include "core/log.h"
#include "server/errors.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/openai_response.h"
#include "server/request_log.h"
#include "server/sse.h"

namespace locr::server {

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  const std::string model_name = check_model(body, ctx);
  const GenParams p = parse_gen_params(body, Api::kCompletions, ctx);
  const tokenizer::Tokenizer& tok = ctx.model().tokenizer();
  std::vector<CompletionPrompt> parsed = parse_completion_prompts(body, ctx.model().vocab_size());
  check_choice_count(ctx.opts().max_choices, parsed.size(), p.n);  // before tokenising anything
  std::vector<PreparedPrompt> prompts;
  for (auto& cp : parsed) {
    PreparedPrompt pp;
    if (log_level() <= LogLevel::kDebug) {
      const int max = ctx.opts().max_log_len;
      std::string ids;
      for (size_t k = 0; k < cp.ids.size() && (max < 0 || static_cast<int64_t>(k) < max); ++k) ids += (k ? "," : "") + std::to_string(cp.ids[k]);
      if (max >= 0 && cp.ids.size() > static_cast<size_t>(max)) ids += str("... (", cp.ids.size() - max, " more ids)");
      LOCR_DEBUG("http: request ", request_log().id, " prompt: ",
                 cp.is_tokens ? "[" + ids + "]" : clip_for_log(cp.text, max));
    }
    if (cp.is_tokens) {
      pp.ids = std::move(cp.ids);
      if (p.echo) pp.echo_text = tok.decode(pp.ids, p.skip_special_tokens);
    } else {
      pp.ids = tok.encode(cp.text);
      if (p.echo) pp.echo_text = cp.text;
    }
    prompts.push_back(std::move(pp));
  }
  const ResponseHead head{"cmpl-" + request_log().id, unix_now(), model_name};
  auto gen = std::make_shared<Generation>(ctx, p, std::move(prompts), request_log().id);
  const bool logprobs = p.logprobs >= 0;
  const bool as_ids = p.tokens_as_ids;

  GenerationWriter w;
  if (!p.stream) {
    w.on_deltas = [](std::vector<ChoiceDelta>&, std::string&) {};
    w.on_done = [head, gen, logprobs, as_ids, &tok](std::string& out) {
      out = json_text(completion_response(head, *gen, logprobs, tok, as_ids));
    };
    respond_with_generation(ctx, res, gen, "application/json", std::move(w));
    return;
  }

  request_log().note = "stream";
  auto offsets = std::make_shared<std::vector<int64_t>>(gen->n_choices(), 0);
  auto with_usage = [p, gen](json chunk) {
    if (p.include_usage)
      chunk["usage"] = p.continuous_usage_stats ? usage_json(gen->prompt_tokens(), gen->completion_tokens()) : json(nullptr);
    return chunk;
  };
  if (p.echo)
    w.on_start = [head, gen, with_usage, offsets](std::string& out) {
      for (int i = 0; i < gen->n_choices(); ++i) {
        const std::string& echo = gen->prompts()[i / gen->n_per_prompt()].echo_text;
        (*offsets)[i] = static_cast<int64_t>(echo.size());
        out += sse_event(with_usage(completion_chunk(head, i, echo, nullptr, nullptr, nullptr)));
      }
    };
  w.on_deltas = [head, logprobs, as_ids, &tok, with_usage, offsets](std::vector<ChoiceDelta>& ds, std::string& out) {
    for (auto& d : ds) {
      if (d.text.empty() && d.logprobs.empty() && !d.finished) continue;
      const json lp = logprobs ? completion_logprobs_json(d.logprobs, tok, (*offsets)[d.index], as_ids) : json(nullptr);
      // An engine fault ended this choice: an error event (as vLLM streams one, which OpenAI's SDKs
      // raise), then its final chunk with finish_reason "error".
      if (d.finished && d.finish_reason == runtime::FinishReason::kError) out += sse_event(error_body(500, d.error));
      const json reason = d.finished ? finish_reason_json(d.finish_reason) : json(nullptr);
      out += sse_event(with_usage(completion_chunk(head, d.index, d.text, lp, reason, d.stop_reason)));
    }
  };
  w.on_done = [head, gen, p](std::string& out) {
    if (p.include_usage) out += sse_event(usage_chunk(head, "text_completion", gen->prompt_tokens(), gen->completion_tokens()));
    out += "data: [DONE]\n\n";
  };
  respond_with_generation(ctx, res, gen, "text/event-stream", std::move(w));
}

}  // namespace locr::server
