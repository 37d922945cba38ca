// Errors and invariant checks.
//
// Two kinds of failure, kept apart on purpose:
//  - locr::Error: a recoverable error at a boundary (bad config, missing tensor, undecodable image,
//    invalid request). It carries a category so frontends can map it (e.g. to an HTTP status) and a
//    message that says what was expected and what to do.
//  - LOCR_CHECK: a broken internal invariant. Prints file:line and aborts. Kernels and the decode
//    loop use only this, never exceptions.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace locr {

enum class ErrorKind {
  kInvalidArgument,  // caller passed something malformed (request, flag, file content)
  kNotFound,         // a file, tensor or key that should exist does not
  kUnsupported,      // valid but not supported (dtype, feature)
  kIo,               // OS-level read/write failure
  kLimit,            // a configured limit was exceeded (pixels, tokens, body size)
  kInternal,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Concatenates any streamable values into a string: str("expected ", n, " got ", m).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, Args&&... args) {
  throw Error(kind, str(std::forward<Args>(args)...));
}

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace locr

#define LOCR_CHECK(cond, ...)                                                         \
  do {                                                                                \
    if (!(cond)) ::locr::check_failed(__FILE__, __LINE__, #cond, ::locr::str("" __VA_ARGS__)); \
  } while (0)
