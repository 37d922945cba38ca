#include "toolkit/hub.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "toolkit/http_client.h"
#include "toolkit/progress.h"

namespace locr::toolkit {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool env_true(const char* name) {
  std::string v = env(name);
  for (auto& c : v) c = static_cast<char>(::tolower(c));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

struct RemoteFile {
  std::string path, sha256, blob_id, url;  // url: path+query on the endpoint origin
  uint64_t size = 0;
  bool has_size = false;
  std::string blob_name() const { return !sha256.empty() ? sha256 : blob_id; }
};

struct Listing {
  std::string commit;
  std::vector<RemoteFile> files;
};

struct Endpoint {
  std::string origin, prefix;
};

Endpoint split_endpoint(const std::string& ep) {
  HttpUrl u = parse_url(ep);
  std::string prefix = u.path;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return {u.origin(), prefix};
}

class Digest {
 public:
  explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { EVP_DigestInit_ex(ctx_.get(), md, nullptr); }
  void update(const void* d, size_t n) { EVP_DigestUpdate(ctx_.get(), d, n); }
  std::string hex() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), out, &n);
    static const char* k = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < n; ++i) s += k[out[i] >> 4], s += k[out[i] & 15];
    return s;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

void digest_file(Digest& d, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::kIo, "cannot read ", path);
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.update(buf.data(), static_cast<size_t>(f.gcount()));
  }
}

Headers auth_headers(const HubOptions& o) {
  Headers h{{"User-Agent", "locr-pull/1"}};
  if (!o.token.empty()) h.emplace_back("Authorization", "Bearer " + o.token);
  return h;
}

Listing list_hf(HttpClient& cli, const Endpoint& ep, const std::string& repo, const HubOptions& o) {
  const std::string path = ep.prefix + "/api/models/" + repo + "/revision/" + url_encode(o.revision) + "?blobs=true";
  const auto r = cli.get(path, auth_headers(o));
  if (!r.ok())
    fail(r.status == 404 || r.status == 401 ? ErrorKind::kNotFound : ErrorKind::kIo, "listing ", repo, "@", o.revision, " at ",
         ep.origin, ep.prefix, " failed: ", r.status ? "HTTP " + std::to_string(r.status) : r.error,
         r.status == 401 ? " (gated or private: set HF_TOKEN)" : "");
  Listing l;
  const json j = json::parse(r.body);
  l.commit = j.value("sha", o.revision);
  for (const auto& s : j.at("siblings")) {
    RemoteFile f;
    f.path = s.at("rfilename").get<std::string>();
    if (s.contains("size") && s["size"].is_number()) f.size = s["size"].get<uint64_t>(), f.has_size = true;
    f.blob_id = s.value("blobId", "");
    if (s.contains("lfs") && s["lfs"].is_object()) {
      f.sha256 = s["lfs"].value("sha256", s["lfs"].value("oid", ""));
      if (s["lfs"].contains("size")) f.size = s["lfs"]["size"].get<uint64_t>(), f.has_size = true;
    }
    f.url = ep.prefix + "/" + repo + "/resolve/" + l.commit + "/" + url_encode(f.path, true);
    l.files.push_back(f);
  }
  return l;
}

Listing list_modelscope(HttpClient& cli, const Endpoint& ep, const std::string& repo, const HubOptions& o) {
  const std::string path =
      ep.prefix + "/api/v1/models/" + repo + "/repo/files?Revision=" + url_encode(o.revision) + "&Recursive=true";
  const auto r = cli.get(path, auth_headers(o));
  if (!r.ok())
    fail(r.status == 404 ? ErrorKind::kNotFound : ErrorKind::kIo, "ModelScope listing of ", repo, "@", o.revision,
         " failed: ", r.status ? "HTTP " + std::to_string(r.status) : r.error);
  const json j = json::parse(r.body);
  if (j.value("Code", 200) != 200 || !j.contains("Data")) fail(ErrorKind::kIo, "ModelScope listing of ", repo, ": ", j.value("Message", r.body));
  Listing l;
  l.commit = o.revision;
  for (const auto& s : j["Data"].at("Files")) {
    if (s.value("Type", "blob") != "blob") continue;
    RemoteFile f;
    f.path = s.at("Path").get<std::string>();
    f.size = s.value("Size", uint64_t{0}), f.has_size = s.contains("Size");
    f.sha256 = s.value("Sha256", "");
    if (f.sha256.empty()) f.blob_id = "ms-" + std::to_string(std::hash<std::string>{}(f.path + std::to_string(f.size)));
    const std::string rev = s.value("Revision", "");
    if (!rev.empty() && l.commit == o.revision) l.commit = rev;  // the files' commit names the snapshot
    f.url = ep.prefix + "/api/v1/models/" + repo + "/repo?Revision=" + url_encode(o.revision) + "&FilePath=" + url_encode(f.path);
    l.files.push_back(f);
  }
  return l;
}

// Downloads one file into blobs/<name> (resuming <name>.incomplete); verifies size and digest.
uint64_t download_blob(HttpClient& cli, const RemoteFile& f, const std::string& blob, const HubOptions& o) {
  const std::string part = blob + ".incomplete";
  ProgressBar bar(f.path, o.progress);
  uint64_t fetched = 0;
  for (int attempt = 0;; ++attempt) {
    std::error_code ec;
    uint64_t have = fs::exists(part) ? fs::file_size(part, ec) : 0;
    if (f.has_size && have > f.size) fs::remove(part), have = 0;
    if (f.has_size && have == f.size && have > 0) break;
    Headers h = auth_headers(o);
    if (have > 0) {
      h.emplace_back("Range", "bytes=" + std::to_string(have) + "-");
      LOCR_INFO("pull: resuming ", f.path, " at byte ", have);
    }
    FILE* out = nullptr;
    int status = 0;
    const auto r = cli.get_stream(
        f.url, h,
        [&](const HttpResponse& head) {
          status = head.status;
          if (status == 206 && have > 0) {
            out = std::fopen(part.c_str(), "ab");
          } else if (status == 200) {
            have = 0;
            out = std::fopen(part.c_str(), "wb");
          } else {
            return false;
          }
          return out != nullptr;
        },
        [&](const char* d, size_t n) {
          if (std::fwrite(d, 1, n, out) != n) return false;
          have += n, fetched += n;
          bar.update(have, f.has_size ? f.size : have);
          return true;
        });
    if (out) std::fclose(out);
    if (status == 416 && f.has_size && have >= f.size) break;
    if (status && status != 200 && status != 206 && status != 416)
      fail(status == 404 ? ErrorKind::kNotFound : ErrorKind::kIo, "downloading ", f.path, ": HTTP ", status,
           status == 401 || status == 403 ? " (gated or private: set HF_TOKEN)" : "");
    const bool complete = !r.error.empty() ? false : (!f.has_size || have == f.size);
    if (complete) break;
    if (attempt >= o.max_retries)
      fail(ErrorKind::kIo, "downloading ", f.path, " stopped at ", have, " of ", f.size, " bytes (",
           r.error.empty() ? "short body" : r.error, "); run `locr pull` again to resume");
    LOCR_WARN("pull: ", f.path, " interrupted at ", have, " bytes (", r.error.empty() ? "short body" : r.error, "), retrying");
  }
  bar.finish();
  std::error_code ec;
  const uint64_t got = fs::file_size(part, ec);
  if (f.has_size && got != f.size) {
    fs::remove(part, ec);
    fail(ErrorKind::kIo, "downloaded ", f.path, " has ", got, " bytes, expected ", f.size);
  }
  if (!f.sha256.empty()) {
    const std::string d = sha256_file(part);
    if (d != f.sha256) {
      fs::remove(part, ec);
      fail(ErrorKind::kIo, "checksum mismatch for ", f.path, ": sha256 ", d, ", expected ", f.sha256, " (file removed; pull again)");
    }
  } else if (f.blob_id.size() == 40 && f.blob_id.rfind("ms-", 0) != 0) {
    const std::string d = git_blob_sha1_file(part);
    if (d != f.blob_id) {
      fs::remove(part, ec);
      fail(ErrorKind::kIo, "checksum mismatch for ", f.path, ": git blob id ", d, ", expected ", f.blob_id);
    }
  }
  fs::rename(part, blob);
  return fetched;
}

void link_snapshot(const std::string& snap, const RemoteFile& f) {
  const fs::path link = fs::path(snap) / f.path;
  fs::create_directories(link.parent_path());
  std::string target = "../../blobs/" + f.blob_name();
  for (char c : f.path)
    if (c == '/') target = "../" + target;
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(target, link);
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string hf_cache_dir() {
  if (const std::string c = env("HF_HUB_CACHE"); !c.empty()) return c;
  if (const std::string h = env("HF_HOME"); !h.empty()) return h + "/hub";
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return x + "/huggingface/hub";
  return env("HOME") + "/.cache/huggingface/hub";
}

HubOptions hub_options_from_env() {
  HubOptions o;
  o.cache_dir = hf_cache_dir();
  o.offline = env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE");
  if (env_true("VLLM_USE_MODELSCOPE")) o.source = "modelscope";
  o.token = env("HF_TOKEN");
  return o;
}

std::string repo_cache_dir(const std::string& cache, const std::string& repo) {
  std::string name = "models--" + repo;
  for (size_t p; (p = name.find('/')) != std::string::npos;) name.replace(p, 1, "--");
  return cache + "/" + name;
}

std::string find_snapshot(const std::string& cache, const std::string& repo, const std::string& revision) {
  const std::string base = repo_cache_dir(cache, repo);
  std::string commit = revision;
  if (!is_commit_hash(revision)) {
    std::ifstream f(base + "/refs/" + revision);
    if (!(f >> commit)) return "";
  }
  const std::string snap = base + "/snapshots/" + commit;
  return fs::exists(snap + "/config.json") ? snap : "";
}

PullResult pull_model(const std::string& repo, const HubOptions& in) {
  if (!looks_like_repo_id(repo) && repo.find('/') == std::string::npos)
    fail(ErrorKind::kInvalidArgument, "expected a repository id ORG/NAME, got '", repo, "'");
  HubOptions o = in;
  const bool ms = o.source == "modelscope";
  if (!ms && o.source != "hf") fail(ErrorKind::kInvalidArgument, "--source must be hf or modelscope, got '", o.source, "'");
  if (o.revision.empty()) o.revision = ms ? "master" : "main";
  if (o.cache_dir.empty()) o.cache_dir = hf_cache_dir();
  if (o.endpoint.empty()) {
    if (ms) {
      std::string d = env("MODELSCOPE_DOMAIN");
      if (d.empty()) d = "modelscope.cn";
      o.endpoint = d.find("://") == std::string::npos ? "https://" + d : d;
    } else {
      o.endpoint = env("HF_ENDPOINT");
      if (o.endpoint.empty()) o.endpoint = "https://huggingface.co";
    }
  }
  if (ms && o.token.empty()) o.token = env("MODELSCOPE_API_TOKEN");
  PullResult res;
  if (o.offline) {
    res.snapshot_dir = find_snapshot(o.cache_dir, repo, o.revision);
    if (res.snapshot_dir.empty())
      fail(ErrorKind::kNotFound, repo, "@", o.revision, " is not in the cache ", o.cache_dir, " and HF_HUB_OFFLINE is set");
    return res;
  }
  const Endpoint ep = split_endpoint(o.endpoint);
  HttpClient cli(ep.origin);
  const Listing l = ms ? list_modelscope(cli, ep, repo, o) : list_hf(cli, ep, repo, o);
  const std::string base = repo_cache_dir(o.cache_dir, repo);
  fs::create_directories(base + "/blobs");
  fs::create_directories(base + "/refs");
  res.commit = l.commit;
  res.snapshot_dir = base + "/snapshots/" + l.commit;
  fs::create_directories(res.snapshot_dir);
  for (const auto& f : l.files) {
    if (f.blob_name().empty()) fail(ErrorKind::kIo, "no blob id or sha256 for ", f.path, " in the listing");
    const std::string blob = base + "/blobs/" + f.blob_name();
    std::error_code ec;
    const bool have = fs::exists(blob) && (!f.has_size || fs::file_size(blob, ec) == f.size);
    if (!have) {
      res.bytes_downloaded += download_blob(cli, f, blob, o);
      ++res.downloaded;
    }
    link_snapshot(res.snapshot_dir, f);
    ++res.files;
  }
  if (o.revision != l.commit || !is_commit_hash(o.revision)) {
    std::ofstream ref(base + "/refs/" + o.revision, std::ios::trunc);
    ref << l.commit;
  }
  return res;
}

bool looks_like_repo_id(const std::string& s) {
  if (s.empty() || s[0] == '/' || s[0] == '.' || fs::exists(s)) return false;
  const size_t p = s.find('/');
  if (p == std::string::npos || p == 0 || p + 1 == s.size() || s.find('/', p + 1) != std::string::npos) return false;
  return s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == std::string::npos;
}

std::string resolve_model(const std::string& spec) {
  if (!looks_like_repo_id(spec)) return spec;
  HubOptions o = hub_options_from_env();
  o.revision = o.source == "modelscope" ? "master" : "main";
  if (std::string snap = find_snapshot(o.cache_dir, spec, o.revision); !snap.empty()) return snap;
  LOCR_INFO("model ", spec, " is not a local directory nor in ", o.cache_dir, "; pulling it");
  try {
    return pull_model(spec, o).snapshot_dir;
  } catch (const Error& e) {
    fail(e.kind(), "'", spec, "' is not a local directory, and pulling it from the hub failed: ", e.what());
  }
}

std::string sha256_file(const std::string& path) {
  Digest d(EVP_sha256());
  digest_file(d, path);
  return d.hex();
}

std::string git_blob_sha1_file(const std::string& path) {
  Digest d(EVP_sha1());
  const std::string head = "blob " + std::to_string(fs::file_size(path)) + std::string(1, '\0');
  d.update(head.data(), head.size());
  digest_file(d, path);
  return d.hex();
}

}  // namespace locr::toolkit
