// Errors as the OpenAI API reports them: `{"error": {"message", "type", "param", "code"}}` with an
// HTTP status. Handlers throw ApiError; the HTTP layer turns it (and locr::Error from lower layers)
// into the JSON body and status. Not here: logging or metrics of errors (http_server does that).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace locr::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string type = "")
      : std::runtime_error(message), status_(status), param_(std::move(param)), type_(std::move(type)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  // vLLM's names: BadRequestError (400), AuthenticationError (401), NotFoundError (404), ...
  std::string type() const;

 private:
  int status_;
  std::string param_, type_;
};

// Shorthands for the common cases.
[[noreturn]] void bad_request(const std::string& message, const std::string& param = "");

// The OpenAI error body for an ApiError.
nlohmann::json error_body(const ApiError& e);
nlohmann::json error_body(int status, const std::string& message, const std::string& param = "");
// Maps a lower-layer error to the status the client should see (invalid input -> 400, ...).
ApiError from_locr_error(const locr::Error& e);
std::string error_type_for_status(int status);

}  // namespace locr::server
