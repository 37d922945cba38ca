// What a frontend hands the engine (RequestInput: the prompt and its DecodeParams) and how results
// come back (RequestStream: a thread-safe queue of token events the HTTP thread waits on; cancel()
// from any thread). Requests are built by runtime/request_path.h.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model/image_input.h"
#include "runtime/finish.h"
#include "runtime/speculative.h"
#include "runtime/token_selector.h"

namespace locr::runtime {

struct RequestInput {
  std::string request_id;
  std::vector<int32_t> prompt_ids;             // image tokens already expanded
  std::vector<model::ProcessedImage> images;   // in prompt order
  DecodeParams decode;                         // how its tokens are chosen and when it ends
  SpeculativeConfig spec;                      // speculative decoding (off unless enabled)
  std::vector<int32_t> draft_corpus;           // text-layer: the document's text, tokenised; replay: the tokens
};

struct TokenEvent {
  int32_t token = -1;            // -1 for a pure finish event
  float logprob = 0;
  std::vector<TopLogprob> top;   // when logprobs were requested
  bool finished = false;
  FinishReason finish_reason = FinishReason::kStop;  // when finished
  StopReason stop_reason;        // a stop token id, or the loop guard's repetition
  std::string error;             // kError: why
};

// Per-request timings the engine fills in (seconds since submit).
struct RequestTimes {
  double queued_s = 0, vision_s = 0, first_token_s = 0, finished_s = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0, image_tokens = 0, generated_tokens = 0;
  int64_t drafted_tokens = 0, accepted_tokens = 0;  // speculative decoding
};

class RequestStream {
 public:
  void push(TokenEvent e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for the next event; nullopt on timeout.
  std::optional<TokenEvent> next(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    TokenEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  // Stops the request at the engine's next step. `reason` is what the engine records as its
  // finish reason in metrics: kAbort (client gone) or kStop (a stop string matched upstream).
  void cancel(FinishReason reason = FinishReason::kAbort) {
    reason_.store(reason);
    cancelled_.store(true);
  }
  bool cancelled() const { return cancelled_.load(); }
  FinishReason cancel_reason() const { return reason_.load(); }
  RequestTimes times() const {
    std::lock_guard<std::mutex> lock(mu_);
    return times_;
  }
  void set_times(const RequestTimes& t) {
    std::lock_guard<std::mutex> lock(mu_);
    times_ = t;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  std::atomic<bool> cancelled_{false};
  std::atomic<FinishReason> reason_{FinishReason::kAbort};
  RequestTimes times_;
};

}  // namespace locr::runtime
