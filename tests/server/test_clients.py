"""What real clients hit (docs/clients.md): a burst of connections at once (the listen backlog), a
request target too long for the server (414), vLLM's legacy `POST /generate` (its api_client.py's
request and NUL-separated stream), several served names (vlmparse always sends `vllm-model`), the
OpenAI SDK and LiteLLM's OpenAI-compatible provider against them, and --max-queue-wait-s (503 with
Retry-After instead of a request that would wait past the client's timeout)."""
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
    # A request is counted once its answer is written (as vLLM's instrumentator does), so the
    # count may trail the client's read of that answer by a moment.
    line = 'http_requests_total{handler="other",method="GET",status="4xx"}'
    assert wait_for(lambda: line in srv.get("/metrics").text, 10), line


# --- several served names ---------------------------------------------------------------------


def test_every_served_name_is_answered_by_the_openai_sdk(srv):
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
    assert [m.id for m in client.models.list()] == [NAME, "vllm-model"]
    page = [{"type": "image_url", "image_url": {"url": data_url(IMAGES / "page_small.png")}}]
    texts = []
    for name in (NAME, "vllm-model"):  # vlmparse sends vllm-model; LightOn's client the first listed
        r = client.chat.completions.create(model=name, messages=[{"role": "user", "content": page}], max_tokens=4,
                                           temperature=0, extra_body={"ignore_eos": True})
        assert r.model == name and r.usage.completion_tokens == 4
        texts.append(r.choices[0].message.content)
    assert texts[0] == texts[1]  # one model behind both names
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="lightonai/LightOnOCR-2-1B", messages=[{"role": "user", "content": page}],
                                       max_tokens=1)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=srv.url + "/v1", api_key="wrong", max_retries=0).models.list()


def test_litellm_hosted_vllm_provider(srv):
    litellm = pytest.importorskip("litellm")
    page = [{"type": "image_url", "image_url": {"url": data_url(IMAGES / "page_small.png")}}]
    r = litellm.completion(model="hosted_vllm/vllm-model", api_base=srv.url + "/v1", api_key=KEY,
                           messages=[{"role": "user", "content": page}], max_tokens=3, temperature=0, timeout=60)
    assert 1 <= r.usage.completion_tokens <= 3 and isinstance(r.choices[0].message.content, str)
    with pytest.raises(litellm.exceptions.AuthenticationError):
        litellm.completion(model="hosted_vllm/vllm-model", api_base=srv.url + "/v1", api_key="wrong",
                           messages=[{"role": "user", "content": "x"}], max_tokens=1, num_retries=0)


# --- POST /generate (vLLM's legacy api_server) ------------------------------------------------

PROMPT = "San Francisco is a"


def completion(srv, **kw):
    body = {"model": NAME, "prompt": PROMPT, "temperature": 0, "ignore_eos": True, "echo": True, **kw}
    r = requests.post(srv.url + "/v1/completions", json=body, headers=auth(), timeout=60)
    assert r.status_code == 200, r.text
    return [c["text"] for c in r.json()["choices"]]


def test_generate_answers_prompt_plus_completion(srv):
    r = requests.post(srv.url + "/generate", json={"prompt": PROMPT, "temperature": 0, "max_tokens": 8,
                                                   "ignore_eos": True}, headers=auth(), timeout=60)
    assert r.status_code == 200, r.text
    text = r.json()["text"]
    assert set(r.json()) == {"text"} and len(text) == 1 and text[0].startswith(PROMPT)
    assert text == completion(srv, max_tokens=8)  # the same generation as /v1/completions with echo
    # Without max_tokens: SamplingParams' 16, not the model's generation_config.
    r = requests.post(srv.url + "/generate", json={"prompt": PROMPT, "temperature": 0, "ignore_eos": True},
                      headers=auth(), timeout=60)
    assert r.json()["text"] == completion(srv, max_tokens=16)
    # n choices, each the prompt plus its own completion; a seed makes them reproducible.
    body = {"prompt": PROMPT, "n": 3, "temperature": 1.0, "seed": 5, "max_tokens": 6, "ignore_eos": True}
    a = requests.post(srv.url + "/generate", json=body, headers=auth(), timeout=60).json()["text"]
    b = requests.post(srv.url + "/generate", json=body, headers=auth(), timeout=60).json()["text"]
    assert len(a) == 3 and a == b and all(t.startswith(PROMPT) for t in a)


def test_generate_streams_nul_separated_objects(srv):
    # Enough tokens that the generation outlasts the response's start: objects are written per poll
    # of what the engine has made, and a dozen tokens of the tiny model could all be made before
    # the first poll (one object, seen in about one run in five on a 2-core machine).
    body = {"prompt": PROMPT, "stream": True, "temperature": 0, "max_tokens": 96, "ignore_eos": True, "n": 2}
    with requests.post(srv.url + "/generate", json=body, headers=auth(), stream=True, timeout=60) as r:
        assert r.status_code == 200
        raw_body = b"".join(r.iter_content(chunk_size=None))
    assert raw_body.endswith(b"\0")
    # As vLLM's examples/api_client.py reads it.
    objs = [json.loads(chunk) for chunk in raw_body.split(b"\0") if chunk]
    assert len(objs) >= 2
    for o in objs:
        assert set(o) == {"text"} and len(o["text"]) == 2 and all(t.startswith(PROMPT) for t in o["text"])
    # Each object holds the prompt and the text so far: it only grows, and ends as the whole completion.
    for before, after in zip(objs, objs[1:]):
        assert all(a.startswith(b) for a, b in zip(after["text"], before["text"])), (before, after)
    assert objs[-1]["text"] == completion(srv, max_tokens=96, n=2)
    # iter_lines with the NUL delimiter, exactly as the vLLM example client does.
    with requests.post(srv.url + "/generate", json=body, headers=auth(), stream=True, timeout=60) as r:
        last = [json.loads(c.decode()) for c in r.iter_lines(chunk_size=8192, decode_unicode=False, delimiter=b"\0") if c]
    assert last[-1] == objs[-1]


def test_generate_errors_are_openai_json(srv):
    r = requests.post(srv.url + "/generate", data=b'{"prompt": "x", ', headers=auth(), timeout=10)
    assert_error(r, 400, contains="not valid JSON", type_="BadRequestError")
    assert_error(requests.post(srv.url + "/generate", json={"stream": True}, headers=auth(), timeout=10), 400,
                 param="prompt")
    assert_error(requests.post(srv.url + "/generate", json={"prompt": ["a"]}, headers=auth(), timeout=10), 400,
                 param="prompt")
    assert_error(requests.post(srv.url + "/generate", json={"prompt": "x", "messages": []}, headers=auth(), timeout=10),
                 400, param="messages", contains="SamplingParams")
    assert_error(requests.post(srv.url + "/generate", json={"prompt": "x", "temperature": "hot"}, headers=auth(),
                               timeout=10), 400, param="temperature")
    assert_error(requests.post(srv.url + "/generate", json={"prompt": "x", "use_beam_search": True}, headers=auth(),
                               timeout=10), 400, param="use_beam_search")
    assert_error(requests.post(srv.url + "/generate", json={"prompt": "x", "max_tokens": 5000}, headers=auth(),
                               timeout=10), 400, contains="maximum context length")
    assert_error(requests.post(srv.url + "/generate", json={"prompt": ""}, headers=auth(), timeout=10), 400,
                 contains="empty")
    r = requests.get(srv.url + "/generate", headers=auth(), timeout=10)
    assert_error(r, 405)
    assert r.headers["Allow"] == "POST"


def test_generate_needs_the_api_key(srv):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = requests.post(srv.url + "/generate", json={"prompt": PROMPT, "max_tokens": 1}, headers=headers, timeout=10)
        assert_error(r, 401, type_="AuthenticationError")
        assert r.headers["WWW-Authenticate"] == "Bearer"
    r = requests.post(srv.url + "/generate", json={"prompt": PROMPT, "max_tokens": 1}, headers=auth(), timeout=10)
    assert r.status_code == 200
    # Counted once the answer is written, which may trail the client's read of it by a moment.
    line = 'http_requests_total{handler="/generate",method="POST",status="2xx"}'
    assert wait_for(lambda: line in srv.get("/metrics").text, 10), line


# --- --max-queue-wait-s -------------------------------------------------------------------------


def gauge(s, name):
    for line in s.get("/metrics").text.splitlines():
        if line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return None


def take_the_slot(s, body, limit):
    """Sends a long streaming request on a raw socket and waits until the queue estimate is over
    `limit`; returns the socket (closing it is a disconnect: the request is cancelled)."""
    c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert wait_for(lambda: gauge(s, "locr:estimated_queue_wait_seconds") > limit or None, timeout=30), \
        "the estimate never passed the limit with the slot taken"
    return c


def test_max_queue_wait_refuses_with_retry_after_what_would_time_out():
    # One slot, and requests that take seconds (the scalar backend on one thread): while one runs,
    # a new request would wait about a whole service time, more than the 0.2 s allowed.
    litellm = pytest.importorskip("litellm")
    limit = 0.2
    s = Server("--served-model-name", NAME, "--max-model-len", "2048", "--max-num-seqs", "1", "--backend", "ref",
               "--threads", "1", "--max-queue-wait-s", str(limit))
    c = None
    try:
        long_req = {"model": NAME, "prompt": "hello", "temperature": 0, "ignore_eos": True, "max_tokens": 2000}
        # No request has finished yet: no estimate, nothing refused.
        assert gauge(s, "locr:estimated_queue_wait_seconds") == 0
        t0 = time.monotonic()
        assert s.post("/v1/completions", long_req, timeout=300).status_code == 200
        service = time.monotonic() - t0
        assert gauge(s, "locr:estimated_queue_wait_seconds") == 0  # an empty queue: admitted at once
        assert s.post("/v1/completions", {"model": NAME, "prompt": "hi", "max_tokens": 1}).status_code == 200
        # A streaming client on a raw socket (closing it is a disconnect) takes the one slot.
        body = json.dumps({**long_req, "stream": True}).encode()
        c = take_the_slot(s, body, limit)
        wait = gauge(s, "locr:estimated_queue_wait_seconds")
        assert wait > limit, f"service {service:.2f} s"
        for path, req in [("/v1/completions", {"model": NAME, "prompt": "hi", "max_tokens": 1}),
                          ("/v1/chat/completions", {"model": NAME, "messages": [{"role": "user", "content": "hi"}]}),
                          ("/generate", {"prompt": "hi"})]:
            r = s.post(path, req, timeout=30)
            err = assert_error(r, 503, type_="ServiceUnavailableError", contains="--max-queue-wait-s")
            retry = int(r.headers["Retry-After"])
            assert 1 <= retry <= math.ceil(2 * wait) + 1, (retry, wait, err["message"])
        # What the OpenAI SDK raises for it (with max_retries > 0 it waits Retry-After and retries).
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=30)
        with pytest.raises(openai.InternalServerError) as e:
            client.completions.create(model=NAME, prompt="hi", max_tokens=1)
        assert e.value.status_code == 503
        # And what LiteLLM raises (its own retries off: it would wait Retry-After too).
        with pytest.raises(litellm.exceptions.ServiceUnavailableError):
            litellm.completion(model="hosted_vllm/" + NAME, api_base=s.url + "/v1", api_key="unused",
                               messages=[{"role": "user", "content": "hi"}], max_tokens=1, num_retries=0, max_retries=0)
        # Not a generation a client waits on: still answered.
        assert s.post("/tokenize", {"model": NAME, "prompt": "hi"}).status_code == 200
        assert gauge(s, "locr:requests_rejected_queue_full_total") == 5
        # The SDK with retries: refused, it waits Retry-After; meanwhile the streaming client leaves
        # (its request is cancelled, the slot frees), and the retry is taken.
        retrying = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=2, timeout=60)
        leave = threading.Timer(0.5, c.close)
        leave.start()
        t0 = time.monotonic()
        r = retrying.completions.create(model=NAME, prompt="hi", max_tokens=1)
        leave.join()
        assert r.usage.completion_tokens == 1
        assert gauge(s, "locr:requests_rejected_queue_full_total") == 6  # refused once, then taken
        assert time.monotonic() - t0 >= 0.9  # after waiting Retry-After (>= 1 s)
        assert gauge(s, "locr:estimated_queue_wait_seconds") == 0
        # The same with the mistralai SDK's retries on /v1/ocr (Mistral's shape).
        mistral = pytest.importorskip("mistralai.client")
        from mistralai.client.utils import BackoffStrategy, RetryConfig
        ocr = mistral.Mistral(api_key="unused", server_url=s.url, timeout_ms=60_000,
                              retry_config=RetryConfig("backoff", BackoffStrategy(100, 5_000, 1.5, 60_000), False)).ocr
        doc = {"type": "image_url",
               "image_url": "data:image/png;base64," + base64.b64encode((IMAGES / "page_small.png").read_bytes()).decode()}
        c = take_the_slot(s, body, limit)
        leave = threading.Timer(0.5, c.close)
        leave.start()
        t0 = time.monotonic()
        r = ocr.process(model=NAME, document=doc)
        leave.join()
        assert len(r.pages) == 1
        assert gauge(s, "locr:requests_rejected_queue_full_total") == 7
        assert time.monotonic() - t0 >= 0.9
    finally:
        if c is not None:
            c.close()
        assert s.stop() == 0
