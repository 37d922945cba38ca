#include "server/errors.h"

namespace locr::server {

std::string error_type_for_status(int status) {
  switch (status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 408: return "RequestTimeoutError";
    case 413: return "RequestEntityTooLargeError";
    case 414: return "URITooLongError";
    case 422: return "UnprocessableEntityError";
    case 429: return "RateLimitError";
    case 431: return "RequestHeaderFieldsTooLargeError";
    case 503: return "ServiceUnavailableError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

std::string ApiError::type() const { return type_.empty() ? error_type_for_status(status_) : type_; }

void bad_request(const std::string& message, const std::string& param) { throw ApiError(400, message, param); }

nlohmann::json error_body(int status, const std::string& message, const std::string& param) {
  nlohmann::json e = {{"message", message},
                      {"type", error_type_for_status(status)},
                      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                      {"code", status}};
  return {{"error", e}};
}

nlohmann::json error_body(const ApiError& e) {
  nlohmann::json j = error_body(e.status(), e.what(), e.param());
  j["error"]["type"] = e.type();
  return j;
}

ApiError from_locr_error(const locr::Error& e) {
  switch (e.kind()) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kLimit:
    case ErrorKind::kUnsupported:
    case ErrorKind::kNotFound: return ApiError(400, e.what());
    default: return ApiError(500, e.what());
  }
}

}  // namespace locr::server
