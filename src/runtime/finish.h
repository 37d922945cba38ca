// How a request ended, as typed values rather than free strings: the finish reason (OpenAI's and
// vLLM's "stop", "length", "abort", "error") and, for a stop, what stopped it (vLLM's stop_reason:
// a stop token id, a stop string, or locr's loop guard). The engine, `locr generate` and the
// server's output all speak these; the words appear only where JSON or logs are written. Not here:
// the decision itself (runtime/token_selector.h, runtime/text_output.h).
#pragma once

#include <cstdint>
#include <string>

namespace locr::runtime {

enum class FinishReason : uint8_t { kStop, kLength, kAbort, kError };

// "stop", "length", "abort", "error".
const char* finish_reason_name(FinishReason r);
// The inverse; false for any other word.
bool parse_finish_reason(const std::string& s, FinishReason* out);

// Why a request stopped, beyond the plain EOS (kNone): a token of its stop_token_ids, one of its
// stop strings, or the loop guard (degenerate repetition).
struct StopReason {
  enum class Kind : uint8_t { kNone, kTokenId, kString, kRepetition };
  Kind kind = Kind::kNone;
  int32_t token = -1;  // kTokenId
  std::string text;    // kString

  static StopReason token_id(int32_t t) { return {Kind::kTokenId, t, {}}; }
  static StopReason string(std::string s) { return {Kind::kString, -1, std::move(s)}; }
  static StopReason repetition() { return {Kind::kRepetition, -1, {}}; }
  bool none() const { return kind == Kind::kNone; }
  // For logs: "", the token id, the string, or "repetition".
  std::string to_string() const;
  bool operator==(const StopReason& o) const { return kind == o.kind && token == o.token && text == o.text; }
};

// How a request ends: the reason, what stopped it, and for kError the message.
struct Finish {
  FinishReason reason = FinishReason::kStop;
  StopReason stop;
  std::string error;
};

}  // namespace locr::runtime
