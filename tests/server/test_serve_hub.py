"""`locr serve ORG/NAME` resolves a hub repo id as `locr ocr --model` does (apps/model_args
model_path, one function): from a Hugging Face cache laid out as huggingface_hub lays it out
($HF_HOME/hub or $HF_HUB_CACHE: models--ORG--NAME/refs/main -> snapshots/<commit>/), and a repo id
that cannot be resolved offline is a clear error before anything is served."""
import os
import shutil
import subprocess

import pytest

from conftest import MODEL, Server, chat, locr_bin

REPO = "acme/tiny-ocr"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fake_cache(root):
    """A hub cache under `root` holding REPO's main snapshot (the tiny fixture model)."""
    base = root / ("models--" + REPO.replace("/", "--"))
    snap = base / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    for f in MODEL.iterdir():
        if f.is_file():
            shutil.copy(f, snap / f.name)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(COMMIT)
    return snap


def hub_env(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_", "VLLM_USE_MODELSCOPE"))}
    env.update(HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9", **kw)
    return env


@pytest.mark.parametrize("var", ["HF_HOME", "HF_HUB_CACHE"])
def test_serve_resolves_a_repo_id_from_the_cache(tmp_path, var):
    cache = tmp_path / "hub"
    snap = fake_cache(cache)
    s = Server("--max-model-len", "256", model=REPO,
               env=hub_env(**{var: str(tmp_path if var == "HF_HOME" else cache)}))
    try:
        models = s.get("/v1/models").json()
        assert models["data"][0]["id"] == REPO  # served under the name as given, as vLLM does
        r = s.post("/v1/chat/completions", chat("hi", model=REPO, temperature=0, max_tokens=3))
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] >= 1
        assert str(snap) in s.log or COMMIT in s.log, s.log
    finally:
        s.stop()


def test_serve_unresolvable_repo_id_offline_is_a_clear_error(tmp_path):
    r = subprocess.run([locr_bin(), "serve", "acme/not-there", "--port", "0", "--host", "127.0.0.1"],
                       env=hub_env(HF_HUB_CACHE=str(tmp_path / "empty")), capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "acme/not-there@main is not in the cache" in r.stderr, r.stderr
    assert "HF_HUB_OFFLINE" in r.stderr, r.stderr
    assert "listening on" not in r.stderr + r.stdout
