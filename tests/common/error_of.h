// error_of(f): the message of the locr::Error that f throws, or "" when it throws none (tests that
// check what a refusal says).
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

namespace locr {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace locr
