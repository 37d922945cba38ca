#!/usr/bin/env python3
"""`locr pull` against a local fake hub (tests/tools/fake_hub.py) serving a fixture model.

Usage: pull_test.py LOCR_BIN MODEL_DIR. Exit 0 when every check passes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_hub  # noqa: E402

REPO = "test-org/tiny-model"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def pull(locr, env, *extra):
    cmd = [locr, "pull", REPO, "--quiet", *extra]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout.strip(), p.stderr


def main() -> int:
    locr, model_dir = sys.argv[1], sys.argv[2]
    hub = fake_hub.Hub(REPO, model_dir)
    srv, base = fake_hub.serve(hub)
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "hub")
        env = dict(os.environ, HF_ENDPOINT=base, HF_HUB_CACHE=cache)
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("VLLM_USE_MODELSCOPE", None)
        repo_dir = os.path.join(cache, "models--test-org--tiny-model")
        st_sha = hashlib.sha256(hub.files["model.safetensors"]).hexdigest()

        # 1. Interrupted download, no retries: fails, leaves a partial .incomplete file.
        hub.interrupt["model.safetensors"] = 1000
        rc, out, err = pull(locr, env, "--max-retries", "0")
        check(rc != 0, "interrupted pull without retries fails")
        part = os.path.join(repo_dir, "blobs", st_sha + ".incomplete")
        check(os.path.exists(part) and os.path.getsize(part) == 1000, "partial download kept as .incomplete (1000 bytes)")
        # ... and the next pull resumes it with a Range request.
        hub.ranges.clear()
        rc, out, err = pull(locr, env)
        check(rc == 0, f"resumed pull succeeds (rc={rc}) {err.strip()[-300:]}")
        check(("model.safetensors", "bytes=1000-") in hub.ranges, f"resume sent Range: bytes=1000- ({hub.ranges})")
        snap = os.path.join(repo_dir, "snapshots", fake_hub.COMMIT)
        check(out == snap, f"prints the snapshot directory ({out!r})")

        # 2. Layout: refs/main, blobs named by sha256 (LFS) / git blob id, relative symlinks.
        with open(os.path.join(repo_dir, "refs", "main")) as f:
            check(f.read().strip() == fake_hub.COMMIT, "refs/main holds the commit")
        link = os.path.join(snap, "model.safetensors")
        check(os.path.islink(link) and os.readlink(link) == "../../blobs/" + st_sha, "LFS file linked to blobs/<sha256>")
        cfg = hub.files["config.json"]
        cfg_blob = hashlib.sha1(b"blob %d\0" % len(cfg) + cfg).hexdigest()
        check(os.readlink(os.path.join(snap, "config.json")) == "../../blobs/" + cfg_blob, "regular file linked to blobs/<git blob id>")
        for name, data in hub.files.items():
            with open(os.path.join(snap, name), "rb") as f:
                check(f.read() == data, f"{name} content matches")
        check(not any(n.endswith(".incomplete") for n in os.listdir(os.path.join(repo_dir, "blobs"))), "no .incomplete left")

        # 3. A second pull downloads nothing.
        n_before = len(hub.ranges)
        rc, out, err = pull(locr, env)
        check(rc == 0 and len(hub.ranges) == n_before, "second pull is a no-op")

        # 4. Offline: the cache only.
        rc, out, err = pull(locr, dict(env, HF_HUB_OFFLINE="1"))
        check(rc == 0 and out == snap, "HF_HUB_OFFLINE=1 resolves from the cache")
        rc, out, err = pull(locr, dict(env, HF_HUB_OFFLINE="1", HF_HUB_CACHE=os.path.join(tmp, "empty")))
        check(rc != 0 and "not in the cache" in err, "HF_HUB_OFFLINE=1 with an empty cache fails clearly")

        # 5. ORG/NAME as --model: generate from the cached snapshot.
        p = subprocess.run([locr, "generate", "--model", REPO, "--prompt", "hi", "--max-tokens", "2", "--threads", "1"],
                           env=dict(env, HF_HUB_OFFLINE="1"), capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"generate --model ORG/NAME uses the cache ({p.stderr.strip()[-200:]})")

        # 5b. ORG/NAME as `locr serve MODEL` (as `vllm serve` takes it): served from the cached
        # snapshot under the name as given.
        import urllib.request
        serve = subprocess.Popen([locr, "serve", REPO, "--port", "0", "--host", "127.0.0.1", "--threads", "1"],
                                 env=dict(env, HF_HUB_OFFLINE="1", LOCR_LOG_LEVEL="info"), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        try:
            port = None
            for line in serve.stdout:
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    port = int(m.group(1))
                    break
            check(port is not None, "serve ORG/NAME starts from the cache")
            if port:
                models = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=30).read())
                check(models["data"][0]["id"] == REPO and models["data"][0]["root"] == snap,
                      f"served as {REPO} from the snapshot ({models['data'][0]})")
        finally:
            serve.terminate()
            serve.wait(30)
        # ... and pulled first when it is not cached (a fresh cache).
        cache_s = os.path.join(tmp, "hub-serve")
        serve = subprocess.Popen([locr, "serve", REPO, "--port", "0", "--host", "127.0.0.1", "--threads", "1"],
                                 env=dict(env, HF_HUB_CACHE=cache_s, LOCR_LOG_LEVEL="info"), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        try:
            started = any(re.search(r"listening on http://", line) for line in serve.stdout)
            check(started and os.path.isdir(os.path.join(cache_s, "models--test-org--tiny-model", "snapshots", fake_hub.COMMIT)),
                  "serve ORG/NAME pulls a missing model into the cache, then serves it")
        finally:
            serve.terminate()
            serve.wait(30)

        # 6. Interrupted download with retries: resumes within one run.
        cache2 = os.path.join(tmp, "hub2")
        env2 = dict(env, HF_HUB_CACHE=cache2)
        hub.interrupt["model.safetensors"] = 5000
        hub.ranges.clear()
        rc, out, err = pull(locr, env2)
        check(rc == 0 and ("model.safetensors", "bytes=5000-") in hub.ranges, "interrupted transfer resumes within one run")

        # 7. A corrupted file is detected, reported and not kept.
        cache3 = os.path.join(tmp, "hub3")
        hub.corrupt.add("model.safetensors")
        rc, out, err = pull(locr, dict(env, HF_HUB_CACHE=cache3))
        hub.corrupt.clear()
        check(rc != 0 and "checksum mismatch" in err and "model.safetensors" in err, f"corrupted file detected ({err.strip()[-200:]})")
        blobs3 = os.path.join(cache3, "models--test-org--tiny-model", "blobs")
        check(not os.path.exists(os.path.join(blobs3, st_sha)) and not os.path.exists(os.path.join(blobs3, st_sha + ".incomplete")),
              "corrupted blob removed")

        # 8. Gated repository: HF_TOKEN is sent as a bearer token.
        hub.token = "hf_secret"
        rc, out, err = pull(locr, dict(env, HF_HUB_CACHE=os.path.join(tmp, "hub4")))
        check(rc != 0 and "HF_TOKEN" in err, "401 without a token names HF_TOKEN")
        rc, out, err = pull(locr, dict(env, HF_HUB_CACHE=os.path.join(tmp, "hub4"), HF_TOKEN="hf_secret"))
        check(rc == 0, "HF_TOKEN authorises the download")
        hub.token = None

        # 9. ModelScope API (VLLM_USE_MODELSCOPE=true, MODELSCOPE_DOMAIN).
        cache5 = os.path.join(tmp, "hub5")
        hub.requests.clear()
        env5 = dict(env, HF_HUB_CACHE=cache5, VLLM_USE_MODELSCOPE="true", MODELSCOPE_DOMAIN=base)
        env5.pop("HF_ENDPOINT")
        rc, out, err = pull(locr, env5)
        check(rc == 0, f"ModelScope pull succeeds ({err.strip()[-200:]})")
        check(any("/api/v1/models/test-org/tiny-model/repo/files?Revision=master&Recursive=true" in r for r in hub.requests),
              "ModelScope file listing API used")
        check(any("FilePath=model.safetensors" in r for r in hub.requests), "ModelScope file download API used")
        ms_snap = out
        check(os.path.isfile(os.path.join(ms_snap, "config.json")), "ModelScope snapshot has config.json")

        # 10. Unknown repository: a clear error.
        p = subprocess.run([locr, "pull", "nobody/nothing", "--quiet"], env=env, capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and "404" in p.stderr, "unknown repository reports HTTP 404")
    srv.shutdown()
    print("FAILED: %d checks" % len(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
