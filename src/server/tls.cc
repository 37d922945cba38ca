#include "server/tls.h"

#include <poll.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "core/error.h"
#include "core/log.h"

namespace locr::server {

namespace {

std::string openssl_reason() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

}  // namespace

TlsContext::TlsContext(const TlsOptions& o) {
  if (o.keyfile.empty() || o.certfile.empty())
    fail(ErrorKind::kInvalidArgument, "TLS needs both --ssl-keyfile and --ssl-certfile");
  if (o.cert_reqs < 0 || o.cert_reqs > 2)
    fail(ErrorKind::kInvalidArgument, "--ssl-cert-reqs must be 0 (none), 1 (optional) or 2 (required), got ", o.cert_reqs);
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (!ctx_) fail(ErrorKind::kIo, "cannot create the TLS context: ", openssl_reason());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx_, SSL_MODE_AUTO_RETRY);
  auto check = [&](bool ok, const std::string& what) {
    if (ok) return;
    const std::string why = openssl_reason();
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    fail(ErrorKind::kInvalidArgument, what, ": ", why);
  };
  check(SSL_CTX_use_certificate_chain_file(ctx_, o.certfile.c_str()) == 1,
        "--ssl-certfile '" + o.certfile + "' is not a usable PEM certificate");
  check(SSL_CTX_use_PrivateKey_file(ctx_, o.keyfile.c_str(), SSL_FILETYPE_PEM) == 1,
        "--ssl-keyfile '" + o.keyfile + "' is not a usable PEM private key for --ssl-certfile");
  check(SSL_CTX_check_private_key(ctx_) == 1, "--ssl-keyfile does not match --ssl-certfile");
  if (!o.ciphers.empty())
    check(SSL_CTX_set_cipher_list(ctx_, o.ciphers.c_str()) == 1, "--ssl-ciphers '" + o.ciphers + "' names no usable cipher");
  if (!o.ca_certs.empty())
    check(SSL_CTX_load_verify_locations(ctx_, o.ca_certs.c_str(), nullptr) == 1,
          "--ssl-ca-certs '" + o.ca_certs + "' is not a usable PEM CA file");
  if (o.cert_reqs > 0) {
    if (o.ca_certs.empty()) {
      SSL_CTX_free(ctx_);
      ctx_ = nullptr;
      fail(ErrorKind::kInvalidArgument, "--ssl-cert-reqs ", o.cert_reqs, " needs --ssl-ca-certs to check client certificates");
    }
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | (o.cert_reqs == 2 ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), nullptr);
  }
}

TlsContext::~TlsContext() {
  if (ctx_) SSL_CTX_free(ctx_);
}

SSL* TlsContext::accept(int sock, time_t timeout_s) const {
  pollfd p{sock, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return nullptr;
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) return nullptr;
  SSL_set_fd(ssl, sock);
  if (SSL_accept(ssl) != 1) {
    LOCR_DEBUG("tls: handshake failed: ", openssl_reason());
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

void tls_close(SSL* ssl) {
  if (!ssl) return;
  SSL_shutdown(ssl);
  SSL_free(ssl);
}

}  // namespace locr::server
