// Minimal leveled logging to stderr. LOCR_LOG_LEVEL=debug|info|warn|error sets the threshold.
#pragma once

#include "core/error.h"

namespace locr {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_line(LogLevel level, const std::string& msg);

}  // namespace locr

#define LOCR_LOG(level, ...)                                                     \
  do {                                                                           \
    if (static_cast<int>(level) >= static_cast<int>(::locr::log_level()))        \
      ::locr::log_line(level, ::locr::str(__VA_ARGS__));                         \
  } while (0)
#define LOCR_DEBUG(...) LOCR_LOG(::locr::LogLevel::kDebug, __VA_ARGS__)
#define LOCR_INFO(...) LOCR_LOG(::locr::LogLevel::kInfo, __VA_ARGS__)
#define LOCR_WARN(...) LOCR_LOG(::locr::LogLevel::kWarn, __VA_ARGS__)
#define LOCR_ERROR(...) LOCR_LOG(::locr::LogLevel::kError, __VA_ARGS__)
