// Streaming requests to an OpenAI-compatible server (/v1/completions, /v1/chat/completions) for
// `locr chat --mode api` and `locr bench`: sends `stream: true` with usage in the last chunk and
// hands each text delta to a callback as it arrives.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "toolkit/http_client.h"

namespace locr::toolkit {

struct StreamResult {
  int status = 0;
  std::string error;  // transport error, HTTP error body or an error event
  std::string finish_reason;
  int64_t prompt_tokens = -1, completion_tokens = -1;  // from the usage chunk, -1 if none
  int64_t text_chunks = 0;
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

// `chat` selects choices[0].delta.content (chat) or choices[0].text (completions).
StreamResult stream_completion(HttpClient& client, const std::string& path, nlohmann::json body, const Headers& headers,
                               bool chat, const std::function<void(const std::string&)>& on_text);

// A user message content list: image parts (data: URLs) first, then the text (if any).
nlohmann::json user_content(const std::vector<std::string>& image_data_urls, const std::string& text);
// data: URL of an image file (MIME type sniffed from the bytes).
std::string image_file_data_url(const std::string& path);

}  // namespace locr::toolkit
