// A small HTTP(S) client over cpp-httplib (kept out of this header: it is slow to compile):
// plain and streamed GET/POST, redirects followed, and a Server-Sent-Events line parser.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace locr::toolkit {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpUrl {
  std::string scheme = "http", host;
  int port = 80;
  std::string path = "/";  // with the query string
  std::string origin() const;  // scheme://host:port
};
// Parses http://host[:port]/path?query and https://...; throws kInvalidArgument otherwise.
HttpUrl parse_url(const std::string& url);
std::string url_encode(const std::string& s, bool keep_slash = false);

struct HttpResponse {
  int status = 0;          // 0 when the request failed before a response (see error)
  std::string error;       // transport error text
  Headers headers;
  std::string body;        // empty for streamed requests
  std::string header(const std::string& name) const;  // case-insensitive, "" if absent
  bool ok() const { return status >= 200 && status < 300; }
};

class HttpClient {
 public:
  explicit HttpClient(const std::string& origin, double timeout_s = 600);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpResponse get(const std::string& path, const Headers& headers = {});
  // Streams the body to on_data (return false to abort); on_response sees status and headers first
  // (return false to abort before the body).
  HttpResponse get_stream(const std::string& path, const Headers& headers,
                          const std::function<bool(const HttpResponse&)>& on_response,
                          const std::function<bool(const char*, size_t)>& on_data);
  HttpResponse post(const std::string& path, const std::string& body, const std::string& content_type,
                    const Headers& headers = {});
  HttpResponse post_stream(const std::string& path, const std::string& body, const std::string& content_type,
                           const Headers& headers, const std::function<bool(const char*, size_t)>& on_data);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits a text/event-stream into events; calls on_event with each event's data (data: lines
// joined by \n). Comments and other fields are ignored.
class SseParser {
 public:
  // Returns false if on_event asked to stop.
  bool feed(const char* data, size_t n, const std::function<bool(const std::string&)>& on_event);

 private:
  std::string buf_, data_;
  bool has_data_ = false;
};

}  // namespace locr::toolkit
