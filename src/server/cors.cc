#include "server/cors.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace locr::server {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Starlette's lists: "*" among the methods means all of these.
std::vector<std::string> methods_of(const CorsOptions& o) {
  if (contains(o.methods, "*")) return {"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"};
  return o.methods;
}

bool origin_allowed(const CorsOptions& o, const std::string& origin) {
  return contains(o.origins, "*") || contains(o.origins, origin);
}

}  // namespace

std::vector<std::string> parse_cors_list(const std::string& value, const std::string& flag) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(value);
  } catch (const std::exception&) {
    if (!value.empty() && value[0] != '[' && value[0] != '{' && value[0] != '"') return {value};
    fail(ErrorKind::kInvalidArgument, "--", flag, " expects a JSON list of strings such as '[\"https://a.example\"]', got '",
         value, "'");
  }
  if (j.is_string()) return {j.get<std::string>()};
  if (!j.is_array()) fail(ErrorKind::kInvalidArgument, "--", flag, " expects a JSON list of strings, got '", value, "'");
  std::vector<std::string> out;
  for (const auto& e : j) {
    if (!e.is_string()) fail(ErrorKind::kInvalidArgument, "--", flag, " expects a JSON list of strings, got '", value, "'");
    out.push_back(e.get<std::string>());
  }
  return out;
}

CorsPreflight cors_preflight(const CorsOptions& o, const std::string& origin, const std::string& request_method,
                             const std::string& request_headers, bool has_request_headers) {
  const bool all_origins = contains(o.origins, "*");
  const bool all_headers = contains(o.headers, "*");
  const bool explicit_origin = !all_origins || o.credentials;
  CorsPreflight p;
  if (explicit_origin) p.headers.emplace_back("Vary", "Origin");
  else p.headers.emplace_back("Access-Control-Allow-Origin", "*");
  const std::vector<std::string> methods = methods_of(o);
  p.headers.emplace_back("Access-Control-Allow-Methods", join(methods));
  p.headers.emplace_back("Access-Control-Max-Age", "600");
  // The CORS-safelisted request headers are always allowed.
  std::set<std::string> allowed_headers = {"accept", "accept-language", "content-language", "content-type"};
  for (const auto& h : o.headers) allowed_headers.insert(lower(h));
  if (!all_headers) p.headers.emplace_back("Access-Control-Allow-Headers", join({allowed_headers.begin(), allowed_headers.end()}));
  if (o.credentials) p.headers.emplace_back("Access-Control-Allow-Credentials", "true");

  std::vector<std::string> failures;
  if (origin_allowed(o, origin)) {
    if (explicit_origin) p.headers.emplace_back("Access-Control-Allow-Origin", origin);
  } else {
    failures.push_back("origin");
  }
  if (!contains(methods, request_method)) failures.push_back("method");
  if (all_headers && has_request_headers) {
    p.headers.emplace_back("Access-Control-Allow-Headers", request_headers);
  } else if (has_request_headers) {
    size_t start = 0;
    while (start <= request_headers.size()) {
      size_t comma = request_headers.find(',', start);
      if (comma == std::string::npos) comma = request_headers.size();
      const std::string h = lower(trim(request_headers.substr(start, comma - start)));
      if (!allowed_headers.count(h)) {
        failures.push_back("headers");
        break;
      }
      start = comma + 1;
    }
  }
  if (failures.empty()) {
    p.body = "OK";
  } else {
    p.status = 400;
    p.body = "Disallowed CORS " + join(failures);
  }
  return p;
}

HeaderList cors_simple_headers(const CorsOptions& o, const std::string& origin, bool has_cookie) {
  const bool all_origins = contains(o.origins, "*");
  HeaderList h;
  // A request with cookies needs its origin named (a browser refuses "*" with credentials).
  if (all_origins && !has_cookie) h.emplace_back("Access-Control-Allow-Origin", "*");
  if (o.credentials) h.emplace_back("Access-Control-Allow-Credentials", "true");
  if ((all_origins && has_cookie) || (!all_origins && origin_allowed(o, origin))) {
    h.emplace_back("Access-Control-Allow-Origin", origin);
    h.emplace_back("Vary", "Origin");
  }
  return h;
}

}  // namespace locr::server
