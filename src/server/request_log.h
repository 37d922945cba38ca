// Per-request facts for the access log line, kept thread-locally: httplib runs a request's
// routing, handler, streamed body and logger on one worker thread, in that order.
#pragma once

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <string>

namespace locr::server {

struct RequestLog {
  bool active = false;
  std::chrono::steady_clock::time_point start;
  std::string id;
  int64_t prompt_tokens = -1, completion_tokens = -1;
  std::string note;  // e.g. "client disconnected", "stream"
  bool http10 = false;  // an HTTP/1.0 request: no chunked framing in its response
};

RequestLog& request_log();

// `text` cut to `max_len` characters (--max-log-len; -1: all), UTF-8 sequences kept whole, with
// the number of characters left out.
std::string clip_for_log(const std::string& text, int max_len);

}  // namespace locr::server
