// What a frontend hands the engine (RequestInput) and how results come back (RequestStream: a
// thread-safe queue of token events the HTTP thread waits on; cancel() from any thread).
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

#include "model/processor.h"
#include "runtime/loop_guard.h"
#include "runtime/sampler.h"

namespace locr::runtime {

struct RequestInput {
  std::string request_id;
  std::vector<int32_t> prompt_ids;             // image tokens already expanded
  std::vector<model::ProcessedImage> images;   // in prompt order
  SamplingParams sampling;
  int max_tokens = 16;
  std::vector<int32_t> eos_ids;                // model EOS ids (ignored with ignore_eos)
  std::vector<int32_t> stop_token_ids;         // extra stop ids (always honoured)
  bool ignore_eos = false;
  int min_tokens = 0;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int logprobs = -1;                           // -1: none; k >= 0: chosen token + top k
  LoopGuardConfig loop_guard;                  // stop on degenerate repetition loops
  // Testing (`--debug-forced-output`): when not empty, output token k is forced_ids[k] instead of
  // a sampled one, then eos_ids[0] (finish_reason "stop"; without an EOS id the request just
  // stops). The model still runs every step, so timings, KV and logprobs are real: a reported
  // logprob is the model's log-probability of the forced token. Such requests sample on the host,
  // and the loop guard does not cut them short.
  std::vector<int32_t> forced_ids;
};

struct TopLogprob {
  int32_t token;
  float logprob;
};

struct TokenEvent {
  int32_t token = -1;            // -1 for a pure finish event
  float logprob = 0;
  std::vector<TopLogprob> top;   // when logprobs were requested
  bool finished = false;
  std::string finish_reason;     // "stop", "length", "abort", "error"
  std::string stop_reason;       // e.g. "repetition", or the stop token id as text
  std::string error;
};

// Per-request timings the engine fills in (seconds since submit).
struct RequestTimes {
  double queued_s = 0, vision_s = 0, first_token_s = 0, finished_s = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0, image_tokens = 0, generated_tokens = 0;
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
  // finish reason in metrics: "abort" (client gone) or "stop" (a stop string matched upstream).
  void cancel(const char* reason = "abort") {
    reason_.store(reason);
    cancelled_.store(true);
  }
  bool cancelled() const { return cancelled_.load(); }
  const char* cancel_reason() const { return reason_.load(); }
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
  std::atomic<const char*> reason_{"abort"};
  RequestTimes times_;
};

}  // namespace locr::runtime
