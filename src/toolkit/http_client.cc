#include "toolkit/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace locr::toolkit {

namespace {

httplib::Headers to_httplib(const Headers& h) {
  httplib::Headers out;
  for (const auto& [k, v] : h) out.emplace(k, v);
  return out;
}

void fill_response(HttpResponse& r, const httplib::Result& res) {
  if (!res) {
    r.error = httplib::to_string(res.error());
    return;
  }
  r.status = res->status;
  for (const auto& [k, v] : res->headers) r.headers.emplace_back(k, v);
}

}  // namespace

std::string HttpUrl::origin() const { return scheme + "://" + host + ":" + std::to_string(port); }

HttpUrl parse_url(const std::string& url) {
  HttpUrl u;
  size_t p = url.find("://");
  if (p == std::string::npos) fail(ErrorKind::kInvalidArgument, "not a URL (expected http[s]://host[:port]/path): '", url, "'");
  u.scheme = url.substr(0, p);
  std::transform(u.scheme.begin(), u.scheme.end(), u.scheme.begin(), ::tolower);
  if (u.scheme != "http" && u.scheme != "https") fail(ErrorKind::kInvalidArgument, "unsupported URL scheme '", u.scheme, "'");
  u.port = u.scheme == "https" ? 443 : 80;
  const size_t hs = p + 3, slash = url.find('/', hs);
  std::string hostport = url.substr(hs, slash == std::string::npos ? std::string::npos : slash - hs);
  u.path = slash == std::string::npos ? "/" : url.substr(slash);
  const size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    u.port = std::stoi(hostport.substr(colon + 1));
    hostport.resize(colon);
  }
  if (hostport.empty()) fail(ErrorKind::kInvalidArgument, "URL without a host: '", url, "'");
  u.host = hostport;
  return u;
}

std::string url_encode(const std::string& s, bool keep_slash) {
  std::string out;
  char hex[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string HttpResponse::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) { return ::tolower(a) == ::tolower(b); }))
      return v;
  return "";
}

struct HttpClient::Impl {
  httplib::Client cli;
  explicit Impl(const std::string& origin) : cli(origin) {}
};

HttpClient::HttpClient(const std::string& origin, double timeout_s) : impl_(std::make_unique<Impl>(origin)) {
  auto& c = impl_->cli;
  c.set_follow_location(true);
  c.set_connection_timeout(std::chrono::seconds(30));
  const auto us = std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  c.set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(us));
  c.set_write_timeout(std::chrono::seconds(60));
  c.set_keep_alive(true);
}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::get(const std::string& path, const Headers& headers) {
  HttpResponse r;
  auto res = impl_->cli.Get(path, to_httplib(headers));
  fill_response(r, res);
  if (res) r.body = res->body;
  return r;
}

HttpResponse HttpClient::get_stream(const std::string& path, const Headers& headers,
                                    const std::function<bool(const HttpResponse&)>& on_response,
                                    const std::function<bool(const char*, size_t)>& on_data) {
  HttpResponse r;
  auto res = impl_->cli.Get(
      path, to_httplib(headers),
      [&](const httplib::Response& resp) {
        HttpResponse head;
        head.status = resp.status;
        for (const auto& [k, v] : resp.headers) head.headers.emplace_back(k, v);
        return on_response ? on_response(head) : true;
      },
      [&](const char* d, size_t n) { return on_data(d, n); });
  fill_response(r, res);
  return r;
}

HttpResponse HttpClient::post(const std::string& path, const std::string& body, const std::string& content_type,
                              const Headers& headers) {
  HttpResponse r;
  auto res = impl_->cli.Post(path, to_httplib(headers), body, content_type);
  fill_response(r, res);
  if (res) r.body = res->body;
  return r;
}

HttpResponse HttpClient::post_stream(const std::string& path, const std::string& body, const std::string& content_type,
                                     const Headers& headers, const std::function<bool(const char*, size_t)>& on_data) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = to_httplib(headers);
  req.headers.emplace("Content-Type", content_type);
  req.body = body;
  std::string error_body;
  int status = 0;
  req.response_handler = [&](const httplib::Response& resp) {
    status = resp.status;
    return true;
  };
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    if (status < 200 || status >= 300) {  // keep an error body for the message
      error_body.append(d, n);
      return true;
    }
    return on_data(d, n);
  };
  HttpResponse r;
  auto res = impl_->cli.send(req);
  fill_response(r, res);
  if (r.status == 0) r.status = status;  // the receiver stopped the transfer after the headers
  r.body = error_body;
  return r;
}

bool SseParser::feed(const char* data, size_t n, const std::function<bool(const std::string&)>& on_event) {
  buf_.append(data, n);
  size_t start = 0;
  for (;;) {
    const size_t nl = buf_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = buf_.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (has_data_) {
        std::string ev;
        ev.swap(data_);
        has_data_ = false;
        if (!on_event(ev)) {
          buf_.erase(0, start);
          return false;
        }
      }
      continue;
    }
    if (line[0] == ':') continue;
    if (line.rfind("data:", 0) == 0) {
      std::string v = line.substr(5);
      if (!v.empty() && v[0] == ' ') v.erase(0, 1);
      if (has_data_) data_ += "\n";
      data_ += v;
      has_data_ = true;
    }
  }
  buf_.erase(0, start);
  return true;
}

}  // namespace locr::toolkit
