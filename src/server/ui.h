// The web UI at `/` (`locr serve`; `--no-ui` turns it off): a single page with its script, style,
// and the Debian-packaged libraries it renders with (marked, DOMPurify, KaTeX and its fonts), all
// embedded in the binary at build time (cmake/EmbedFiles.cmake). Nothing is fetched from elsewhere:
// the page's Content-Security-Policy allows only this server.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace httplib {
class Server;
}

namespace locr::server {

struct EmbeddedFile {
  const char* name;  // served under /ui/<name>; "index.html" is the page at /
  const unsigned char* data;
  size_t size;
};

// The embedded files (none in a build configured with -DLOCR_UI=OFF).
extern const EmbeddedFile kEmbeddedFiles[];
extern const size_t kEmbeddedFileCount;

// The file served as /ui/<name>, or nullptr.
const EmbeddedFile* find_ui_file(std::string_view name);
// "text/javascript; charset=utf-8", "font/woff2", ... from the name's extension.
const char* ui_content_type(std::string_view name);
// index.html with `root_path` (--root-path, "" or "/prefix") as its <base>, so the page's relative
// URLs (scripts, /v1/ocr, /metrics) resolve under the prefix a proxy serves it at.
std::string ui_index_html(const std::string& root_path);

// GET / and GET /ui/<name>. Registered only when the build embeds a UI and --no-ui is not given.
void register_ui_routes(httplib::Server& server, const std::string& root_path);

}  // namespace locr::server
