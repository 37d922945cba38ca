// TLS for `locr serve --ssl-keyfile KEY --ssl-certfile CERT` (vLLM's uvicorn flags), with OpenSSL:
// the server context (certificate chain, key, optional CA file for client certificates with
// --ssl-cert-reqs 1|2, cipher list for TLS <= 1.2), and the handshake on an accepted socket. The
// connection loop (http_server.cc) then reads and writes through the SSL object
// (http_connection.h); everything above it — routing, streaming, limits — is the same as HTTP.
#pragma once

#include <ctime>
#include <memory>
#include <string>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace locr::server {

struct TlsOptions {
  std::string keyfile, certfile;  // both or neither; neither: plain HTTP
  std::string ca_certs;           // --ssl-ca-certs: CA file client certificates are checked against
  int cert_reqs = 0;              // --ssl-cert-reqs: 0 none, 1 optional, 2 required (Python's ssl.CERT_*)
  std::string ciphers;            // --ssl-ciphers (TLS 1.2 and below)
  bool enabled() const { return !certfile.empty(); }
};

class TlsContext {
 public:
  // Loads the certificate and key; throws locr::Error (kInvalidArgument / kIo) naming the file and
  // OpenSSL's reason when either cannot be used, or they do not match.
  explicit TlsContext(const TlsOptions& o);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // The server side of the handshake on `sock` (blocking, bounded by the socket's receive
  // timeout and `timeout_s`). Returns the SSL object, or nullptr (logged at debug) on failure.
  SSL* accept(int sock, time_t timeout_s) const;

 private:
  SSL_CTX* ctx_ = nullptr;
};

// Sends close_notify (best effort) and frees the object.
void tls_close(SSL* ssl);

}  // namespace locr::server
