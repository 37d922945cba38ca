// API-key authentication as vLLM does it: `--api-key KEY`, or the VLLM_API_KEY environment
// variable when the flag is not given (the flag wins). With a key set, every API route
// (/v1/..., /tokenize, /detokenize) needs `Authorization: Bearer KEY`; /health, /ping, /version
// and /metrics stay open. Keys are compared in constant time (SHA-256 of both sides, then
// CRYPTO_memcmp), so the time of a refusal says nothing about how much of a guess was right.
#pragma once

#include <optional>
#include <string>

namespace locr::server {

// The key in force: the flag's value when given, else $VLLM_API_KEY, else "" (no authentication).
std::string resolve_api_key(const std::optional<std::string>& flag);

// True if `authorization` (the header's value) is "Bearer <key>" (scheme case-insensitive, as
// vLLM's middleware parses it).
bool api_key_matches(const std::string& authorization, const std::string& key);

// The hex SHA-256 of the key in `authorization` ("Bearer <key>"), "" when there is none: what an
// async OCR job remembers of the key that submitted it (never the key itself).
std::string api_key_digest(const std::string& authorization);

}  // namespace locr::server
