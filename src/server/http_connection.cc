#include "server/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <openssl/ssl.h>

#include "server/errors.h"
#include "server/sse.h"

namespace locr::server {

namespace {

thread_local bool t_close_after = false;
thread_local int t_status_override = 0;
thread_local bool t_response_logged = false;

void ip_and_port(const sockaddr_storage& addr, std::string& ip, int& port) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  ip = host;
}

bool wait_for(int sock, short events, time_t timeout_s) {
  pollfd p{sock, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

}  // namespace

ConnectionStream::ConnectionStream(int sock, time_t read_timeout_s, time_t write_timeout_s, HeaderLimits limits, SSL* ssl)
    : sock_(sock), ssl_(ssl), read_timeout_s_(read_timeout_s), write_timeout_s_(write_timeout_s), limits_(limits) {}

bool ConnectionStream::tls_pending() const { return ssl_ && SSL_pending(ssl_) > 0; }

bool ConnectionStream::peer_closed() const {
  if (tls_pending()) return false;
  pollfd p{sock_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;  // nothing to read: the peer is still there
  if (p.revents & (POLLERR | POLLNVAL)) return true;
  char c;
  if (!ssl_) return ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;  // 0: closed; < 0: reset
  // TLS: the bytes waiting may be a close_notify alert (the peer closed) or application data;
  // peeking through the session, without blocking, tells them apart.
  const int flags = ::fcntl(sock_, F_GETFL);
  ::fcntl(sock_, F_SETFL, flags | O_NONBLOCK);
  const int r = SSL_peek(ssl_, &c, 1);
  const int err = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
  ::fcntl(sock_, F_SETFL, flags);
  return r <= 0 && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE;
}

void ConnectionStream::begin_request() {
  in_headers_ = true;
  header_bytes_ = 0;
  lines_ = 0;
  line_len_ = 0;
  request_line_bytes_ = 0;
  method_.clear();
  t_close_after = false;
  t_status_override = 0;
  t_response_logged = false;
}

bool ConnectionStream::poll_readable(int timeout_ms) const {
  if (tls_pending()) return true;
  pollfd p{sock_, POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms);
  return r > 0;
}

bool ConnectionStream::is_readable() const {
  return buf_pos_ < buf_len_ || tls_pending() || wait_for(sock_, POLLIN, read_timeout_s_);
}

ssize_t ConnectionStream::send_some(const char* ptr, size_t size) {
  if (ssl_) {
    const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    return n > 0 ? n : -1;
  }
  ssize_t n;
  do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

bool ConnectionStream::is_writable() const {
  if (rejected_) return false;
  return wait_for(sock_, POLLOUT, write_timeout_s_) && !peer_closed();
}

void ConnectionStream::reject(int status, const char* reason, const std::string& why) {
  rejected_ = true;
  reject_reason_ = why;
  t_status_override = status;
  const std::string body = json_text(error_body(status, why));
  const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                           "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n";
  const std::string all = head + body;
  size_t off = 0;
  while (off < all.size() && wait_for(sock_, POLLOUT, write_timeout_s_)) {
    const ssize_t n = send_some(all.data() + off, all.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
  if (ssl_) return;
  // The client is likely still sending the rest of its request. Closing with those bytes unread
  // makes the kernel send a reset, which can destroy the answer before the client reads it: end
  // our side, then read and drop what still comes, for at most 2 s and 4 MiB.
  ::shutdown(sock_, SHUT_WR);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int64_t dropped = 0;
  while (dropped < (4 << 20)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{sock_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(sock_, buf_, sizeof buf_, 0);
    if (n <= 0) break;  // the client closed (or reset) its side
    dropped += n;
  }
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (rejected_) return -1;
  if (buf_pos_ == buf_len_) {
    if (!tls_pending() && !wait_for(sock_, POLLIN, read_timeout_s_)) return -1;
    ssize_t n;
    if (ssl_) {
      const int r = SSL_read(ssl_, buf_, sizeof buf_);
      n = r > 0 ? r : SSL_get_error(ssl_, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    } else {
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
    }
    if (n <= 0) return n;
    buf_pos_ = 0;
    buf_len_ = static_cast<size_t>(n);
  }
  if (!in_headers_) {
    const size_t k = std::min(size, buf_len_ - buf_pos_);
    std::memcpy(ptr, buf_ + buf_pos_, k);
    buf_pos_ += k;
    return static_cast<ssize_t>(k);
  }
  // Header bytes go out one line at a time at most, counted on the way.
  size_t k = 0;
  while (k < size && buf_pos_ < buf_len_ && in_headers_) {
    const char c = buf_[buf_pos_++];
    ptr[k++] = c;
    ++header_bytes_;
    if (lines_ == 0) {
      // The method: the request line up to its first space (kept for the log of a refusal).
      if (request_line_bytes_ == static_cast<int64_t>(method_.size()) && c != ' ' && c != '\r' && c != '\n' &&
          method_.size() < 16)
        method_ += c;
      ++request_line_bytes_;
    }
    if (c == '\n') {
      if (line_len_ == 0) in_headers_ = false;  // the empty line ("\r\n" or "\n") ends the headers
      else ++lines_;
      line_len_ = 0;
    } else if (c != '\r') {
      ++line_len_;
    }
  }
  // The request line (method, target, version): past httplib's limit, or alone past the header cap,
  // the target is what is too long.
  const int64_t max_line = std::min(kMaxRequestLine, limits_.max_bytes);
  if (request_line_bytes_ > max_line) {
    reject(414, "URI Too Long",
           str("the request URI is too long: the request line is longer than ", max_line, " bytes (send large "
               "inputs in the request body)"));
    return -1;
  }
  if (header_bytes_ > limits_.max_bytes) {
    reject(431, "Request Header Fields Too Large",
           str("the request line and headers are larger than ", limits_.max_bytes, " bytes"));
    return -1;
  }
  if (lines_ - 1 > limits_.max_fields) {
    reject(431, "Request Header Fields Too Large", str("the request has more than ", limits_.max_fields, " header fields"));
    return -1;
  }
  return static_cast<ssize_t>(k);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (rejected_) return static_cast<ssize_t>(size);  // 431 already sent; httplib's 400 is dropped
  if (!wait_for(sock_, POLLOUT, write_timeout_s_)) return -1;
  return send_some(ptr, size);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip_and_port(addr, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip_and_port(addr, ip, port);
}

void close_connection_after_response() { t_close_after = true; }

bool take_close_after_response() {
  const bool v = t_close_after;
  t_close_after = false;
  return v;
}

int& status_override() { return t_status_override; }

bool& response_logged() { return t_response_logged; }

}  // namespace locr::server
