// POST /v1/chat/completions.
#include <chrono>

#include "core/log.h"

#include "server/errors.h"
#include "server/generation.h"
#include "server/handlers.h"
#include "server/media.h"
#include "server/openai_response.h"
#include "server/request_log.h"
#include "server/sse.h"

namespace locr::server {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_json(httplib::Response& res, const nlohmann::json& j, int status) {
  res.status = status;
  res.set_content(json_text(j), "application/json");
}

model::Prompt build_chat_prompt(ServerContext& ctx, const ChatInput& ci, int max_tokens, bool decode) {
  const int limit = ctx.opts().limit_images;
  if (static_cast<int>(ci.image_urls.size()) > limit)
    bad_request(str("At most ", limit, " image(s) may be provided in one prompt; this request has ",
                    ci.image_urls.size(), "."),
                "messages");
  std::vector<ImageSource> sources = fetch_images(ci.image_urls, ctx.opts());
  const runtime::RequestPath& path = ctx.request_path();
  try {
    // --default-chat-template-kwargs, then the request's chat_template_kwargs over them.
    nlohmann::json kwargs = ctx.opts().default_chat_template_kwargs;
    if (ci.template_kwargs.is_object()) {
      if (!kwargs.is_object()) kwargs = nlohmann::json::object();
      for (auto it = ci.template_kwargs.begin(); it != ci.template_kwargs.end(); ++it) kwargs[it.key()] = it.value();
    }
    model::RenderedChat chat = path.model().render_chat(ci.messages, kwargs);
    if (chat.n_images != sources.size())
      bad_request(str("cannot build the prompt: the prompt has ", chat.n_images, " image placeholder(s) but ",
                      sources.size(), " image(s) were given"),
                  "messages");
    // The prompt from the image sizes alone, its length checked before any pixel is decoded.
    std::vector<io::ImageSize> sizes;
    for (const ImageSource& s : sources) sizes.push_back(s.size);
    model::Prompt p;
    p.ids = path.prompt_ids(chat, sizes);
    if (!decode) {
      p.text = std::move(chat.text);
      return p;
    }
    check_prompt_length(path.max_model_len(), static_cast<int64_t>(p.ids.size()), max_tokens);
    return path.prompt(std::move(chat), decode_images(std::move(sources), ctx));
  } catch (const ApiError&) {
    throw;
  } catch (const locr::Error& e) {
    throw ApiError(400, str("cannot build the prompt: ", e.what()), "messages");
  }
}

void handle_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  const std::string model_name = check_model(body, ctx);
  const GenParams p = parse_gen_params(body, Api::kChat, ctx);
  const ChatInput ci = parse_chat_messages(body);
  model::Prompt prompt = build_chat_prompt(ctx, ci, p.max_tokens, /*decode=*/true);
  LOCR_DEBUG("http: request ", request_log().id, " prompt: ", clip_for_log(prompt.text, ctx.opts().max_log_len));

  std::vector<PreparedPrompt> prompts(1);
  prompts[0].ids = std::move(prompt.ids);
  prompts[0].images = std::move(prompt.images);
  const ResponseHead head{"chatcmpl-" + request_log().id, unix_now(), model_name, ctx.opts().response_role};
  auto gen = std::make_shared<Generation>(ctx, p, std::move(prompts), request_log().id);
  const tokenizer::Tokenizer& tok = ctx.model().tokenizer();
  const bool logprobs = p.logprobs >= 0;
  const bool as_ids = p.tokens_as_ids;

  GenerationWriter w;
  if (!p.stream) {
    w.on_deltas = [](std::vector<ChoiceDelta>&, std::string&) {};
    w.on_done = [head, gen, logprobs, as_ids, &tok](std::string& out) {
      out = json_text(chat_response(head, *gen, logprobs, tok, as_ids));
    };
    respond_with_generation(ctx, res, gen, "application/json", std::move(w));
    return;
  }

  request_log().note = "stream";
  auto with_usage = [p, gen](json chunk) {
    if (p.include_usage)
      chunk["usage"] = p.continuous_usage_stats ? usage_json(gen->prompt_tokens(), gen->completion_tokens()) : json(nullptr);
    return chunk;
  };
  w.on_start = [head, gen, with_usage](std::string& out) {
    for (int i = 0; i < gen->n_choices(); ++i)
      out += sse_event(with_usage(chat_chunk(head, i, {{"role", head.role}, {"content", ""}}, nullptr, nullptr, nullptr)));
  };
  w.on_deltas = [head, logprobs, as_ids, &tok, with_usage](std::vector<ChoiceDelta>& ds, std::string& out) {
    for (auto& d : ds) {
      if (d.text.empty() && d.logprobs.empty() && !d.finished) continue;
      const json delta = d.text.empty() && d.finished ? json::object() : json{{"content", d.text}};
      const json lp = logprobs ? chat_logprobs_json(d.logprobs, tok, as_ids) : json(nullptr);
      // An engine fault ended this choice: an error event (as vLLM streams one, which OpenAI's SDKs
      // raise), then its final chunk with finish_reason "error".
      if (d.finished && d.finish_reason == runtime::FinishReason::kError) out += sse_event(error_body(500, d.error));
      const json reason = d.finished ? finish_reason_json(d.finish_reason) : json(nullptr);
      out += sse_event(with_usage(chat_chunk(head, d.index, delta, lp, reason, d.stop_reason)));
    }
  };
  w.on_done = [head, gen, p](std::string& out) {
    if (p.include_usage)
      out += sse_event(usage_chunk(head, "chat.completion.chunk", gen->prompt_tokens(), gen->completion_tokens()));
    out += "data: [DONE]\n\n";
  };
  respond_with_generation(ctx, res, gen, "text/event-stream", std::move(w));
}

}  // namespace locr::server
