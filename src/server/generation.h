// One API request's generation: its prompts (one for chat, one or more for completions, pages for
// /v1/ocr) times n choices, each an engine request. Checks lengths against --max-model-len (vLLM's
// wording), builds each request through the server's RequestPath (runtime/request_path.h: the
// defaults, max_tokens against the context, the loop guard), submits, and turns the engine's token
// events into per-choice text deltas through a runtime::TextOutput each (detokenizing, EOS/stop-token
// text suppression, stop strings: held back, then the engine request is cancelled), plus
// log-probabilities and usage counts. Knows nothing of HTTP or JSON shapes.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/image_input.h"
#include "runtime/finish.h"
#include "runtime/request.h"
#include "server/openai_schema.h"
#include "server/server_context.h"

namespace locr::server {

struct PreparedPrompt {
  std::vector<int32_t> ids;                    // image tokens expanded
  std::vector<model::ProcessedImage> images;
  std::string echo_text;                       // completions with echo: the prompt text
  // When set, called to fill `images` just before the prompt goes to the engine, or for the next
  // prompt beyond a Generation's in-flight limit ahead of time on a thread of its own, so that it
  // is ready when a slot frees (/v1/ocr renders a page then, not all pages at once). `ids` must
  // already be final. A throw fails only this prompt's choices (finish_reason "error").
  std::function<std::vector<model::ProcessedImage>()> load_images;
  // When set, called with load_images when the request speculates with the text-layer method: the
  // document's own text for this prompt (/v1/ocr: the PDF page's text layer; "" for none).
  std::function<std::string()> load_draft_text;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  std::vector<runtime::TopLogprob> top;
};

// What happened to one choice since the last poll.
struct ChoiceDelta {
  int index = 0;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  bool finished = false;
  runtime::FinishReason finish_reason = runtime::FinishReason::kStop;  // when finished
  nlohmann::json stop_reason;                  // null, the stop string, the stop token id, or "repetition"
  std::string error;                           // finish_reason "error": why
};

// The sampled tokens' log-probabilities (of the raw model distribution) in summary, when
// GenParams::confidence_threshold > 0.
struct TokenConfidence {
  int64_t tokens = 0;
  double sum_logprob = 0;
  float min_logprob = 0;
  int64_t below_threshold = 0;  // tokens whose probability is under the threshold
};

// A whole choice (accumulated from the deltas).
struct ChoiceResult {
  TokenConfidence confidence;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::vector<int32_t> token_ids;              // the generated ids, the one that ended it included (vLLM's token_ids)
  int64_t drafted_tokens = 0, accepted_tokens = 0;  // speculative decoding, once finished
  std::optional<runtime::FinishReason> finish_reason;  // once finished
  nlohmann::json stop_reason;
  int64_t n_tokens = 0;
  std::string error;                           // finish_reason "error": why (load_images threw, an engine fault)
};

// The JSON of a stop_reason as vLLM writes it: null, the stop token id (a number), the stop string,
// or "repetition" (locr's loop guard).
nlohmann::json stop_reason_json(const runtime::StopReason& r);
// A finish_reason as JSON: its name, or null while the choice runs.
nlohmann::json finish_reason_json(std::optional<runtime::FinishReason> r);

// ApiError 400 (vLLM's wording) unless a prompt of `prompt_len` tokens, plus `max_tokens` when it
// is > 0, fits in max_model_len. Generation checks every prompt with it; chat requests call it
// first from the image sizes, before any image is decoded.
void check_prompt_length(int64_t max_model_len, int64_t prompt_len, int max_tokens);

// ApiError 400 naming --max-choices-per-request when prompts x n is over it.
void check_choice_count(int max_choices, size_t n_prompts, int n);

class Generation {
 public:
  // The checks the constructor makes before submitting anything (lengths, --max-choices-per-request,
  // min_tokens against the tokens left), without submitting: each prompt's max_tokens, and
  // `*prompt_tokens` the prompts' total length. ApiError 400 on the first failure. /v1/ocr/jobs
  // calls it at submission so a request the run would refuse is refused at once.
  static std::vector<int> check(ServerContext& ctx, const GenParams& params, const std::vector<PreparedPrompt>& prompts,
                                int64_t* prompt_tokens = nullptr);
  // Validates lengths (ApiError 400) and submits the choices to the engine: all of them, or with
  // max_prompts_in_flight > 0 the choices of at most that many prompts at a time, the next
  // prompt being submitted from poll() as one finishes (so a 200-page document holds a few
  // rendered pages at a time, and nothing more is rendered once the request is cancelled).
  Generation(ServerContext& ctx, const GenParams& params, std::vector<PreparedPrompt> prompts,
             const std::string& request_id, int max_prompts_in_flight = 0);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Waits up to `timeout` for engine events and appends one merged delta per choice that made
  // progress (choices of a finished generation report finished once).
  void poll(std::vector<ChoiceDelta>& out, std::chrono::milliseconds timeout);
  bool done() const { return n_finished_ == static_cast<int>(choices_.size()); }
  // Thread-safe: asks the engine to drop every unfinished choice.
  void cancel();

  int n_choices() const { return static_cast<int>(choices_.size()); }
  int n_per_prompt() const { return n_; }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const { return completion_tokens_; }
  int64_t cached_tokens() const;
  const std::vector<ChoiceResult>& results() const { return results_; }
  const std::vector<PreparedPrompt>& prompts() const { return prompts_; }
  const GenParams& params() const { return params_; }

 private:
  struct Choice;
  void submit(size_t prompt);
  // With an in-flight limit: starts load_images of the next prompt not yet submitted on a thread
  // of its own (one prompt ahead at most), for submit() to take.
  void load_ahead();
  // Prompt `prompt`'s request as the server's RequestPath builds it, with this request's values.
  runtime::DecodeParams decode_params(size_t prompt) const;
  void top_up(std::vector<ChoiceDelta>& deltas, std::vector<char>& touched);
  bool drain(Choice& c, ChoiceDelta& d, std::chrono::milliseconds timeout);
  void on_event(Choice& c, runtime::TokenEvent& e, ChoiceDelta& d);
  void finish(Choice& c, ChoiceDelta& d, runtime::FinishReason reason, nlohmann::json stop_reason);

  ServerContext& ctx_;
  GenParams params_;
  std::vector<PreparedPrompt> prompts_;
  int n_ = 1;
  std::vector<std::unique_ptr<Choice>> choices_;
  std::vector<ChoiceResult> results_;
  int n_finished_ = 0;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::string request_id_;
  std::vector<int> max_tokens_;         // per prompt
  size_t next_prompt_ = 0;              // prompts before this one have been submitted
  std::vector<int> unfinished_;         // per prompt: choices not finished yet
  int in_flight_ = 0;                   // submitted prompts with unfinished choices
  int max_in_flight_ = 0;               // 0: no limit
  std::atomic<bool> cancelled_{false};
  std::future<std::vector<model::ProcessedImage>> ahead_;  // load_images of prompt ahead_prompt_, running
  size_t ahead_prompt_ = 0;
};

}  // namespace locr::server
