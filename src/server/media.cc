#include "server/media.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <fstream>

#include <httplib.h>

#include "server/decode_budget.h"
#include "server/errors.h"

namespace locr::server {

namespace {

int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string read_data_url(const std::string& url) {
  const size_t comma = url.find(',');
  if (comma == std::string::npos) bad_request("malformed data: URL (no ',' before the data)");
  const std::string meta = lower(url.substr(5, comma - 5));
  if (meta.size() < 7 || meta.compare(meta.size() - 7, 7, ";base64") != 0)
    bad_request("only base64 data: URLs are supported (data:image/png;base64,...)");
  const std::string_view data(url.data() + comma + 1, url.size() - comma - 1);
  auto bytes = base64_decode(data);
  if (!bytes) bad_request("the image data: URL is not valid base64");
  if (bytes->empty()) bad_request("the image data: URL is empty");
  return std::move(*bytes);
}

// file:///absolute/path or file://localhost/absolute/path (RFC 8089). Any other host is refused,
// never read as a path relative to the server's working directory. Every way a file can fail to
// qualify (missing, outside the allowed directory, not a regular file, unreadable) gets the same
// message, so an error never tells whether a path exists outside --allowed-local-media-path.
std::string read_local_file(const std::string& url, const ServerOptions& opts) {
  if (opts.allowed_local_media_path.empty())
    bad_request("file:// image URLs are disabled; start the server with --allowed-local-media-path DIR");
  const std::string rest = url.substr(7);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) bad_request("malformed file:// URL (use file:///absolute/path)");
  const std::string host = lower(rest.substr(0, slash));
  if (!host.empty() && host != "localhost")
    bad_request(str("file:// URLs with a host ('", rest.substr(0, slash),
                    "') are not supported; use file:///absolute/path (a file on this server)"));
  const std::string path = percent_decode(rest.substr(slash));
  const std::string refused =
      str("local image '", path, "' is not a readable file under --allowed-local-media-path");
  char real[PATH_MAX], root[PATH_MAX];
  if (!::realpath(opts.allowed_local_media_path.c_str(), root))
    bad_request("the allowed local media path does not exist");
  if (path.find('\0') != std::string::npos || !::realpath(path.c_str(), real)) bad_request(refused);
  const std::string r = real, base = std::string(root) + (std::string(root) == "/" ? "" : "/");
  struct stat st {};
  if (r.rfind(base, 0) != 0 || ::stat(r.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) bad_request(refused);
  std::ifstream f(r, std::ios::binary);
  if (!f) bad_request(refused);
  std::string bytes;
  char buf[65536];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(f.gcount()));
    if (static_cast<int64_t>(bytes.size()) > opts.max_image_bytes)
      bad_request(str("local image '", path, "' is larger than ", opts.max_image_bytes, " bytes"));
  }
  if (f.bad()) bad_request(refused);
  return bytes;
}

std::string read_remote(const std::string& url, const ServerOptions& opts) {
  const size_t scheme_end = url.find("://");
  const size_t host_begin = scheme_end + 3;
  size_t path_begin = url.find('/', host_begin);
  if (path_begin == std::string::npos) path_begin = url.size();
  const std::string authority = url.substr(host_begin, path_begin - host_begin);
  if (authority.find('@') != std::string::npos) bad_request("image URLs with credentials are not allowed");
  std::string host = authority;
  if (!host.empty() && host[0] == '[') host = host.substr(0, host.find(']') + 1);
  else if (auto colon = host.rfind(':'); colon != std::string::npos) host = host.substr(0, colon);
  host = lower(host);
  bool allowed = false;
  for (const auto& d : opts.allowed_media_domains) allowed |= lower(d) == host;
  if (!allowed) {
    if (opts.allowed_media_domains.empty())
      bad_request("remote image URLs are disabled; send the image as a data: URL, or start the server with "
                  "--allowed-media-domains HOST");
    bad_request(str("the image host '", host, "' is not in --allowed-media-domains"));
  }
  httplib::Client cli(url.substr(0, path_begin));
  cli.set_connection_timeout(opts.media_fetch_timeout_s, 0);
  cli.set_read_timeout(opts.media_fetch_timeout_s, 0);
  cli.set_write_timeout(opts.media_fetch_timeout_s, 0);
  std::string body;
  bool too_large = false;
  const std::string path = path_begin < url.size() ? url.substr(path_begin) : "/";
  auto res = cli.Get(path, [&](const char* data, size_t n) {
    body.append(data, n);
    too_large = static_cast<int64_t>(body.size()) > opts.max_image_bytes;
    return !too_large;
  });
  if (too_large) bad_request(str("the image at '", url, "' is larger than ", opts.max_image_bytes, " bytes"));
  if (!res) bad_request(str("cannot fetch the image at '", url, "': ", httplib::to_string(res.error())));
  if (res->status != 200) bad_request(str("fetching the image at '", url, "' returned HTTP ", res->status));
  return body;
}

}  // namespace

std::string base64_encode(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = uint32_t{static_cast<unsigned char>(in[i])} << 16 |
                       uint32_t{static_cast<unsigned char>(in[i + 1])} << 8 | static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t{static_cast<unsigned char>(in[i])} << 16;
    if (i + 1 < in.size()) v |= uint32_t{static_cast<unsigned char>(in[i + 1])} << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    const int v = b64_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string fetch_image_bytes(const std::string& url, const ServerOptions& opts) {
  const std::string head = lower(url.substr(0, 8));
  if (head.rfind("data:", 0) == 0) return read_data_url(url);
  if (head.rfind("file://", 0) == 0) return read_local_file(url, opts);
  if (head.rfind("http://", 0) == 0 || head.rfind("https://", 0) == 0) return read_remote(url, opts);
  bad_request("unsupported image URL (use a data: URL, a file:// URL under --allowed-local-media-path, or an "
              "allowed http(s) URL)");
}

std::vector<ImageSource> fetch_images(const std::vector<std::string>& urls, const ServerOptions& opts) {
  std::vector<ImageSource> sources;
  io::DecodeOptions dopts;
  dopts.max_pixels = opts.max_image_pixels;
  int64_t total = 0, total_bytes = 0;
  for (size_t i = 0; i < urls.size(); ++i) {
    try {
      ImageSource s;
      s.bytes = fetch_image_bytes(urls[i], opts);
      s.size = io::probe_image(s.bytes, dopts);
      total += static_cast<int64_t>(s.size.width) * s.size.height;
      total_bytes += static_cast<int64_t>(s.bytes.size());
      sources.push_back(std::move(s));
    } catch (const ApiError& e) {
      throw ApiError(400, str("image ", i + 1, ": ", e.what()), "messages");
    } catch (const locr::Error& e) {
      throw ApiError(400, str("image ", i + 1, ": ", e.what()), "messages");
    }
    // Fetched images wait here until they are decoded: all of them together are held to the size
    // a request body may have (data: URLs are in the body anyway).
    if (total_bytes > opts.max_body_bytes)
      throw ApiError(400,
                     str("the images of this request are more than ", opts.max_body_bytes,
                         " bytes in all (--max-body-bytes) by image ", i + 1, "; send fewer per request"),
                     "messages");
    if (total > opts.max_request_image_pixels)
      throw ApiError(400,
                     str("the images of this request decode to more than ", opts.max_request_image_pixels,
                         " pixels in all (--max-request-image-pixels): ", total, " pixels up to image ", i + 1,
                         " (", sources.back().size.width, "x", sources.back().size.height,
                         "); downscale the images or send fewer per request"),
                     "messages");
  }
  return sources;
}

std::vector<io::Image> decode_images(std::vector<ImageSource> sources, ServerContext& ctx) {
  std::vector<io::Image> images;
  io::DecodeOptions dopts;
  dopts.max_pixels = ctx.opts().max_image_pixels;
  for (size_t i = 0; i < sources.size(); ++i) {
    try {
      const DecodeBudget::Lease lease(ctx.decode_budget(),
                                      DecodeBudget::estimate(sources[i].size.width, sources[i].size.height));
      io::Image full = io::decode_image(sources[i].bytes, dopts);
      std::string().swap(sources[i].bytes);
      images.push_back(ctx.model().shrink_for_model(std::move(full)));
    } catch (const locr::Error& e) {
      throw ApiError(400, str("image ", i + 1, ": ", e.what()), "messages");
    }
  }
  return images;
}

}  // namespace locr::server
