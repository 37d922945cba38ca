"""Graceful shutdown: SIGTERM lets in-flight requests finish, refuses new work, and exits 0."""
import json
import os
import signal
import threading
import time

import requests

from conftest import NAME, Server, chat, greedy


def test_sigterm_idle_exits_zero():
    s = Server("--served-model-name", NAME, "--max-model-len", "512")
    assert s.stop(signal.SIGTERM) == 0
    assert "serve: stopped" in s.log


def test_sigint_exits_zero():
    s = Server("--served-model-name", NAME, "--max-model-len", "512")
    assert s.stop(signal.SIGINT) == 0


def test_sigterm_drains_in_flight_stream():
    # The drain waits for the stream however long it takes (--shutdown-timeout well above it): under
    # a sanitizer, with the other tests running beside it, 6000 tokens took longer than the 30 s
    # default and the stream was aborted, which is test_shutdown_timeout_cancels_stragglers's case.
    s = Server("--served-model-name", NAME, "--max-model-len", "8192", "--shutdown-timeout", "600")
    tokens = 1500 if os.environ.get("LOCR_SANITIZER") else 6000
    result = {}

    def client():
        r = requests.post(s.url + "/v1/chat/completions", timeout=120, stream=True,
                          json=chat("long", stream=True, **greedy(max_tokens=tokens)))
        result["text"] = r.content.decode()
        result["done_at"] = time.time()

    t = threading.Thread(target=client)
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline and s.metrics()["vllm:num_requests_running"] < 1:
        time.sleep(0.01)
    signalled_at = time.time()
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    # No new connections once draining.
    refused = False
    try:
        r = requests.post(s.url + "/v1/chat/completions", json=chat("new", max_tokens=2), timeout=5)
        refused = r.status_code == 503
    except requests.ConnectionError:
        refused = True
    t.join(300)
    assert s.proc.wait(60) == 0
    assert refused
    assert result["done_at"] > signalled_at + 0.05  # the stream was still running when refused
    text = result["text"]
    assert text.rstrip().endswith("data: [DONE]")
    last = json.loads(text.rstrip().split("\n\n")[-2][len("data: "):])
    assert last["choices"][0]["finish_reason"] == "length"


def test_drain_readiness_fails_liveness_holds():
    """KServe / llm-d drain: once SIGTERM comes, /ready (and /v2/health/ready) answer 503 at once and
    new generation requests 503, while /health (and /v2/health/live) stay 200 and the in-flight
    request runs to its end; then the process exits 0."""
    s = Server("--served-model-name", NAME, "--max-model-len", "8192", "--shutdown-timeout", "600")
    assert s.get("/ready").status_code == 200
    assert s.get("/v2/health/ready").status_code == 200
    tokens = 1500 if os.environ.get("LOCR_SANITIZER") else 6000
    result = {}

    def client():
        r = requests.post(s.url + "/v1/chat/completions", timeout=300,
                          json=chat("long", **greedy(max_tokens=tokens)))
        result["status"] = r.status_code
        result["finish"] = r.json()["choices"][0]["finish_reason"]

    t = threading.Thread(target=client)
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline and s.metrics()["vllm:num_requests_running"] < 1:
        time.sleep(0.01)
    s.proc.send_signal(signal.SIGTERM)
    deadline = time.time() + 10
    while time.time() < deadline and s.get("/ready").status_code == 200:
        time.sleep(0.01)
    seen = {p: s.get(p).status_code for p in ("/ready", "/v2/health/ready", "/health", "/v2/health/live", "/ping")}
    new = requests.post(s.url + "/v1/chat/completions", json=chat("new", max_tokens=2), timeout=10)
    running = s.metrics()["vllm:num_requests_running"]
    t.join(300)
    assert s.proc.wait(60) == 0
    assert seen == {"/ready": 503, "/v2/health/ready": 503, "/health": 200, "/v2/health/live": 200, "/ping": 200}
    assert new.status_code == 503 and new.json()["error"]["code"] == 503
    assert running >= 1  # the probes were answered while the request was still running
    assert result == {"status": 200, "finish": "length"}


def test_shutdown_timeout_cancels_stragglers():
    s = Server("--served-model-name", NAME, "--max-model-len", "16384", "--shutdown-timeout", "0.2")
    result = {}

    def client():
        try:
            r = requests.post(s.url + "/v1/chat/completions", timeout=120,
                              json=chat("very long", **greedy(max_tokens=16000)))
            result["finish"] = r.json()["choices"][0]["finish_reason"]
        except requests.RequestException as e:
            result["error"] = str(e)

    t = threading.Thread(target=client)
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline and s.metrics()["vllm:num_requests_running"] < 1:
        time.sleep(0.01)
    start = time.time()
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(60) == 0
    t.join(60)
    assert time.time() - start < 10
    assert result.get("finish") == "abort" or "error" in result


def test_slow_client_is_timed_out_without_holding_others():
    s = Server("--served-model-name", NAME, "--max-model-len", "512", "--read-timeout", "1")
    try:
        import socket
        slow = socket.create_connection(("127.0.0.1", s.port))
        slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"mess")
        # Others are served while the slow request is stuck.
        r = requests.post(s.url + "/v1/chat/completions", json=chat("hi", max_tokens=2), timeout=10)
        assert r.status_code == 200
        # The server gives up on the slow one after the read timeout and closes the connection.
        slow.settimeout(10)
        start = time.time()
        data = slow.recv(65536)
        while data and not data.endswith(b"}"):
            more = slow.recv(65536)
            if not more:
                break
            data += more
        assert time.time() - start < 8
        slow.close()
        assert s.metrics()["vllm:num_requests_running"] == 0
    finally:
        assert s.stop() == 0
