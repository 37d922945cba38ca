// HTTP request parsing as `locr serve` receives it (cpp-httplib's request line, headers,
// Content-Length / chunked framing and multipart/form-data parser), run in memory on an
// httplib::Server configured like the real one, with a /v1/ocr handler that reads the form as
// the OCR handler does (every field; `file` as the document). An input that does not start with
// an HTTP method is sent as the multipart body of a POST /v1/ocr. Nothing may crash; every
// response carries a status.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fuzz_util.h"

namespace {

// One request in, the response discarded.
class MemoryStream : public httplib::Stream {
 public:
  explicit MemoryStream(std::string in) : in_(std::move(in)) {}
  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, std::min<size_t>(size, 4096 - std::min<size_t>(4096, out_.size())));
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 1; }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 8000; }
  socket_t socket() const override { return INVALID_SOCKET; }
  const std::string& out() const { return out_; }

 private:
  std::string in_;
  size_t pos_ = 0;
  std::string out_;
};

class FuzzServer : public httplib::Server {
 public:
  FuzzServer() {
    set_payload_max_length(1 << 20);
    Post("/v1/ocr", [](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json body = nlohmann::json::object();
      size_t file_bytes = 0;
      if (req.is_multipart_form_data()) {
        for (const auto& [name, part] : req.files) {
          LOCR_FUZZ_CHECK(part.name == name);
          if (name == "file") {
            file_bytes += part.content.size();
            continue;
          }
          nlohmann::json v = nlohmann::json::parse(part.content, nullptr, /*allow_exceptions=*/false);
          body[name] = !v.is_discarded() && v.is_primitive() ? v : nlohmann::json(part.content);
        }
      }
      LOCR_FUZZ_CHECK(file_bytes <= req.body.size() || req.body.empty());
      res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
    });
    Post("/v1/chat/completions", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  }
  bool run(const std::string& request) {
    MemoryStream s(request);
    bool closed = false;
    const bool ok = process_request(s, /*close_connection=*/true, closed, [](httplib::Request&) {});
    LOCR_FUZZ_CHECK(s.out().empty() || s.out().rfind("HTTP/1.1 ", 0) == 0);
    if (std::getenv("LOCR_FUZZ_VERBOSE")) std::fprintf(stderr, "%s\n", s.out().c_str());
    return ok;
  }
};

bool starts_with_method(const std::string& s) {
  for (const char* m : {"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH "})
    if (s.rfind(m, 0) == 0) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FuzzServer* server = new FuzzServer();
  std::string in(reinterpret_cast<const char*>(data), size);
  if (!starts_with_method(in)) {
    in = "POST /v1/ocr HTTP/1.1\r\nHost: localhost\r\n"
         "Content-Type: multipart/form-data; boundary=locrfuzz\r\n"
         "Content-Length: " + std::to_string(in.size()) + "\r\n\r\n" + in;
  }
  server->run(in);
  return 0;
}
