#include "server/ui.h"

#include <httplib.h>

namespace locr::server {

#ifndef LOCR_HAVE_UI
const EmbeddedFile kEmbeddedFiles[] = {{nullptr, nullptr, 0}};
const size_t kEmbeddedFileCount = 0;
#endif

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string html_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

// Only this server: scripts, styles, fonts and fetches from the same origin, page images as data:
// URLs, and inline style attributes (KaTeX positions glyphs with them). No framing.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

void set_security_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-cache");
}

}  // namespace

const EmbeddedFile* find_ui_file(std::string_view name) {
  for (size_t i = 0; i < kEmbeddedFileCount; ++i)
    if (name == kEmbeddedFiles[i].name) return &kEmbeddedFiles[i];
  return nullptr;
}

const char* ui_content_type(std::string_view name) {
  if (ends_with(name, ".html")) return "text/html; charset=utf-8";
  if (ends_with(name, ".js")) return "text/javascript; charset=utf-8";
  if (ends_with(name, ".css")) return "text/css; charset=utf-8";
  if (ends_with(name, ".woff2")) return "font/woff2";
  if (ends_with(name, ".svg")) return "image/svg+xml";
  if (ends_with(name, ".png")) return "image/png";
  return "application/octet-stream";
}

std::string ui_index_html(const std::string& root_path) {
  const EmbeddedFile* f = find_ui_file("index.html");
  if (!f) return {};
  std::string html(reinterpret_cast<const char*>(f->data), f->size);
  const std::string marker = "{{BASE}}";
  const size_t at = html.find(marker);
  if (at != std::string::npos) html.replace(at, marker.size(), html_escape(root_path + "/"));
  return html;
}

void register_ui_routes(httplib::Server& server, const std::string& root_path) {
  if (!find_ui_file("index.html")) return;
  const std::string index = ui_index_html(root_path);
  server.Get("/", [index](const httplib::Request&, httplib::Response& res) {
    set_security_headers(res);
    res.set_content(index, "text/html; charset=utf-8");
  });
  server.Get(R"(/ui/([A-Za-z0-9_./-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1];
    const EmbeddedFile* f = name.find("..") == std::string::npos ? find_ui_file(name) : nullptr;
    if (!f || name == "index.html") {
      res.status = 404;  // the error handler writes the OpenAI-style body
      return;
    }
    set_security_headers(res);
    res.set_content(reinterpret_cast<const char*>(f->data), f->size, ui_content_type(name));
  });
}

}  // namespace locr::server
