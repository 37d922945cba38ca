#include "runtime/finish.h"

namespace locr::runtime {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "error";
}

bool parse_finish_reason(const std::string& s, FinishReason* out) {
  for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort, FinishReason::kError})
    if (s == finish_reason_name(r)) {
      *out = r;
      return true;
    }
  return false;
}

std::string StopReason::to_string() const {
  switch (kind) {
    case Kind::kNone: return "";
    case Kind::kTokenId: return std::to_string(token);
    case Kind::kString: return text;
    case Kind::kRepetition: return "repetition";
  }
  return "";
}

}  // namespace locr::runtime
