"""The seed deployment: the exact `vllm serve` flags (as `locr serve`) and its two curl smoke tests."""
import json
import subprocess

import pytest

from conftest import MODEL, Server, locr_bin

# docs: /work/shared/seeds — the verified vLLM command line, with `vllm serve` -> `locr serve`.
# Host and port are the only change: loopback and a port the OS picks.
SEED_FLAGS = [
    "--data-parallel-size", "1",
    "--tensor-parallel-size", "1",
    "--seed", "1024",
    "--served-model-name", "lightonocr-2-1b",
    "--max-num-seqs", "32",
    "--max-model-len", "8192",
    "--max-num-batched-tokens", "4096",
    "--trust-remote-code",
    "--gpu-memory-utilization", "0.85",
    "--no-enable-prefix-caching",
    "--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}',
]


@pytest.fixture(scope="module")
def seed_server():
    s = Server(*SEED_FLAGS)
    yield s
    assert s.stop() == 0


def test_seed_flags_are_accepted_with_notices(seed_server):
    log = seed_server.log
    assert "--trust-remote-code has no effect" in log
    assert "--compilation-config has no effect" in log
    assert "prefix caching off" in log


def test_curl_models(seed_server):
    out = subprocess.run(["curl", "-sf", f"{seed_server.url}/v1/models"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    models = json.loads(out.stdout)
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["lightonocr-2-1b"]
    assert models["data"][0]["max_model_len"] == 8192


def test_curl_chat(seed_server):
    # The seed's second smoke test, verbatim but for the address.
    cmd = ["curl", "-sf", f"{seed_server.url}/v1/chat/completions",
           "-H", "Content-Type: application/json",
           "-d", """{
    "model": "lightonocr-2-1b",
    "messages": [
      {"role": "system", "content": "You are a concise assistant."},
      {"role": "user", "content": "用一句中文说明 TCP 和 UDP 的核心区别。"}
    ],
    "temperature": 0,
    "max_tokens": 128
  }"""]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["object"] == "chat.completion"
    assert r["model"] == "lightonocr-2-1b"
    choice = r["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] in ("stop", "length")
    assert 1 <= r["usage"]["completion_tokens"] <= 128
    assert r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]


@pytest.mark.parametrize("flag", ["--tensor-parallel-size", "--data-parallel-size", "--pipeline-parallel-size"])
def test_unhonourable_parallelism_is_refused(flag):
    out = subprocess.run([locr_bin(), "serve", str(MODEL), flag, "2", "--port", "0"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0
    assert f"{flag} 2 is not possible" in out.stderr


def test_unknown_flag_is_refused():
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "--no-such-flag", "1"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert "unknown option --no-such-flag" in out.stderr
