"""What the server does with the engine: continuous batching gives the same greedy tokens as running
alone, a client that goes away frees its sequence, and prefix caching is visible in /metrics."""
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import NAME, Server, chat, greedy


def token_ids(server, prompt, max_tokens=16):
    r = server.post("/v1/completions", {"prompt": prompt, "logprobs": 0, "return_tokens_as_token_ids": True,
                                        **greedy(max_tokens=max_tokens)})
    assert r.status_code == 200, r.text
    return [int(t.split(":")[1]) for t in r.json()["choices"][0]["logprobs"]["tokens"]]


def test_32_concurrent_greedy_requests_match_each_alone(server):
    prompts = [f"Request number {i}: " + "abcdefghij"[: (i % 10) + 1] * (1 + i % 3) for i in range(32)]
    alone = [token_ids(server, p) for p in prompts]
    with ThreadPoolExecutor(32) as pool:
        together = list(pool.map(lambda p: token_ids(server, p), prompts))
    assert together == alone


def wait_for(cond, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def long_server():
    """Prefix caching off, long context: room for a request that runs long enough to be cut off."""
    s = Server("--served-model-name", NAME, "--max-model-len", "8192", "--no-enable-prefix-caching")
    yield s
    s.stop()


def test_client_disconnect_cancels_request(long_server):
    s = long_server
    before = s.metrics()
    assert before["vllm:num_requests_running"] == 0
    idle_kv = before["vllm:kv_cache_usage_perc"]
    aborted = before[f'vllm:request_success_total{{model_name="{NAME}",finished_reason="abort"}}']
    body = json.dumps(chat("Go on forever", stream=True, **greedy(max_tokens=8000))).encode()
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while got.count(b"data: ") < 3:
        got += sock.recv(65536)
    assert b" 200 OK" in got.split(b"\r\n", 1)[0]
    sock.close()
    assert wait_for(lambda: s.metrics()["vllm:num_requests_running"] == 0)
    after = s.metrics()
    assert after["vllm:kv_cache_usage_perc"] == idle_kv
    assert after[f'vllm:request_success_total{{model_name="{NAME}",finished_reason="abort"}}'] == aborted + 1
    assert after["locr:client_disconnects_total"] >= 1
    assert after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"] < 8000
    # The server goes on serving.
    assert s.post("/v1/chat/completions", chat("still there?", max_tokens=2)).status_code == 200


def test_disconnect_while_waiting_for_non_streaming_result(long_server):
    s = long_server
    before = s.metrics()
    body = json.dumps(chat("Long answer please", **greedy(max_tokens=8000))).encode()
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\n\r\n" + body)
    assert wait_for(lambda: s.metrics()["vllm:num_requests_running"] == 1, 10)
    sock.close()
    assert wait_for(lambda: s.metrics()["vllm:num_requests_running"] == 0)
    after = s.metrics()
    assert after["locr:client_disconnects_total"] > before["locr:client_disconnects_total"]
    assert after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"] < 8000


LONG_PROMPT = " ".join(f"line {i} of a long page of text that repeats" for i in range(40))


def test_prefix_cache_hits(server):
    before = server.metrics()["vllm:prefix_cache_hits_total"]
    for _ in range(2):
        assert server.post("/v1/completions", {"prompt": LONG_PROMPT, **greedy(max_tokens=2)}).status_code == 200
    assert server.metrics()["vllm:prefix_cache_hits_total"] > before


def test_no_prefix_cache_hits_when_disabled(long_server):
    for _ in range(2):
        assert long_server.post("/v1/completions", {"prompt": LONG_PROMPT, **greedy(max_tokens=2)}).status_code == 200
    assert long_server.metrics()["vllm:prefix_cache_hits_total"] == 0
