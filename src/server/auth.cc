#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
#include <cstdlib>

namespace locr::server {

std::string resolve_api_key(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  const char* env = std::getenv("VLLM_API_KEY");
  return env ? std::string(env) : std::string();
}

std::string api_key_digest(const std::string& authorization) {
  const size_t space = authorization.find(' ');
  if (space == std::string::npos) return "";
  const std::string given = authorization.substr(space + 1);
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), d);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : d) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool api_key_matches(const std::string& authorization, const std::string& key) {
  const size_t space = authorization.find(' ');
  if (space == std::string::npos) return false;
  std::string scheme = authorization.substr(0, space);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer") return false;
  const std::string given = authorization.substr(space + 1);
  // Equal-length digests: the comparison time depends on neither the key nor the guess.
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

}  // namespace locr::server
