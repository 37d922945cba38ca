"""What real clients hit: a burst of connections at once (the listen backlog), a request target
too long for the server (414)."""
import base64
import json
import math
import os
import resource
import selectors
import signal
import socket
import threading
import time

import openai
import pytest
import requests

from conftest import IMAGES, NAME, Server, data_url

KEY = "sk-clients-test"
# LiteLLM fetches its model price list from GitHub at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def assert_error(resp, status, param=None, contains=None, type_=None):
    assert resp.status_code == status, resp.text[:500]
    assert resp.headers["Content-Type"].startswith("application/json")
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["code"] == status
    if param is not None:
        assert err["param"] == param, err
    if contains is not None:
        assert contains in err["message"], err["message"]
    if type_ is not None:
        assert err["type"] == type_, err
    return err


@pytest.fixture(scope="module")
def srv():
    """Two served names (the first one LightOn's client reads its profile from, vlmparse's
    `vllm-model`), an API key, a 1024-token context."""
    s = Server("--served-model-name", NAME, "vllm-model", "--api-key", KEY, "--max-model-len", "1024",
               "--max-num-seqs", "8", "--seed", "7")
    yield s
    assert s.stop() == 0


def auth():
    return {"Authorization": f"Bearer {KEY}"}


# --- the listen backlog -----------------------------------------------------------------------


def raise_open_files(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"the open files hard limit ({hard}) is below the {need} this test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def connect_burst(port, n, wait_s):
    """n non-blocking connects to 127.0.0.1:port at once. Returns (sockets, seconds from each
    connect() to its completion, or None if it had not completed after wait_s)."""
    socks, started, done = [], {}, {}
    sel = selectors.DefaultSelector()
    for _ in range(n):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        t = time.monotonic()
        err = c.connect_ex(("127.0.0.1", port))
        socks.append(c)
        started[c] = t
        if err == 0:
            done[c] = time.monotonic() - t
        else:
            assert err in (115, 11), os.strerror(err)  # EINPROGRESS, EAGAIN
            sel.register(c, selectors.EVENT_WRITE)
    deadline = time.monotonic() + wait_s
    while len(done) < n and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, min(0.05, deadline - time.monotonic()))):
            c = key.fileobj
            assert c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
            done[c] = time.monotonic() - started[c]
            sel.unregister(c)
    sel.close()
    return socks, [done.get(c) for c in socks]


def serve_all(socks, timeout_s):
    """Sends GET /health on every connection and reads each answer whole; returns the status lines."""
    sel = selectors.DefaultSelector()
    out = {}
    for c in socks:
        c.setblocking(True)
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        c.setblocking(False)
        out[c] = b""
        sel.register(c, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    left = len(socks)
    while left and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.1):
            c = key.fileobj
            try:
                b = c.recv(4096)
            except BlockingIOError:
                continue
            except ConnectionError:
                b = b""
            if b:
                out[c] += b
            else:
                sel.unregister(c)
                left -= 1
    sel.close()
    return [out[c].split(b"\r\n", 1)[0] for c in socks]


def test_a_thousand_clients_connect_at_once_without_a_syn_retry():
    # The server process is stopped (SIGSTOP) while the clients connect, so only the kernel's
    # accept queue can take them: with httplib's backlog of 5 all but six would have their SYN
    # dropped and retried after 1 s. Then it runs again and must answer every one of them.
    n = 1000
    raise_open_files(n + 256)
    somaxconn = int(open("/proc/sys/net/core/somaxconn").read())
    if somaxconn < n:
        pytest.skip(f"net.core.somaxconn is {somaxconn}: the kernel caps every listen backlog below {n}")
    s = Server("--served-model-name", NAME, "--max-model-len", "512")
    socks = []
    try:
        assert "listen backlog" in s.log
        s.proc.send_signal(signal.SIGSTOP)
        try:
            socks, secs = connect_burst(s.port, n, wait_s=0.8)
        finally:
            s.proc.send_signal(signal.SIGCONT)
        pending = sum(t is None for t in secs)
        assert pending == 0, f"{pending} of {n} connects waited past 0.8 s (a SYN retry costs 1 s)"
        assert max(secs) < 0.5, f"slowest connect {max(secs):.3f} s"
        statuses = serve_all(socks, timeout_s=120)
        bad = [st for st in statuses if not st.startswith(b"HTTP/1.1 200")]
        assert not bad, f"{len(bad)} of {n} connections were not answered 200: {bad[:3]}"
    finally:
        for c in socks:
            c.close()
        s.proc.send_signal(signal.SIGCONT)
        assert s.stop() == 0


def test_a_small_listen_backlog_makes_clients_wait_out_a_syn_retry():
    # The same burst against --listen-backlog 8: the measure above does tell the two apart.
    s = Server("--served-model-name", NAME, "--max-model-len", "512", "--listen-backlog", "8")
    socks = []
    try:
        assert "(listen backlog 8)" in s.log
        s.proc.send_signal(signal.SIGSTOP)
        try:
            socks, secs = connect_burst(s.port, 64, wait_s=0.5)
        finally:
            s.proc.send_signal(signal.SIGCONT)
        completed = sum(t is not None for t in secs)
        assert 1 <= completed <= 16, f"{completed} of 64 connects completed with a backlog of 8"
    finally:
        for c in socks:
            c.close()
        assert s.stop() == 0


def test_listen_backlog_flag_is_checked():
    import subprocess

    from conftest import MODEL, locr_bin
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "--port", "0", "--listen-backlog", "-3"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--listen-backlog" in out.stderr


# --- long request targets ---------------------------------------------------------------------


def raw(port, data, timeout=20):
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            c.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        while True:
            try:
                b = c.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not b:
                break
            out += b
        return out
    finally:
        c.close()


def test_a_100_kb_request_target_is_414_uri_too_long(srv):
    r = requests.get(srv.url + "/v1/models?q=" + "a" * 100_000, headers=auth(), timeout=30)
    err = assert_error(r, 414, type_="URITooLongError", contains="URI is too long")
    assert "8192 bytes" in err["message"]
    assert r.headers.get("Connection") == "close"
    # Raw: the answer comes whole (the rest of the request is read and dropped, not reset).
    out = raw(srv.port, b"GET /" + b"x" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 414 URI Too Long\r\n"), out[:200]
    assert json.loads(out.partition(b"\r\n\r\n")[2])["error"]["code"] == 414
    # Between httplib's limit and the header cap (where httplib answers itself): the same.
    assert_error(requests.get(srv.url + "/v1/models?q=" + "a" * 9000, headers=auth(), timeout=30), 414)
    # Under the limit: routed as usual.
    assert requests.get(srv.url + "/v1/models?q=" + "a" * 8000, headers=auth(), timeout=30).status_code == 200
    assert srv.get("/health").status_code == 200
    metrics = srv.get("/metrics").text
    assert 'http_requests_total{handler="other",method="GET",status="4xx"}' in metrics
