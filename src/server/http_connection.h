// One HTTP connection as httplib sees it (a Stream over the accepted socket), with the limits
// httplib 0.11 (a compiled Debian library, so its CPPHTTPLIB_* macros cannot be changed) does not
// have: the request line and headers together are capped in bytes and in fields, and past either
// cap the client gets 431 at once and the connection is closed; a request line longer than
// kMaxRequestLine (or than the header cap) gets 414 URI Too Long at once, the way httplib answers
// one between the two (it reads the line whole first). Either refusal is an OpenAI JSON error; the
// rest of the request is read and dropped for a moment before the connection closes, so the
// client reads the answer instead of a reset. Also the flag a handler sets when
// the connection must close after its response (a refused body that was never read, a body sent
// without length to an HTTP/1.0 client). Over TLS (--ssl-certfile) the stream reads and writes
// through the connection's SSL object; the limits and the loop are the same.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include <httplib.h>

typedef struct ssl_st SSL;

namespace locr::server {

// httplib 0.11's CPPHTTPLIB_REQUEST_URI_MAX_LENGTH: the longest request line (CRLF included) it
// takes; longer is 414.
constexpr int64_t kMaxRequestLine = 8192;

struct HeaderLimits {
  int64_t max_bytes = 64 << 10;  // request line + header lines, CRLFs included
  int max_fields = 100;
};

class ConnectionStream : public httplib::Stream {
 public:
  // `ssl`: the connection's TLS session after the handshake (not owned), or nullptr for plain HTTP.
  ConnectionStream(int sock, time_t read_timeout_s, time_t write_timeout_s, HeaderLimits limits, SSL* ssl = nullptr);
  ConnectionStream(const ConnectionStream&) = delete;
  ConnectionStream& operator=(const ConnectionStream&) = delete;
  // The peer closed or reset the connection (checked without blocking or consuming data).
  bool peer_closed() const;

  // Waits (in short slices, while keep_going() holds) up to timeout_s for the next request's
  // first bytes; false on timeout, EOF or error.
  template <class KeepGoing>
  bool wait_for_request(time_t timeout_s, KeepGoing keep_going);
  // A new request starts: its header bytes are counted from here.
  void begin_request();
  // The header limits were hit: 431 (or 414) was sent and nothing more is read or written.
  bool rejected() const { return rejected_; }
  // Of a rejected request: why, and its method as far as it was read ("" if none).
  const std::string& reject_reason() const { return reject_reason_; }
  const std::string& request_method() const { return method_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return sock_; }

 private:
  bool poll_readable(int timeout_ms) const;
  bool tls_pending() const;
  ssize_t send_some(const char* ptr, size_t size);
  void reject(int status, const char* reason, const std::string& why);

  int sock_;
  SSL* ssl_;
  time_t read_timeout_s_, write_timeout_s_;
  HeaderLimits limits_;
  char buf_[16384];
  size_t buf_pos_ = 0, buf_len_ = 0;
  bool in_headers_ = true;
  int64_t header_bytes_ = 0;
  int lines_ = 0;
  int64_t line_len_ = 0;
  int64_t request_line_bytes_ = 0;  // of the request line so far, CRLF included
  bool rejected_ = false;
  std::string reject_reason_, method_;
};

template <class KeepGoing>
bool ConnectionStream::wait_for_request(time_t timeout_s, KeepGoing keep_going) {
  if (buf_pos_ < buf_len_) return true;
  for (int64_t waited_ms = 0; waited_ms <= int64_t{timeout_s} * 1000; waited_ms += 50) {
    if (!keep_going()) return false;
    if (poll_readable(50)) return true;
  }
  return false;
}

// For handlers: close this connection once the current response is written.
void close_connection_after_response();
// Read (and reset) by the connection loop after each request.
bool take_close_after_response();
// The status the access log and metrics should show instead of httplib's (431, 414), or 0.
int& status_override();
// Set by the access logger: httplib logged this request. A request refused while its request line
// was still being read never reaches the logger; the connection loop logs it then.
bool& response_logged();

}  // namespace locr::server
