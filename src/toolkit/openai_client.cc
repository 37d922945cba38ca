#include "toolkit/openai_client.h"

#include "core/error.h"
#include "io/file.h"
#include "io/image.h"
#include "toolkit/synth_image.h"

namespace locr::toolkit {

using json = nlohmann::json;

StreamResult stream_completion(HttpClient& client, const std::string& path, json body, const Headers& headers, bool chat,
                               const std::function<void(const std::string&)>& on_text) {
  body["stream"] = true;
  if (!body.contains("stream_options")) body["stream_options"] = {{"include_usage", true}};
  StreamResult res;
  SseParser sse;
  bool done = false;
  const auto r = client.post_stream(path, body.dump(), "application/json", headers, [&](const char* d, size_t n) {
    return sse.feed(d, n, [&](const std::string& ev) {
      if (ev == "[DONE]") {
        done = true;
        return true;
      }
      json j = json::parse(ev, nullptr, false);
      if (j.is_discarded()) return true;
      if (j.contains("error")) {
        res.error = j["error"].is_object() ? j["error"].value("message", j["error"].dump()) : j["error"].dump();
        return false;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        res.prompt_tokens = j["usage"].value("prompt_tokens", int64_t{-1});
        res.completion_tokens = j["usage"].value("completion_tokens", int64_t{-1});
      }
      if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
        const auto& c = j["choices"][0];
        std::string text;
        if (chat) {
          if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
            text = c["delta"]["content"].get<std::string>();
        } else if (c.contains("text") && c["text"].is_string()) {
          text = c["text"].get<std::string>();
        }
        if (c.contains("finish_reason") && c["finish_reason"].is_string()) res.finish_reason = c["finish_reason"];
        if (!text.empty()) {
          ++res.text_chunks;
          on_text(text);
        }
      }
      return true;
    });
  });
  res.status = r.status;
  if (res.error.empty()) {
    if (!r.error.empty() && !done) {
      res.error = "request failed: " + r.error + (r.status ? " (HTTP " + std::to_string(r.status) + ")" : "");
    } else if (r.status && (r.status < 200 || r.status >= 300)) {
      json j = json::parse(r.body, nullptr, false);
      std::string msg = r.body;
      if (!j.is_discarded() && j.contains("error"))
        msg = j["error"].is_object() ? j["error"].value("message", j["error"].dump()) : j["error"].dump();
      res.error = "HTTP " + std::to_string(r.status) + ": " + msg;
    }
  }
  return res;
}

json user_content(const std::vector<std::string>& urls, const std::string& text) {
  if (urls.empty()) return text;
  json parts = json::array();
  for (const auto& u : urls) parts.push_back({{"type", "image_url"}, {"image_url", {{"url", u}}}});
  if (!text.empty()) parts.push_back({{"type", "text"}, {"text", text}});
  return parts;
}

std::string image_file_data_url(const std::string& path) {
  const std::string bytes = io::read_file(path);
  const char* mime = "application/octet-stream";
  switch (io::detect_image_format(bytes)) {
    case io::ImageFormat::kPng: mime = "image/png"; break;
    case io::ImageFormat::kJpeg: mime = "image/jpeg"; break;
    case io::ImageFormat::kWebp: mime = "image/webp"; break;
    case io::ImageFormat::kGif: mime = "image/gif"; break;
    case io::ImageFormat::kBmp: mime = "image/bmp"; break;
    case io::ImageFormat::kTiff: mime = "image/tiff"; break;
    default: fail(ErrorKind::kInvalidArgument, path, " is not an image (PNG, JPEG, WebP, GIF, BMP, TIFF)");
  }
  return std::string("data:") + mime + ";base64," + base64_encode(bytes);
}

}  // namespace locr::toolkit
