#include "session.h"

#include <cstring>

#include "core/error.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/media.h"
#include "server/ocr_figures.h"
#include "server/openai_schema.h"

namespace locr::py {

namespace {

json finish_json(const server::ChoiceResult& r) { return server::finish_reason_json(r.finish_reason); }

}  // namespace

Job::Job(std::shared_ptr<server::Generation> gen, std::shared_ptr<server::OcrJob> ocr, std::vector<std::string> prompts,
         std::shared_ptr<void> keep)
    : gen_(std::move(gen)), ocr_(std::move(ocr)), prompt_texts_(std::move(prompts)), keep_(std::move(keep)) {}

Job::~Job() {
  // A job dropped unfinished (the Python object collected, an exception) frees its engine work.
  if (gen_ && !gen_->done()) gen_->cancel();
}

std::vector<int> Job::poll(int timeout_ms) {
  std::vector<int> finished;
  if (gen_->done()) return finished;
  deltas_.clear();
  gen_->poll(deltas_, std::chrono::milliseconds(std::max(0, timeout_ms)));
  for (const server::ChoiceDelta& d : deltas_) {
    if (ocr_) {
      server::PageState& ps = ocr_->pages[d.index];
      if (ps.first_token_s < 0 && (!d.text.empty() || d.finished)) ps.first_token_s = server::seconds_since(ocr_->submitted);
      if (d.finished) ps.finished_s = server::seconds_since(ocr_->submitted);
    }
    if (d.finished) finished.push_back(d.index);
  }
  return finished;
}

json Job::result(int i) const {
  if (i < 0 || i >= gen_->n_choices()) fail(ErrorKind::kInvalidArgument, "choice ", i, " out of range");
  const server::ChoiceResult& r = gen_->results()[i];
  const size_t prompt = static_cast<size_t>(i / gen_->n_per_prompt());
  json logprobs = nullptr;
  if (gen_->params().logprobs >= 0) {
    logprobs = json::array();
    for (const server::TokenLogprob& t : r.logprobs) {
      json top = json::array();
      for (const runtime::TopLogprob& k : t.top) top.push_back({k.token, k.logprob});
      logprobs.push_back({{"token", t.token}, {"logprob", t.logprob}, {"top", std::move(top)}});
    }
  }
  return {{"index", i % gen_->n_per_prompt()},
          {"prompt_index", prompt},
          {"text", r.text},
          {"token_ids", r.token_ids},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", finish_json(r)},
          {"stop_reason", r.stop_reason},
          {"error", r.error.empty() ? json(nullptr) : json(r.error)},
          {"prompt", prompt < prompt_texts_.size() ? json(prompt_texts_[prompt]) : json(nullptr)},
          {"prompt_token_ids", gen_->prompts()[prompt].ids},
          {"cached_tokens", gen_->cached_tokens()}};
}

json Job::page(int i) const {
  if (!ocr_) fail(ErrorKind::kInvalidArgument, "not an OCR job");
  if (i < 0 || i >= page_count()) fail(ErrorKind::kInvalidArgument, "page index ", i, " out of range");
  json j = server::page_json(*ocr_, *gen_, i);
  const std::string& raw = gen_->results()[i].text;
  j["raw"] = raw;
  const server::PageState& ps = ocr_->pages[i];
  json figures = json::array();
  for (const server::Figure& f : server::find_figures(raw)) {
    const server::PixelBox b = server::figure_pixels(f, ps.width, ps.height);
    figures.push_back({{"alt", f.alt},
                       {"target", f.target},
                       {"box", {f.x1, f.y1, f.x2, f.y2}},
                       {"pixels", {b.left, b.top, b.right, b.bottom}}});
  }
  j["figures"] = std::move(figures);
  j["token_ids"] = gen_->results()[i].token_ids;
  return j;
}

json Job::summary() const {
  if (!ocr_) fail(ErrorKind::kInvalidArgument, "not an OCR job");
  return server::summary_json(*ocr_, *gen_, false);
}

Session::Session(const std::vector<std::string>& argv) {
  app::Args a("serve", "the Python package's engine (locr serve's flags)");
  app::declare_serve_options(a);
  std::vector<char*> ptrs;
  for (const std::string& s : argv) ptrs.push_back(const_cast<char*>(s.c_str()));
  ptrs.push_back(nullptr);
  if (!a.parse(static_cast<int>(argv.size()), ptrs.data())) fail(ErrorKind::kInvalidArgument, "--help asked");
  s_ = app::open_serving(a);
}

Session::~Session() { shutdown(); }

void Session::shutdown() {
  if (!s_) return;
  s_->ctx->cancel_all();
  s_.reset();
}

std::string Session::next_request_id(const char* prefix) {
  return std::string(prefix) + "-py-" + std::to_string(next_id_++);
}

json Session::info() const {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  const server::ServerContext& ctx = *s_->ctx;
  const model::Model& m = *s_->model;
  const runtime::RequestDefaults& d = ctx.request_path().defaults();
  const runtime::EngineOptions& eo = s_->engine->options();
  return {{"model_path", ctx.opts().model_path},
          {"served_model_name", ctx.opts().served_model_names.front()},
          {"device", ctx.opts().device},
          {"executor", s_->engine->executor_name()},
          {"max_model_len", eo.max_model_len},
          {"max_num_seqs", eo.max_num_seqs},
          {"max_num_batched_tokens", eo.max_num_batched_tokens},
          {"enable_prefix_caching", eo.enable_prefix_caching},
          {"kv_blocks", s_->engine->kv_blocks_total()},
          {"vocab_size", m.vocab_size()},
          {"image_token_id", m.image_token_id()},
          {"image_token", m.tokenizer().decode({m.image_token_id()}, false)},
          {"eos_token_ids", d.eos_ids},
          {"variant", m.variant().describe()},
          {"defaults",
           {{"temperature", d.sampling.temperature},
            {"top_p", d.sampling.top_p},
            {"top_k", d.sampling.top_k},
            {"min_p", d.sampling.min_p},
            {"repetition_penalty", d.penalties.repetition},
            {"presence_penalty", d.penalties.presence},
            {"frequency_penalty", d.penalties.frequency},
            {"max_tokens", d.max_new_tokens > 0 ? json(d.max_new_tokens) : json(nullptr)}}}};
}

std::shared_ptr<Job> Session::chat(const std::string& text) {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  server::ServerContext& ctx = *s_->ctx;
  const json body = server::parse_body(text);
  server::check_model(body, ctx);
  const server::GenParams p = server::parse_gen_params(body, server::Api::kChat, ctx);
  const server::ChatInput ci = server::parse_chat_messages(body);
  model::Prompt prompt = server::build_chat_prompt(ctx, ci, p.max_tokens, /*decode=*/true);
  std::vector<server::PreparedPrompt> prompts(1);
  prompts[0].ids = std::move(prompt.ids);
  prompts[0].images = std::move(prompt.images);
  auto gen = std::make_shared<server::Generation>(ctx, p, std::move(prompts), next_request_id("chatcmpl"));
  return std::make_shared<Job>(std::move(gen), nullptr, std::vector<std::string>{std::move(prompt.text)});
}

std::shared_ptr<Job> Session::completion(const std::string& text, std::vector<std::string> image_urls) {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  server::ServerContext& ctx = *s_->ctx;
  const json body = server::parse_body(text);
  server::check_model(body, ctx);
  const server::GenParams p = server::parse_gen_params(body, server::Api::kCompletions, ctx);
  const tokenizer::Tokenizer& tok = s_->model->tokenizer();
  std::vector<server::CompletionPrompt> parsed =
      server::parse_completion_prompts(body, s_->model->vocab_size());
  server::check_choice_count(ctx.opts().max_choices, parsed.size(), p.n);
  std::vector<server::PreparedPrompt> prompts;
  std::vector<std::string> texts;
  if (!image_urls.empty()) {
    // vLLM's {"prompt": ..., "multi_modal_data": {"image": ...}}: the prompt holds the image
    // placeholders (the model's image token), each expanded to its image's tokens.
    if (parsed.size() != 1) server::bad_request("images need exactly one prompt", "prompt");
    if (static_cast<int>(image_urls.size()) > ctx.opts().limit_images)
      server::bad_request(str("At most ", ctx.opts().limit_images, " image(s) may be provided in one prompt; this "
                              "request has ", image_urls.size(), "."), "multi_modal_data");
    server::CompletionPrompt& cp = parsed[0];
    model::RenderedChat chat;
    chat.ids = cp.is_tokens ? cp.ids : tok.encode(cp.text);
    chat.text = cp.is_tokens ? tok.decode(cp.ids, false) : cp.text;
    for (int32_t id : chat.ids) chat.n_images += id == s_->model->image_token_id();
    const std::string image_token = tok.decode({s_->model->image_token_id()}, false);
    if (chat.n_images != image_urls.size())
      server::bad_request(str("the prompt has ", chat.n_images, " image placeholder(s) ('", image_token, "') but ",
                              image_urls.size(), " image(s) were given"), "prompt");
    std::vector<server::ImageSource> sources = server::fetch_images(image_urls, ctx.opts());
    std::vector<io::ImageSize> sizes;
    for (const server::ImageSource& s : sources) sizes.push_back(s.size);
    const runtime::RequestPath& path = ctx.request_path();
    server::PreparedPrompt pp;
    try {
      pp.ids = path.prompt_ids(chat, sizes);
      server::check_prompt_length(path.max_model_len(), static_cast<int64_t>(pp.ids.size()), p.max_tokens);
      model::Prompt prompt = path.prompt(std::move(chat), server::decode_images(std::move(sources), ctx));
      pp.ids = std::move(prompt.ids);
      pp.images = std::move(prompt.images);
    } catch (const server::ApiError&) {
      throw;
    } catch (const locr::Error& e) {
      throw server::ApiError(400, str("cannot build the prompt: ", e.what()), "prompt");
    }
    texts.push_back(cp.is_tokens ? tok.decode(cp.ids, false) : cp.text);
    prompts.push_back(std::move(pp));
  } else {
    for (server::CompletionPrompt& cp : parsed) {
      server::PreparedPrompt pp;
      texts.push_back(cp.is_tokens ? tok.decode(cp.ids, false) : cp.text);
      pp.ids = cp.is_tokens ? std::move(cp.ids) : tok.encode(cp.text);
      prompts.push_back(std::move(pp));
    }
  }
  auto gen = std::make_shared<server::Generation>(ctx, p, std::move(prompts), next_request_id("cmpl"));
  return std::make_shared<Job>(std::move(gen), nullptr, std::move(texts));
}

std::shared_ptr<Job> Session::ocr(const std::string& text, std::string document) {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  server::ServerContext& ctx = *s_->ctx;
  server::OcrRequest in;
  in.body = server::parse_body(text);
  if (document.empty()) server::bad_request("the document is empty", "document");
  in.bytes = std::move(document);
  server::PreparedOcr prepared = server::prepare_ocr(ctx, std::move(in));
  std::shared_ptr<server::OcrJob> job = prepared.job;
  const std::string id = next_request_id("ocr");
  job->id = id;
  job->created = server::unix_now();
  job->submitted = server::Clock::now();
  auto gen = std::make_shared<server::Generation>(ctx, prepared.params, std::move(prepared.prompts), id,
                                                  prepared.in_flight);
  return std::make_shared<Job>(std::move(gen), std::move(job), std::vector<std::string>{}, prepared.doc);
}

std::vector<int32_t> Session::encode(const std::string& text) const {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  return s_->model->tokenizer().encode(text);
}

std::string Session::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  const tokenizer::Tokenizer& tok = s_->model->tokenizer();
  for (int32_t id : ids)
    if (!tok.has_id(id)) server::bad_request(str("token id ", id, " is not in the vocabulary"), "token_ids");
  return tok.decode(ids, skip_special);
}

std::string Session::apply_chat_template(const std::string& messages, const std::string& template_kwargs,
                                         bool add_generation_prompt) const {
  if (!s_) fail(ErrorKind::kInvalidArgument, "the engine has been shut down");
  json body = {{"messages", server::parse_body("{\"m\": " + messages + "}").at("m")}};
  const server::ChatInput ci = server::parse_chat_messages(body);
  json kwargs = template_kwargs.empty() ? json(nullptr) : server::parse_body(template_kwargs);
  try {
    return s_->model->render_chat(ci.messages, kwargs, add_generation_prompt).text;
  } catch (const locr::Error& e) {
    throw server::ApiError(400, str("cannot render the chat template: ", e.what()), "messages");
  }
}

std::vector<std::pair<std::string, std::string>> Session::serve_flags() {
  app::Args a("serve", "");
  app::declare_serve_options(a);
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : a.names()) out.emplace_back(n, a.kind(n));
  return out;
}

}  // namespace locr::py
