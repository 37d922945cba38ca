#include "server/generation.h"

#include <algorithm>

#include "server/errors.h"

namespace locr::server {

struct Generation::Choice {
  int index = 0;
  std::shared_ptr<runtime::RequestStream> stream;
  runtime::Detokenizer detok;
  StopMatcher stop;
  bool finished = false;
  Choice(const model::Tokenizer& tok, const GenParams& p)
      : detok(tok, p.skip_special_tokens), stop(p.stop, p.include_stop_str_in_output) {}
};

namespace {

[[noreturn]] void too_long(int64_t max_len, int64_t prompt, int64_t completion) {
  if (completion <= 0)
    throw ApiError(400, str("This model's maximum context length is ", max_len, " tokens. However, your request has ",
                            prompt, " input tokens. Please reduce the length of the input messages."));
  throw ApiError(400, str("This model's maximum context length is ", max_len, " tokens. However, you requested ",
                          prompt + completion, " tokens (", prompt, " in the messages, ", completion,
                          " in the completion). Please reduce the length of the messages or completion."),
                 "max_tokens");
}

nlohmann::json stop_reason_json(const std::string& s) {
  if (s.empty()) return nullptr;
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::stoll(s);
  return s;
}

}  // namespace

Generation::Generation(ServerContext& ctx, const GenParams& params, std::vector<PreparedPrompt> prompts,
                       const std::string& request_id)
    : ctx_(ctx), params_(params), prompts_(std::move(prompts)), n_(params.n) {
  const int64_t max_len = ctx.engine().options().max_model_len;
  const auto& gc = ctx.model().generation_config();
  for (int id : gc.eos_token_ids) eos_ids_.push_back(id);
  vocab_ = ctx.model().tokenizer().vocab_size();
  std::vector<int> max_tokens(prompts_.size());
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const int64_t len = static_cast<int64_t>(prompts_[i].ids.size());
    if (len == 0) bad_request("the prompt is empty", "prompt");
    if (len >= max_len) too_long(max_len, len, params.max_tokens);
    if (params.max_tokens > 0) {
      if (len + params.max_tokens > max_len) too_long(max_len, len, params.max_tokens);
      max_tokens[i] = params.max_tokens;
    } else {
      int64_t m = max_len - len;
      if (ctx.opts().use_generation_config && gc.max_new_tokens > 0) m = std::min<int64_t>(m, gc.max_new_tokens);
      max_tokens[i] = static_cast<int>(m);
    }
    if (params.min_tokens > max_tokens[i])
      bad_request(str("'min_tokens' (", params.min_tokens, ") is more than the tokens left (", max_tokens[i], ")"),
                  "min_tokens");
    prompt_tokens_ += len;
  }

  for (size_t i = 0; i < prompts_.size(); ++i)
    for (int j = 0; j < n_; ++j) {
      auto c = std::make_unique<Choice>(ctx.model().tokenizer(), params_);
      c->index = static_cast<int>(choices_.size());
      runtime::RequestInput in;
      in.request_id = request_id + "-" + std::to_string(c->index);
      in.prompt_ids = prompts_[i].ids;
      in.images = j + 1 == n_ ? std::move(prompts_[i].images) : prompts_[i].images;
      in.sampling = params_.sampling;
      in.sampling.seed = params_.sampling.has_seed ? params_.sampling.seed + static_cast<uint64_t>(j) : ctx.next_seed();
      in.sampling.has_seed = true;
      in.max_tokens = max_tokens[i];
      in.eos_ids = eos_ids_;
      in.stop_token_ids = params_.stop_token_ids;
      in.ignore_eos = params_.ignore_eos;
      // The loop guard follows the server's setting; a request asking for a fixed length
      // (ignore_eos, as benchmarks do) turns it off unless it sets "loop_guard" itself.
      in.loop_guard = ctx.opts().loop_guard;
      in.loop_guard.enabled = params_.loop_guard.value_or(ctx.opts().loop_guard.enabled && !params_.ignore_eos);
      in.min_tokens = params_.min_tokens;
      in.repetition_penalty = params_.repetition_penalty;
      in.presence_penalty = params_.presence_penalty;
      in.frequency_penalty = params_.frequency_penalty;
      in.logprobs = params_.logprobs;
      c->stream = ctx.engine().submit(std::move(in));
      choices_.push_back(std::move(c));
    }
  results_.resize(choices_.size());
  ctx_.add_active(this);
}

Generation::~Generation() {
  ctx_.remove_active(this);
  cancel();
}

void Generation::cancel() {
  for (auto& c : choices_) c->stream->cancel();
}

int64_t Generation::cached_tokens() const {
  int64_t n = 0;
  for (const auto& c : choices_) n += c->stream->times().cached_tokens;
  return n;
}

void Generation::finish(Choice& c, ChoiceDelta& d, const std::string& reason, nlohmann::json stop_reason) {
  c.finished = true;
  ++n_finished_;
  d.finished = true;
  d.finish_reason = reason;
  d.stop_reason = stop_reason;
  results_[c.index].finish_reason = reason;
  results_[c.index].stop_reason = std::move(stop_reason);
}

void Generation::on_event(Choice& c, runtime::TokenEvent& e, ChoiceDelta& d) {
  if (c.finished) return;  // e.g. tokens after a stop string, before the engine saw the cancel
  ChoiceResult& r = results_[c.index];
  std::string piece;
  if (e.token >= 0) {
    ++r.n_tokens;
    ++completion_tokens_;
    if (params_.logprobs >= 0) {
      TokenLogprob lp{e.token, e.logprob, std::move(e.top)};
      r.logprobs.push_back(lp);
      d.logprobs.push_back(std::move(lp));
    }
    // The text of a token that ends the request (EOS, stop_token_ids) is not part of the output.
    const bool stop_token =
        std::find(params_.stop_token_ids.begin(), params_.stop_token_ids.end(), e.token) != params_.stop_token_ids.end() ||
        (!params_.ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), e.token) != eos_ids_.end());
    // Ids past the tokenizer (the embedding matrix is padded) decode to nothing, as in HF.
    if ((!stop_token || params_.include_stop_str_in_output) && e.token < vocab_) piece = c.detok.push(e.token);
  }
  if (e.finished) piece += c.detok.finish();
  std::string out = c.stop.push(piece);
  if (c.stop.matched()) {
    c.stream->cancel("stop");  // the engine records it as a stop, not an abort
    ctx_.metrics().stop_string_finishes.fetch_add(1);
    d.text += out;
    r.text += out;
    finish(c, d, "stop", c.stop.stop());
    return;
  }
  if (e.finished) out += c.stop.flush();
  d.text += out;
  r.text += out;
  if (e.finished) finish(c, d, e.finish_reason.empty() ? "stop" : e.finish_reason, stop_reason_json(e.stop_reason));
}

bool Generation::drain(Choice& c, ChoiceDelta& d, std::chrono::milliseconds timeout) {
  bool any = false;
  auto wait = timeout;
  while (!c.finished) {
    auto e = c.stream->next(wait);
    if (!e) break;
    any = true;
    wait = std::chrono::milliseconds(0);
    on_event(c, *e, d);
  }
  return any;
}

void Generation::poll(std::vector<ChoiceDelta>& out, std::chrono::milliseconds timeout) {
  std::vector<ChoiceDelta> deltas(choices_.size());
  std::vector<char> touched(choices_.size(), 0);
  bool any = false;
  for (auto& c : choices_)
    if (!c->finished && drain(*c, deltas[c->index], std::chrono::milliseconds(0))) {
      touched[c->index] = 1;
      any = true;
    }
  if (!any && !done()) {
    // Block on one unfinished choice; with several, wake often enough to serve the others.
    for (auto& c : choices_)
      if (!c->finished) {
        const auto t = choices_.size() == 1 ? timeout : std::min(timeout, std::chrono::milliseconds(5));
        if (drain(*c, deltas[c->index], t)) touched[c->index] = 1;
        break;
      }
    for (auto& c : choices_)
      if (!c->finished && drain(*c, deltas[c->index], std::chrono::milliseconds(0))) touched[c->index] = 1;
  }
  for (size_t i = 0; i < choices_.size(); ++i)
    if (touched[i]) {
      deltas[i].index = static_cast<int>(i);
      out.push_back(std::move(deltas[i]));
    }
}

}  // namespace locr::server
