"""Drop-in details of `vllm serve` a browser or an OpenAI-style client relies on: CORS as Starlette's
CORSMiddleware answers it (preflights as a browser sends them), 405 with Allow on a known route,
`input_text` content parts, lone UTF-16 surrogate escapes, and the flags --response-role,
--override-generation-config, --max-log-len, --uvicorn-log-level, --limit-mm-per-prompt image=N,
--disable-access-log-for-endpoints."""
import json
import time

import pytest
import requests

from conftest import MODEL, NAME, Server, chat, greedy

ORIGIN = "https://ocr.example.com"


@pytest.fixture(scope="module")
def default_server():
    s = Server("--served-model-name", NAME, "--max-model-len", "512")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def strict_server():
    s = Server("--served-model-name", NAME, "--max-model-len", "512",
               "--allowed-origins", json.dumps([ORIGIN]), "--allowed-methods", '["GET", "POST"]',
               "--allowed-headers", '["Authorization", "Content-Type"]', "--allow-credentials",
               "--response-role", "ocr-bot", "--override-generation-config", '{"max_new_tokens": 3}')
    yield s
    assert s.stop() == 0


def preflight(server, path, origin, method="POST", headers="content-type, authorization"):
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        h["Access-Control-Request-Headers"] = headers
    return requests.options(server.url + path, headers=h, timeout=10)


def test_default_cors_preflight_allows_any_origin(default_server):
    r = preflight(default_server, "/v1/chat/completions", "http://localhost:3000")
    assert r.status_code == 200 and r.text == "OK"
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert "POST" in r.headers["Access-Control-Allow-Methods"].split(", ")
    assert r.headers["Access-Control-Allow-Headers"] == "content-type, authorization"
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert "Access-Control-Allow-Credentials" not in r.headers


def test_default_cors_headers_on_every_response_errors_included(default_server):
    h = {"Origin": "http://localhost:3000"}
    ok = default_server.post("/v1/chat/completions", chat("hi", max_tokens=2, **greedy()), headers=h)
    assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] == "*"
    bad = default_server.post("/v1/chat/completions", {"messages": "nope"}, headers=h)
    assert bad.status_code == 400 and bad.headers["Access-Control-Allow-Origin"] == "*"
    missing = default_server.get("/v1/nowhere", headers=h)
    assert missing.status_code == 404 and missing.headers["Access-Control-Allow-Origin"] == "*"
    stream = requests.post(default_server.url + "/v1/chat/completions", json=chat("hi", max_tokens=2, stream=True, **greedy()),
                           headers=h, stream=True, timeout=30)
    assert stream.headers["Access-Control-Allow-Origin"] == "*"
    assert b"[DONE]" in stream.content
    # No Origin, no CORS headers (as Starlette).
    assert "Access-Control-Allow-Origin" not in default_server.get("/v1/models").headers


def test_strict_cors_preflight(strict_server):
    r = preflight(strict_server, "/v1/chat/completions", ORIGIN)
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    assert r.headers["Access-Control-Allow-Methods"] == "GET, POST"
    assert "Origin" in r.headers["Vary"]
    bad = preflight(strict_server, "/v1/chat/completions", "https://evil.example")
    assert bad.status_code == 400 and bad.text == "Disallowed CORS origin"
    assert "Access-Control-Allow-Origin" not in bad.headers
    assert preflight(strict_server, "/v1/models", ORIGIN, method="DELETE").text == "Disallowed CORS method"
    assert preflight(strict_server, "/v1/models", ORIGIN, headers="x-secret").text == "Disallowed CORS headers"
    r = strict_server.get("/v1/models", headers={"Origin": ORIGIN})
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN and r.headers["Access-Control-Allow-Credentials"] == "true"
    assert "Access-Control-Allow-Origin" not in strict_server.get("/v1/models", headers={"Origin": "https://evil.example"}).headers


def test_wrong_method_on_a_known_route_is_405_with_allow(default_server):
    r = default_server.get("/v1/chat/completions")
    assert r.status_code == 405
    assert r.headers["Allow"] == "POST"
    err = r.json()["error"]
    assert err["code"] == 405 and "Method Not Allowed" in err["message"]
    r = default_server.post("/v1/models", {})
    assert r.status_code == 405 and r.headers["Allow"] == "GET"
    assert default_server.post("/health", {}).status_code == 405
    assert requests.head(default_server.url + "/v1/models", timeout=10).status_code == 200
    # Unknown paths stay 404.
    assert default_server.get("/v1/chat/nothing").status_code == 404
    assert default_server.post("/v2/chat/completions", {}).status_code == 404


def test_input_text_parts_are_text_parts(default_server):
    as_text = default_server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}], **greedy(max_tokens=4)})
    as_input_text = default_server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": [{"type": "input_text", "text": "Hello there"}]}], **greedy(max_tokens=4)})
    assert as_input_text.status_code == 200, as_input_text.text
    assert as_input_text.json()["usage"] == as_text.json()["usage"]
    assert as_input_text.json()["choices"][0]["message"] == as_text.json()["choices"][0]["message"]
    bad = default_server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": [{"type": "input_text"}]}]})
    assert bad.status_code == 400 and "'input_text' content part needs a string 'text'" in bad.json()["error"]["message"]


def test_lone_surrogate_is_accepted_as_python_json_does(default_server):
    body = '{"messages": [{"role": "user", "content": "a\\ud800b"}], "max_tokens": 2, "temperature": 0}'
    r = requests.post(default_server.url + "/tokenize", data='{"prompt": "a\\ud800b"}', timeout=10,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    same = default_server.post("/tokenize", {"prompt": "a\ufffdb"})
    assert r.json()["tokens"] == same.json()["tokens"]
    r = requests.post(default_server.url + "/v1/chat/completions", data=body, timeout=30,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    # A surrogate pair stays the character it encodes.
    pair = requests.post(default_server.url + "/tokenize", data='{"prompt": "\\ud83d\\ude00"}', timeout=10,
                         headers={"Content-Type": "application/json"})
    assert pair.json()["tokens"] == default_server.post("/tokenize", {"prompt": "\U0001F600"}).json()["tokens"]


def test_response_role(strict_server):
    r = strict_server.post("/v1/chat/completions", chat("hi", **greedy(max_tokens=2)))
    assert r.json()["choices"][0]["message"]["role"] == "ocr-bot"
    s = requests.post(strict_server.url + "/v1/chat/completions", json=chat("hi", stream=True, **greedy(max_tokens=2)),
                      stream=True, timeout=30)
    first = json.loads(next(line for line in s.iter_lines() if line.startswith(b"data: "))[6:])
    assert first["choices"][0]["delta"]["role"] == "ocr-bot"


def test_override_generation_config_sets_the_default_max_tokens(strict_server, default_server):
    body = chat("hi", temperature=0, ignore_eos=True)
    r = strict_server.post("/v1/chat/completions", body).json()
    assert r["usage"]["completion_tokens"] == 3 and r["choices"][0]["finish_reason"] == "length"
    assert default_server.post("/v1/chat/completions", body).json()["usage"]["completion_tokens"] > 3
    # A request's own max_tokens still wins.
    assert strict_server.post("/v1/chat/completions", dict(body, max_tokens=5)).json()["usage"]["completion_tokens"] == 5


def test_override_generation_config_must_be_an_object():
    import subprocess
    from conftest import locr_bin
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "--override-generation-config", "[1]", "--port", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--override-generation-config expects a JSON object" in out.stderr


def test_uvicorn_log_level_debug_and_max_log_len():
    s = Server("--uvicorn-log-level", "debug", "--max-log-len", "12")
    try:
        text = "abcdefghijklmnopqrstuvwxyz" * 4
        assert s.post("/v1/completions", {"prompt": text, "max_tokens": 1}).status_code == 200
        time.sleep(0.2)
        line = next(l for l in s.lines if " prompt: " in l)
        assert "abcdefghijkl... (92 more characters)" in line
        assert text not in s.log
    finally:
        assert s.stop() == 0
    quiet = Server()  # info: no debug lines
    try:
        quiet.post("/v1/completions", {"prompt": "hello", "max_tokens": 1})
        assert " prompt: " not in quiet.log
    finally:
        quiet.stop()


def test_access_log_flags():
    s = Server("--disable-access-log-for-endpoints", "/health,/v1/models")
    try:
        s.get("/v1/models")
        s.get("/version")
        time.sleep(0.2)
        assert '"GET /version" 200' in s.log
        assert '"GET /v1/models"' not in s.log and '"GET /health"' not in s.log
    finally:
        s.stop()
    for flag in ("--disable-log-requests", "--disable-uvicorn-access-log"):
        s = Server(flag)
        try:
            s.get("/version")
            time.sleep(0.2)
            assert '"GET /version"' not in s.log
        finally:
            s.stop()


def test_limit_mm_per_prompt_old_syntax():
    from conftest import IMAGES, data_url
    s = Server("--limit-mm-per-prompt", "image=1,video=0")
    try:
        img = {"type": "image_url", "image_url": {"url": data_url(sorted(IMAGES.glob("*.png"))[0])}}
        two = {"messages": [{"role": "user", "content": [img, img]}], "max_tokens": 1}
        r = s.post("/v1/chat/completions", two)
        assert r.status_code == 400 and "At most 1 image(s)" in r.json()["error"]["message"]
    finally:
        s.stop()


def test_model_flag():
    s = Server("--model", str(MODEL), model="")
    try:
        assert s.get("/v1/models").status_code == 200
    finally:
        s.stop()


def test_several_api_keys_as_vllm():
    s = Server("--api-key", "key-one", "key-two")
    try:
        body = {"prompt": "hi", "max_tokens": 1}
        for key in ("key-one", "key-two"):
            assert s.post("/v1/completions", body, headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert s.post("/v1/completions", body, headers={"Authorization": "Bearer key-three"}).status_code == 401
        assert s.post("/v1/completions", body).status_code == 401
    finally:
        s.stop()


def test_405_with_a_body_then_the_connection_is_not_reused_for_garbage(default_server):
    with requests.Session() as sess:
        r = sess.post(default_server.url + "/v1/models", json={"x": "y" * 100})
        assert r.status_code == 405
        # The next request on the session works (a fresh connection when the server closed this one).
        assert sess.get(default_server.url + "/v1/models").status_code == 200
        assert sess.post(default_server.url + "/v1/models", data="").status_code == 405
        assert sess.get(default_server.url + "/v1/models").status_code == 200
