#include "server/generation.h"

#include <algorithm>
#include <cmath>
#include <system_error>

#include "core/log.h"
#include "runtime/text_layer_drafter.h"
#include "server/errors.h"

namespace locr::server {

struct Generation::Choice {
  int index = 0;
  size_t prompt = 0;
  std::shared_ptr<runtime::RequestStream> stream;
  runtime::TextOutput text;
  bool finished = false;
  explicit Choice(runtime::TextOutput t) : text(std::move(t)) {}
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

}  // namespace

nlohmann::json finish_reason_json(std::optional<runtime::FinishReason> r) {
  return r ? nlohmann::json(runtime::finish_reason_name(*r)) : nlohmann::json(nullptr);
}

nlohmann::json stop_reason_json(const runtime::StopReason& r) {
  switch (r.kind) {
    case runtime::StopReason::Kind::kNone: return nullptr;
    case runtime::StopReason::Kind::kTokenId: return r.token;
    case runtime::StopReason::Kind::kString: return r.text;
    case runtime::StopReason::Kind::kRepetition: return "repetition";
  }
  return nullptr;
}

void check_prompt_length(int64_t max_len, int64_t len, int max_tokens) {
  if (len >= max_len) too_long(max_len, len, max_tokens);
  if (max_tokens > 0 && len + max_tokens > max_len) too_long(max_len, len, max_tokens);
}

void check_choice_count(int max_choices, size_t n_prompts, int n) {
  const int64_t n_choices = static_cast<int64_t>(n_prompts) * n;
  if (n_choices > max_choices)
    bad_request(str("this request asks for ", n_choices, " choices (", n_prompts, " prompt(s) x n = ", n,
                    "), more than this server takes in one request (--max-choices-per-request ", max_choices,
                    "); split the prompts over several requests"),
                n_prompts > 1 ? "prompt" : "n");
}

std::vector<int> Generation::check(ServerContext& ctx, const GenParams& params, const std::vector<PreparedPrompt>& prompts,
                                   int64_t* prompt_tokens) {
  const runtime::RequestPath& path = ctx.request_path();
  check_choice_count(ctx.opts().max_choices, prompts.size(), params.n);
  std::vector<int> max_tokens(prompts.size());
  int64_t total = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t len = static_cast<int64_t>(prompts[i].ids.size());
    if (len == 0) bad_request("the prompt is empty", "prompt");
    check_prompt_length(path.max_model_len(), len, params.max_tokens);
    max_tokens[i] = path.max_tokens(len, params.max_tokens);
    if (params.min_tokens > max_tokens[i])
      bad_request(str("'min_tokens' (", params.min_tokens, ") is more than the tokens left (", max_tokens[i], ")"),
                  "min_tokens");
    total += len;
  }
  if (prompt_tokens) *prompt_tokens = total;
  return max_tokens;
}

Generation::Generation(ServerContext& ctx, const GenParams& params, std::vector<PreparedPrompt> prompts,
                       const std::string& request_id, int max_prompts_in_flight)
    : ctx_(ctx), params_(params), prompts_(std::move(prompts)), n_(params.n) {
  max_tokens_ = check(ctx, params_, prompts_, &prompt_tokens_);
  request_id_ = request_id;
  max_in_flight_ = std::max(0, max_prompts_in_flight);
  unfinished_.assign(prompts_.size(), n_);
  runtime::TextOptions text;  // each choice's output processing (runtime/text_output.h)
  text.skip_special = params_.skip_special_tokens;
  text.stop = params_.stop;
  text.include_stop_str = params_.include_stop_str_in_output;
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const runtime::DecodeParams decode = decode_params(i);
    for (int j = 0; j < n_; ++j) {
      auto c = std::make_unique<Choice>(ctx.request_path().output(decode, text));
      c->index = static_cast<int>(choices_.size());
      c->prompt = i;
      choices_.push_back(std::move(c));
    }
  }
  results_.resize(choices_.size());
  while (next_prompt_ < prompts_.size() && (max_in_flight_ == 0 || in_flight_ < max_in_flight_)) submit(next_prompt_++);
  load_ahead();
  ctx_.add_active(this);
}

void Generation::load_ahead() {
  if (max_in_flight_ == 0 || cancelled_ || ahead_.valid() || next_prompt_ >= prompts_.size() ||
      !prompts_[next_prompt_].load_images)
    return;
  ahead_prompt_ = next_prompt_;
  try {
    ahead_ = std::async(std::launch::async, prompts_[next_prompt_].load_images);
  } catch (const std::system_error& e) {  // no thread to be had: submit() renders it when its turn comes
    LOCR_DEBUG("generation: cannot render prompt ", next_prompt_, " ahead: ", e.what());
  }
}

void Generation::submit(size_t i) {
  ++in_flight_;
  PreparedPrompt& pp = prompts_[i];
  if (pp.load_images) {
    try {
      if (ahead_.valid() && ahead_prompt_ == i) {
        auto ahead = std::move(ahead_);  // ahead_ is free again whatever get() throws
        pp.images = ahead.get();
        ctx_.metrics().ocr_pages_loaded_ahead.fetch_add(1);
      } else {
        pp.images = pp.load_images();
      }
    } catch (const std::exception& e) {
      for (int j = 0; j < n_; ++j) results_[i * n_ + j].error = e.what();
      return;  // no streams: top_up() finishes these choices with "error"
    }
    pp.load_images = nullptr;
  }
  const runtime::DecodeParams decode = decode_params(i);
  // Speculative decoding: the request's config, else the server's; a draft text alone (a request's
  // draft_text, a PDF page's text layer) turns on the text-layer drafter with 8 drafts per step.
  runtime::SpeculativeConfig spec = params_.speculative.value_or(ctx_.opts().speculative);
  std::string draft_text = params_.draft_text;
  if (pp.load_draft_text && (!spec.enabled() || spec.method == runtime::SpeculativeConfig::Method::kTextLayer) &&
      draft_text.empty() && !(params_.speculative && !params_.speculative->enabled())) {
    try {
      draft_text = pp.load_draft_text();
    } catch (const std::exception& e) {
      LOCR_DEBUG("generation: no draft text for prompt ", i, ": ", e.what());
    }
  }
  if (!draft_text.empty() && !spec.enabled() && !(params_.speculative && !params_.speculative->enabled())) {
    spec.method = runtime::SpeculativeConfig::Method::kTextLayer;
    spec.num_speculative_tokens = 8;
  }
  std::vector<int32_t> corpus;
  if (spec.enabled() && !draft_text.empty()) corpus = runtime::text_layer_corpus(ctx_.model().tokenizer(), draft_text);
  for (int j = 0; j < n_; ++j) {
    Choice& c = *choices_[i * n_ + j];
    runtime::RequestInput in;
    in.request_id = request_id_ + "-" + std::to_string(c.index);
    in.prompt_ids = pp.ids;
    in.images = j + 1 == n_ ? std::move(pp.images) : pp.images;
    in.decode = decode;
    in.spec = spec;
    in.draft_corpus = corpus;
    runtime::SamplingParams& s = in.decode.sampling;
    s.seed = params_.sampling.has_seed ? params_.sampling.seed + static_cast<uint64_t>(j) : ctx_.next_seed();
    s.has_seed = true;
    std::atomic_store(&c.stream, ctx_.engine().submit(std::move(in)));
  }
}

runtime::DecodeParams Generation::decode_params(size_t i) const {
  const runtime::RequestPath& path = ctx_.request_path();
  // The server's defaults, EOS ids, loop guard and forced output, with this request's values over them.
  runtime::DecodeParams d = path.decode(static_cast<int64_t>(prompts_[i].ids.size()), max_tokens_[i]);
  d.sampling = params_.sampling;  // the defaults with the request's values (parse_gen_params)
  d.penalties = params_.penalties;
  d.min_tokens = params_.min_tokens;
  d.stop_token_ids = params_.stop_token_ids;
  d.ignore_eos = params_.ignore_eos;
  d.loop_guard = path.loop_guard(params_.loop_guard, params_.ignore_eos);
  d.logprobs = params_.logprobs < 0 && params_.confidence_threshold > 0 ? 0 : params_.logprobs;
  return d;
}

// On the polling thread: choices that can never run (their images failed, or the generation
// was cancelled before they were submitted) are finished here, and more prompts are submitted
// while there is room.
void Generation::top_up(std::vector<ChoiceDelta>& deltas, std::vector<char>& touched) {
  for (;;) {
    for (auto& c : choices_)
      if (!c->finished && !c->stream && (c->prompt < next_prompt_ || cancelled_)) {
        const bool failed = !results_[c->index].error.empty();
        if (failed) deltas[c->index].error = results_[c->index].error;
        finish(*c, deltas[c->index], failed ? runtime::FinishReason::kError : runtime::FinishReason::kAbort, nullptr);
        touched[c->index] = 1;
      }
    if (cancelled_ || next_prompt_ >= prompts_.size() || (max_in_flight_ > 0 && in_flight_ >= max_in_flight_)) {
      load_ahead();
      return;
    }
    submit(next_prompt_++);
  }
}

Generation::~Generation() {
  ctx_.remove_active(this);
  cancel();
}

void Generation::cancel() {
  cancelled_ = true;
  for (auto& c : choices_)
    if (auto s = std::atomic_load(&c->stream)) s->cancel();
}

int64_t Generation::cached_tokens() const {
  int64_t n = 0;
  for (const auto& c : choices_)
    if (c->stream) n += c->stream->times().cached_tokens;
  return n;
}

void Generation::finish(Choice& c, ChoiceDelta& d, runtime::FinishReason reason, nlohmann::json stop_reason) {
  c.finished = true;
  ++n_finished_;
  d.finished = true;
  d.finish_reason = reason;
  d.stop_reason = stop_reason;
  results_[c.index].finish_reason = reason;
  results_[c.index].stop_reason = std::move(stop_reason);
  if (c.stream) {
    const runtime::RequestTimes t = c.stream->times();
    results_[c.index].drafted_tokens = t.drafted_tokens;
    results_[c.index].accepted_tokens = t.accepted_tokens;
  }
  if (--unfinished_[c.prompt] == 0) {
    --in_flight_;
    // vLLM records n and the longest choice once per prompt, when its last choice finishes.
    if (c.stream) {
      int64_t longest = 0;
      for (int j = 0; j < n_; ++j) longest = std::max<int64_t>(longest, results_[c.prompt * n_ + j].n_tokens);
      ctx_.metrics().observe_prompt_done(n_, longest);
    }
  }
}

void Generation::on_event(Choice& c, runtime::TokenEvent& e, ChoiceDelta& d) {
  if (c.finished) return;  // e.g. tokens after a stop string, before the engine saw the cancel
  ChoiceResult& r = results_[c.index];
  if (e.token >= 0) {
    ++r.n_tokens;
    r.token_ids.push_back(e.token);
    ++completion_tokens_;
    if (params_.confidence_threshold > 0) {
      TokenConfidence& t = r.confidence;
      t.min_logprob = t.tokens == 0 ? e.logprob : std::min(t.min_logprob, e.logprob);
      ++t.tokens;
      t.sum_logprob += e.logprob;
      if (e.logprob < std::log(params_.confidence_threshold)) ++t.below_threshold;
    }
    if (params_.logprobs >= 0) {
      TokenLogprob lp{e.token, e.logprob, std::move(e.top)};
      r.logprobs.push_back(lp);
      d.logprobs.push_back(std::move(lp));
    }
  }
  std::string out = c.text.push(e.token, e.finished);
  if (c.text.stopped()) {
    c.stream->cancel(runtime::FinishReason::kStop);  // the engine records it as a stop, not an abort
    ctx_.metrics().stop_string_finishes.fetch_add(1);
    d.text += out;
    r.text += out;
    finish(c, d, runtime::FinishReason::kStop, stop_reason_json(c.text.stop_reason()));
    return;
  }
  d.text += out;
  r.text += out;
  // An engine fault: the request ends with its message.
  if (e.finished && e.finish_reason == runtime::FinishReason::kError)
    r.error = d.error = e.error.empty() ? "internal error in the engine" : e.error;
  if (e.finished) finish(c, d, e.finish_reason, stop_reason_json(e.stop_reason));
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
  top_up(deltas, touched);
  bool any = false;
  for (auto& c : choices_)
    if (!c->finished && c->stream && drain(*c, deltas[c->index], std::chrono::milliseconds(0))) {
      touched[c->index] = 1;
      any = true;
    }
  if (!any && !done()) {
    // Block on one unfinished choice; with several, wake often enough to serve the others.
    for (auto& c : choices_)
      if (!c->finished && c->stream) {
        const auto t = choices_.size() == 1 ? timeout : std::min(timeout, std::chrono::milliseconds(5));
        if (drain(*c, deltas[c->index], t)) touched[c->index] = 1;
        break;
      }
    for (auto& c : choices_)
      if (!c->finished && c->stream && drain(*c, deltas[c->index], std::chrono::milliseconds(0))) touched[c->index] = 1;
  }
  top_up(deltas, touched);
  for (size_t i = 0; i < choices_.size(); ++i)
    if (touched[i]) {
      deltas[i].index = static_cast<int>(i);
      out.push_back(std::move(deltas[i]));
    }
}

}  // namespace locr::server
