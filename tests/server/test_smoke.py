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


def test_port_in_use_is_a_clear_error():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = subprocess.run([locr_bin(), "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr


def test_kv_cache_memory_and_inline_chat_template():
    template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    s = Server("--kv-cache-memory", "64MiB", "--max-model-len", "2048", "--chat-template", template,
               "--generation-config", "vllm")
    try:
        # tiny_a: 2 layers x 2 (K, V) x 16 rows x 64 (kv heads x head_dim) x 2 bytes (BF16 cache of
        # the default cpu-bf16 backend) = 8 KiB per block.
        assert "8192 KV blocks" in s.log and "64 MiB reserved" in s.log
        r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        assert r.status_code == 200
        # The served name defaults to MODEL as given.
        assert r.json()["model"] == str(MODEL)
    finally:
        assert s.stop() == 0


def test_bad_values_are_refused():
    for flags, msg in [(["--kv-cache-memory", "lots"], "expects a size"),
                       (["--max-model-len", "100000"], "max_position_embeddings"),
                       (["--limit-mm-per-prompt", "image"], "expects JSON like"),  # image=1 (older vLLM syntax) is accepted: test_dropin.py
                       (["--compilation-config", "{bad"], "expects JSON")]:
        out = subprocess.run([locr_bin(), "serve", str(MODEL), "--port", "0", *flags], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode != 0 and msg in out.stderr, (flags, out.stderr)
