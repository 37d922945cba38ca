"""HTTPS with --ssl-keyfile / --ssl-certfile (OpenSSL): a self-signed certificate made by `openssl req`
for 127.0.0.1, and real clients (requests, the openai SDK over httpx, curl) that verify it. The
server's own connection loop runs over TLS: keep-alive, streaming, the header limits (431) and
client disconnects work as over HTTP."""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import pytest
import requests

from conftest import MODEL, NAME, chat, greedy, locr_bin

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def make_cert(d, name="server"):
    key, cert = d / f"{name}.key", d / f"{name}.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return key, cert


class TlsServer:
    def __init__(self, *flags):
        env = dict({k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}, LOCR_LOG_LEVEL="info")
        self.proc = subprocess.Popen([locr_bin(), "serve", str(MODEL), "--host", "127.0.0.1", "--port", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines, self.port = [], None
        ready = threading.Event()

        def reader():
            for line in self.proc.stdout:
                self.lines.append(line)
                m = re.search(r"listening on (https?)://[^:]+:(\d+)", line)
                if m:
                    self.scheme, self.port = m.group(1), int(m.group(2))
                    ready.set()
            ready.set()

        threading.Thread(target=reader, daemon=True).start()
        ready.wait(60)
        if self.port is None:
            self.proc.wait(30)
            raise RuntimeError("".join(self.lines))
        self.url = f"https://127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        return self.proc.returncode


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_server(certs):
    key, cert = certs
    s = TlsServer("--ssl-keyfile", str(key), "--ssl-certfile", str(cert), "--served-model-name", NAME,
                  "--max-model-len", "8192", "--max-header-bytes", "4096")
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if requests.get(s.url + "/health", verify=str(cert), timeout=2).status_code == 200:
                break
        except requests.exceptions.ConnectionError:
            time.sleep(0.05)
    yield s
    assert s.stop() == 0


def test_https_with_a_verifying_client(tls_server, certs):
    _, cert = certs
    assert tls_server.scheme == "https"
    v = str(cert)  # per request: a session's verify loses to $REQUESTS_CA_BUNDLE
    with requests.Session() as sess:  # one keep-alive connection for several requests
        assert sess.get(tls_server.url + "/v1/models", verify=v).json()["data"][0]["id"] == NAME
        r = sess.post(tls_server.url + "/v1/chat/completions", json=chat("hello", **greedy(max_tokens=4)), verify=v)
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 4
        whole = r.json()["choices"][0]["message"]["content"]
        r = sess.post(tls_server.url + "/v1/chat/completions", json=chat("hello", stream=True, **greedy(max_tokens=4)),
                      stream=True, verify=v)
        events = [l for l in r.iter_lines() if l.startswith(b"data: ")]
        # Tokens that arrive together are sent in one chunk, so the count of chunks varies; what they
        # carry does not: the role first, the same text as the whole response, the finish last.
        assert events[-1] == b"data: [DONE]", events
        chunks = [json.loads(e[6:]) for e in events[:-1]]
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == whole
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"
        assert sess.get(tls_server.url + "/v1/chat/completions", verify=v).status_code == 405


def test_openai_sdk_over_https(tls_server, certs):
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    _, cert = certs
    client = openai.OpenAI(base_url=tls_server.url + "/v1", api_key="none", http_client=httpx.Client(verify=ssl.create_default_context(cafile=str(cert))))
    r = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}], max_tokens=3,
                                       temperature=0, extra_body={"ignore_eos": True})
    assert r.usage.completion_tokens == 3


def test_curl_over_https(tls_server, certs):
    if shutil.which("curl") is None:
        pytest.skip("needs curl")
    _, cert = certs
    out = subprocess.run(["curl", "-sf", "--cacert", str(cert), tls_server.url + "/v1/models"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0 and NAME in out.stdout


def test_untrusted_and_plain_clients_are_refused_and_the_server_lives(tls_server, certs):
    _, cert = certs
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(tls_server.url + "/health", timeout=10)  # the self-signed cert is not in the system store
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://127.0.0.1:{tls_server.port}/health", timeout=10)
    assert requests.get(tls_server.url + "/health", verify=str(cert), timeout=10).status_code == 200


def test_header_limit_over_tls(tls_server, certs):
    _, cert = certs
    r = requests.get(tls_server.url + "/health", headers={"X-Big": "a" * 8000}, verify=str(cert), timeout=10)
    assert r.status_code == 431
    assert r.json()["error"]["code"] == 431


def test_client_disconnect_over_tls(tls_server, certs):
    _, cert = certs
    ctx = ssl.create_default_context(cafile=str(cert))
    # Long enough that the generation is still running when the client goes (400 tokens of the tiny
    # model took under 0.1 s, less than the stream's 100 ms liveness poll, and the test then raced).
    body = b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":4000,"temperature":0,"ignore_eos":true,"stream":true}'
    with socket.create_connection(("127.0.0.1", tls_server.port)) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            assert b"200 OK" in s.recv(4096)
    deadline = time.time() + 20
    while time.time() < deadline and not any("client disconnected" in l for l in tls_server.lines):
        time.sleep(0.1)
    assert any("client disconnected" in l for l in tls_server.lines)


def test_mutual_tls_requires_a_client_certificate(tmp_path):
    key, cert = make_cert(tmp_path, "server")
    ckey, ccert = make_cert(tmp_path, "client")
    s = TlsServer("--ssl-keyfile", str(key), "--ssl-certfile", str(cert), "--ssl-ca-certs", str(ccert),
                  "--ssl-cert-reqs", "2")
    try:
        deadline = time.time() + 30
        ok = None
        while time.time() < deadline and ok is None:
            try:
                ok = requests.get(s.url + "/health", verify=str(cert), cert=(str(ccert), str(ckey)), timeout=2)
            except requests.exceptions.ConnectionError:
                time.sleep(0.05)
        assert ok is not None and ok.status_code == 200
        with pytest.raises(requests.exceptions.RequestException):
            requests.get(s.url + "/health", verify=str(cert), timeout=5)
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("flags,message", [
    (["--ssl-keyfile", "{key}"], "HTTPS needs both --ssl-keyfile and --ssl-certfile"),
    (["--ssl-keyfile", "{key}", "--ssl-certfile", "{other}"], "is not a usable PEM private key for --ssl-certfile: error:05800074:x509 certificate routines::key values mismatch"),
    (["--ssl-keyfile", "{key}", "--ssl-certfile", "/nonexistent.pem"], "--ssl-certfile '/nonexistent.pem' is not a usable"),
    (["--ssl-ciphers", "ECDHE-RSA-AES256-GCM-SHA384"], "need --ssl-keyfile and --ssl-certfile"),
])
def test_bad_tls_flags_are_clear_errors(tmp_path, flags, message):
    key, cert = make_cert(tmp_path, "a")
    _, other = make_cert(tmp_path, "b")
    args = [f.format(key=key, cert=cert, other=other) for f in flags]
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "--port", "0", *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert message in out.stderr, out.stderr


def test_a_stalled_handshake_is_timed_out(tmp_path):
    """A client that sends the first bytes of a TLS record and stalls (mid-ClientHello) is cut off
    after --read-timeout instead of holding its connection thread forever; others are served."""
    key, cert = make_cert(tmp_path)
    s = TlsServer("--ssl-keyfile", str(key), "--ssl-certfile", str(cert), "--served-model-name", NAME,
                  "--max-model-len", "512", "--read-timeout", "1")
    try:
        stalled = socket.create_connection(("127.0.0.1", s.port))
        stalled.sendall(b"\x16\x03\x01\x02\x00\x01")  # a handshake record header announcing 512 bytes, then silence
        assert requests.get(s.url + "/health", verify=str(cert), timeout=10).status_code == 200
        stalled.settimeout(15)
        start = time.time()
        try:
            data = stalled.recv(4096)
            while data:
                data = stalled.recv(4096)
        except ConnectionResetError:
            pass
        assert time.time() - start < 8  # closed by the server, not by our 15 s timeout
        stalled.close()
    finally:
        assert s.stop() == 0
