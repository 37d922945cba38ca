"""Every client error comes back in OpenAI's shape with the right status, and never disturbs others."""
import base64
import os
import struct
import zlib

import pytest
import requests

from conftest import IMAGES, NAME, Server, chat, data_url, greedy


def assert_error(resp, status, param=None, contains=None):
    assert resp.status_code == status, resp.text
    assert resp.headers["Content-Type"].startswith("application/json")
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == status and isinstance(err["message"], str) and err["message"]
    if param is not None:
        assert err["param"] == param
    if contains is not None:
        assert contains in err["message"], err["message"]
    return err


def image_message(*urls, text="Read this."):
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    return {"model": NAME, "messages": [{"role": "user", "content": parts + [{"type": "text", "text": text}]}],
            "max_tokens": 2}


def huge_png(width=20000, height=20000):
    """A valid PNG header claiming 400 megapixels (a decompression bomb), with almost no data."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b"")


def test_malformed_json(server):
    r = requests.post(server.url + "/v1/chat/completions", data=b'{"messages": [', timeout=10,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 400, contains="not valid JSON")
    assert_error(requests.post(server.url + "/v1/completions", data=b"[1, 2]", timeout=10), 400)


@pytest.mark.parametrize("field,value", [
    ("temperature", "hot"), ("max_tokens", 1.5), ("max_tokens", "10"), ("stream", "yes"), ("top_p", 0),
    ("top_p", 1.5), ("n", 0), ("stop", 5), ("seed", "x"), ("logprobs", 1), ("top_logprobs", 50), ("top_k", -5),
    ("messages", "hello"), ("stop_token_ids", [999999]), ("presence_penalty", 3), ("min_tokens", -1),
])
def test_wrong_types_and_ranges(server, field, value):
    body = chat("hi", max_tokens=2)
    body[field] = value
    err = assert_error(server.post("/v1/chat/completions", body), 400)
    assert err["param"] == field or (field == "logprobs" and err["param"] == "logprobs")


def test_stream_options_without_stream(server):
    assert_error(server.post("/v1/chat/completions", chat("hi", stream_options={"include_usage": True})), 400,
                 param="stream_options")


def test_missing_messages_and_prompt(server):
    assert_error(server.post("/v1/chat/completions", {"model": NAME}), 400, param="messages")
    assert_error(server.post("/v1/completions", {"model": NAME}), 400, param="prompt")
    assert_error(server.post("/v1/completions", {"prompt": [], "max_tokens": 2}), 400, param="prompt")
    assert_error(server.post("/v1/completions", {"prompt": [1, 99999], "max_tokens": 2}), 400, param="prompt")


def test_unknown_model_is_404(server):
    err = assert_error(server.post("/v1/chat/completions", {**chat("hi"), "model": "gpt-4"}), 404, param="model")
    assert err["type"] == "NotFoundError" and "gpt-4" in err["message"]
    assert_error(server.post("/v1/completions", {"model": "nope", "prompt": "x"}), 404)


def test_unknown_route_is_404_json(server):
    assert_error(server.get("/v1/nothing"), 404)


def test_unsupported_features_are_refused(server):
    assert_error(server.post("/v1/chat/completions", chat("hi", tools=[{"type": "function", "function": {"name": "f"}}])),
                 400, param="tools")
    assert_error(server.post("/v1/chat/completions", chat("hi", response_format={"type": "json_object"})), 400)
    assert_error(server.post("/v1/chat/completions", chat("hi", logit_bias={"1": 5})), 400)
    assert server.post("/v1/chat/completions", chat("hi", response_format={"type": "text"}, max_tokens=1)).ok
    # A non-string type was a json type_error escaping as a 500 (found by tests/fuzz/openai_schema_fuzz.cc).
    for bad_type in (1, ["text"], {"a": 1}, True):
        assert_error(server.post("/v1/chat/completions", chat("hi", response_format={"type": bad_type})), 400,
                     param="response_format", contains="'type' is a string")
    assert server.post("/v1/chat/completions", chat("hi", response_format={"type": None}, max_tokens=1)).ok


def test_prompt_plus_max_tokens_over_context(server):
    err = assert_error(server.post("/v1/chat/completions", chat("hi", max_tokens=1024)), 400, param="max_tokens")
    assert "maximum context length is 1024" in err["message"]
    long_prompt = " ".join(["word"] * 1200)
    assert_error(server.post("/v1/completions", {"prompt": long_prompt}), 400, contains="1024")


def test_bad_base64(server):
    assert_error(server.post("/v1/chat/completions", image_message("data:image/png;base64,@@@not-base64@@@")), 400,
                 contains="base64")


def test_undecodable_image(server):
    junk = "data:image/png;base64," + base64.b64encode(b"this is not an image at all").decode()
    assert_error(server.post("/v1/chat/completions", image_message(junk)), 400, contains="image 1")


def test_oversized_image(server):
    bomb = "data:image/png;base64," + base64.b64encode(huge_png()).decode()
    assert_error(server.post("/v1/chat/completions", image_message(bomb)), 400, contains="image 1")


def test_too_many_images(server):
    url = data_url(IMAGES / "gray.png")
    assert_error(server.post("/v1/chat/completions", image_message(url, url, url)), 400, contains="At most 2 image")


def test_remote_and_local_media_rules(server):
    assert_error(server.post("/v1/chat/completions", image_message("http://example.com/page.png")), 400,
                 contains="not in --allowed-media-domains")
    # A file outside the allowed directory and a missing one get the same answer.
    for path in ["/etc/passwd", "/nonexistent-locr/none.png", str(IMAGES / "missing.png")]:
        assert_error(server.post("/v1/chat/completions", image_message("file://" + path)), 400,
                     contains=f"local image '{path}' is not a readable file under --allowed-local-media-path")
    # file://HOST/path is refused, not read as the relative path HOST/path.
    # (The server runs in pytest's working directory, where this relative path names a fixture image.)
    rel = os.path.relpath(IMAGES / "gray.png")
    assert_error(server.post("/v1/chat/completions", image_message(f"file://{rel}")), 400, contains="with a host")
    assert_error(server.post("/v1/chat/completions", image_message("ftp://x/y.png")), 400)


def test_body_too_large(server):
    r = requests.post(server.url + "/v1/chat/completions", data=b"x" * (5 << 20), timeout=30,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 413)


def test_errors_do_not_disturb_other_requests(server):
    good = server.post("/v1/chat/completions", chat("stable?", **greedy(max_tokens=6))).json()
    for body in [b"{", b'{"messages": 3}', b'{"model": "x", "prompt": "y"}']:
        requests.post(server.url + "/v1/chat/completions", data=body, timeout=10)
    again = server.post("/v1/chat/completions", chat("stable?", **greedy(max_tokens=6))).json()
    assert again["choices"][0]["message"]["content"] == good["choices"][0]["message"]["content"]
    assert server.get("/health").status_code == 200


@pytest.fixture(scope="module")
def keyed_server():
    s = Server("--served-model-name", NAME, "--api-key", "sk-test-123", "--max-model-len", "512")
    yield s
    s.stop()


def test_api_key(keyed_server):
    body = chat("hi", max_tokens=2)
    assert_error(keyed_server.post("/v1/chat/completions", body), 401)
    assert_error(keyed_server.post("/v1/chat/completions", body, headers={"Authorization": "Bearer wrong"}), 401)
    assert_error(keyed_server.post("/v1/chat/completions", body, headers={"Authorization": "Bearer sk-test-12"}), 401)
    assert_error(keyed_server.get("/v1/models"), 401)
    ok = keyed_server.post("/v1/chat/completions", body, headers={"Authorization": "Bearer sk-test-123"})
    assert ok.status_code == 200
    assert keyed_server.post("/v1/completions", {"model": NAME, "prompt": "x", "max_tokens": 1},
                             headers={"Authorization": "bearer sk-test-123"}).status_code == 200
    # /tokenize (which can decode images) and /detokenize need the key too.
    assert_error(keyed_server.post("/tokenize", {"model": NAME, "prompt": "hi"}), 401)
    assert_error(keyed_server.post("/detokenize", {"model": NAME, "tokens": [1, 2]}), 401)
    good = {"Authorization": "Bearer sk-test-123"}
    assert keyed_server.post("/tokenize", {"model": NAME, "prompt": "hi"}, headers=good).status_code == 200
    assert keyed_server.post("/detokenize", {"model": NAME, "tokens": [1, 2]}, headers=good).status_code == 200
    # Health, liveness, version and metrics stay open.
    for path in ["/health", "/ping", "/ready", "/v2/health/live", "/v2/health/ready", "/version", "/metrics"]:
        assert keyed_server.get(path).status_code == 200, path


def test_vllm_api_key_environment():
    """VLLM_API_KEY turns authentication on as --api-key does; the flag wins when both are given."""
    s = Server("--served-model-name", NAME, "--max-model-len", "256", env={"VLLM_API_KEY": "env-key"})
    try:
        assert_error(s.get("/v1/models"), 401)
        assert s.get("/v1/models", headers={"Authorization": "Bearer env-key"}).status_code == 200
    finally:
        s.stop()
    s = Server("--served-model-name", NAME, "--max-model-len", "256", "--api-key", "flag-key",
               env={"VLLM_API_KEY": "env-key"})
    try:
        assert_error(s.get("/v1/models", headers={"Authorization": "Bearer env-key"}), 401)
        assert s.get("/v1/models", headers={"Authorization": "Bearer flag-key"}).status_code == 200
    finally:
        s.stop()
