// CORS as vLLM serves it (Starlette's CORSMiddleware with --allowed-origins, --allowed-methods,
// --allowed-headers, --allow-credentials; all origins, methods and headers by default). A request
// without an Origin header gets no CORS headers; an OPTIONS request with Origin and
// Access-Control-Request-Method is a preflight, answered here (200, or 400 "Disallowed CORS ..."
// naming what was refused); any other request with Origin gets the simple-response headers on
// whatever it is answered with, errors included.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace locr::server {

struct CorsOptions {
  std::vector<std::string> origins{"*"};
  std::vector<std::string> methods{"*"};
  std::vector<std::string> headers{"*"};
  bool credentials = false;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// A flag's value as vLLM reads it (json.loads): a JSON list of strings; a bare string is one item.
// Throws locr::Error kInvalidArgument naming `flag` otherwise.
std::vector<std::string> parse_cors_list(const std::string& value, const std::string& flag);

struct CorsPreflight {
  int status = 200;
  std::string body;  // "OK" or "Disallowed CORS origin, method, headers"
  HeaderList headers;
};

CorsPreflight cors_preflight(const CorsOptions& o, const std::string& origin, const std::string& request_method,
                             const std::string& request_headers, bool has_request_headers);

// The headers a non-preflight response to a request with this Origin carries.
HeaderList cors_simple_headers(const CorsOptions& o, const std::string& origin, bool has_cookie);

}  // namespace locr::server
