// Model downloads into the standard Hugging Face cache layout, from the Hugging Face hub or
// ModelScope, and resolution of `ORG/NAME` model arguments to a local snapshot.
//
// Cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; a repository lives in
// models--ORG--NAME/{blobs/<etag>, snapshots/<commit>/<file> -> ../../blobs/<etag>, refs/<revision>}.
// Blob names are the LFS sha256 (LFS files) or the git blob id (other files), as huggingface_hub
// names them. Downloads go to blobs/<name>.incomplete and resume with Range requests; LFS files are
// checked against their sha256 and other files against their git blob id before being moved in.
//
// Hugging Face: GET {HF_ENDPOINT}/api/models/{repo}/revision/{rev}?blobs=true for the commit and
// file list (size, blobId, lfs.sha256), files from {HF_ENDPOINT}/{repo}/resolve/{commit}/{path};
// HF_TOKEN as a bearer token; HF_HUB_OFFLINE=1 uses the cache only.
// ModelScope (--source modelscope or VLLM_USE_MODELSCOPE=true): GET
// {endpoint}/api/v1/models/{repo}/repo/files?Revision={rev}&Recursive=true (Data.Files[]: Path,
// Type, Size, Sha256, Revision), files from {endpoint}/api/v1/models/{repo}/repo?Revision={rev}&FilePath={path};
// endpoint from MODELSCOPE_DOMAIN (default modelscope.cn), token from MODELSCOPE_API_TOKEN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace locr::toolkit {

struct HubOptions {
  std::string source = "hf";  // "hf" or "modelscope"
  std::string revision;       // default "main" (hf) / "master" (modelscope)
  std::string endpoint;       // default from the environment
  std::string token;
  std::string cache_dir;      // default hf_cache_dir()
  bool offline = false;
  bool progress = true;
  int max_retries = 3;        // per file, each resuming where the last attempt stopped
};

// Options from the environment: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, HF_HUB_CACHE/HF_HOME,
// VLLM_USE_MODELSCOPE, MODELSCOPE_DOMAIN, MODELSCOPE_API_TOKEN.
HubOptions hub_options_from_env();
std::string hf_cache_dir();
// <cache>/models--ORG--NAME
std::string repo_cache_dir(const std::string& cache, const std::string& repo);

struct PullResult {
  std::string snapshot_dir, commit;
  int files = 0, downloaded = 0;
  uint64_t bytes_downloaded = 0;
};

// Downloads every file of `repo` (ORG/NAME) at opts.revision; returns the snapshot directory.
// Throws locr::Error naming the file on HTTP errors, size or checksum mismatches.
PullResult pull_model(const std::string& repo, const HubOptions& opts);

// The cached snapshot of repo at revision (a ref name or commit), or "" if not cached.
std::string find_snapshot(const std::string& cache, const std::string& repo, const std::string& revision);

// True for "ORG/NAME" that is not an existing path.
bool looks_like_repo_id(const std::string& s);
// A --model argument: an existing directory is returned as is; ORG/NAME resolves to its cached
// snapshot, pulled first when missing (unless offline).
std::string resolve_model(const std::string& spec);

// Hex digests.
std::string sha256_file(const std::string& path);
std::string git_blob_sha1_file(const std::string& path);

}  // namespace locr::toolkit
