// `locr pull ORG/NAME`: download a model into the Hugging Face cache (see src/toolkit/hub.h).
#include <cstdio>

#include "apps/args.h"
#include "apps/commands.h"
#include "toolkit/hub.h"
#include "toolkit/progress.h"

namespace locr::app {

int cmd_pull(int argc, char** argv) {
  Args a("pull",
         "Download a model repository into the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or\n"
         "~/.cache/huggingface/hub), resuming partial files and verifying checksums. Prints the snapshot\n"
         "directory. Honours HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE; VLLM_USE_MODELSCOPE=true selects ModelScope.");
  a.positional("repo", "repository id, e.g. lightonai/LightOnOCR-2-1B");
  a.option("revision", "branch, tag or commit (default main; ModelScope: master)", "REV");
  a.option("source", "hf (default) or modelscope", "NAME");
  a.option("endpoint", "hub URL (default $HF_ENDPOINT or https://huggingface.co; ModelScope: $MODELSCOPE_DOMAIN)", "URL");
  a.option("cache-dir", "cache directory (default from the environment)", "DIR");
  a.option("max-retries", "retries per file after an interrupted transfer (default 3)", "N");
  a.flag("quiet", "no progress bars");
  if (!a.parse(argc, argv)) return 0;
  toolkit::HubOptions o = toolkit::hub_options_from_env();
  if (a.has("source")) o.source = a.get("source");
  o.revision = a.get("revision");
  o.endpoint = a.get("endpoint");
  if (a.has("cache-dir")) o.cache_dir = a.get("cache-dir");
  o.max_retries = a.get_int("max-retries", 3);
  o.progress = !a.get_flag("quiet");
  const auto r = toolkit::pull_model(a.get("repo"), o);
  std::fprintf(stderr, "%s: %d files (%d downloaded, %s), commit %s\n", a.get("repo").c_str(), r.files, r.downloaded,
               toolkit::human_bytes(static_cast<double>(r.bytes_downloaded)).c_str(), r.commit.empty() ? "(cached)" : r.commit.c_str());
  std::printf("%s\n", r.snapshot_dir.c_str());
  return 0;
}

}  // namespace locr::app
