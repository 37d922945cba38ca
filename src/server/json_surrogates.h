// Lone UTF-16 surrogate escapes in JSON text. Python's json (and so vLLM) accepts "\ud800" and
// keeps the lone surrogate, which becomes U+FFFD once the text is encoded; nlohmann::json refuses
// the whole body. replace_lone_surrogates rewrites each lone \uD800-\uDFFF escape (one not part
// of a high+low pair) to \uFFFD before parsing; everything else is left byte for byte.
#pragma once

#include <string>

namespace locr::server {

// True if the text has a \uD... escape at all (a scan, no copy): only then is the rewrite needed.
bool has_surrogate_escape(const std::string& json_text);
std::string replace_lone_surrogates(const std::string& json_text);

}  // namespace locr::server
