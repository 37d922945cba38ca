"""Image inputs: data: URLs, local files under --allowed-local-media-path, http from an allowed host."""
import functools
import http.server
import threading

import pytest

from conftest import IMAGES, NAME, data_url, greedy


def ocr_request(*urls, **kw):
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    body = {"model": NAME, "messages": [{"role": "user", "content": parts}], **greedy(max_tokens=4)}
    body.update(kw)
    return body


def test_data_url_png(server):
    url = data_url(IMAGES / "page_small.png")
    r = server.post("/v1/chat/completions", ocr_request(url))
    assert r.status_code == 200, r.text
    usage = r.json()["usage"]
    tok = server.post("/tokenize", {"messages": ocr_request(url)["messages"]}).json()
    assert usage["prompt_tokens"] == tok["count"]
    text_only = server.post("/tokenize", {"messages": [{"role": "user", "content": []}]}).json()["count"]
    # page_small.png is 109x91 -> resized to 112x112 (multiples of 28) -> 4x4 image tokens.
    assert tok["count"] - text_only == 16
    assert usage["completion_tokens"] == 4


def test_data_url_jpeg_and_two_images(server):
    urls = [data_url(IMAGES / "photo.jpg", "image/jpeg"), data_url(IMAGES / "rgba.png")]
    r = server.post("/v1/chat/completions", ocr_request(*urls))
    assert r.status_code == 200, r.text
    before = server.metrics()["locr:images_total"]
    server.post("/v1/chat/completions", ocr_request(urls[1]))
    assert server.metrics()["locr:images_total"] == before + 1


def test_image_request_streams(server):
    r = server.post("/v1/chat/completions", ocr_request(data_url(IMAGES / "gray.png"), stream=True))
    assert r.status_code == 200
    assert r.text.rstrip().endswith("data: [DONE]")


def test_local_file_url(server):
    a = server.post("/v1/chat/completions", ocr_request(f"file://{IMAGES / 'exact.png'}")).json()
    b = server.post("/v1/chat/completions", ocr_request(data_url(IMAGES / "exact.png"))).json()
    assert a["usage"] == b["usage"]
    assert a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"]


@pytest.fixture(scope="module")
def image_host():
    """A loopback HTTP server with the fixture images (the only host the test server allows)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(IMAGES))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_http_url_from_allowed_host(server, image_host):
    a = server.post("/v1/chat/completions", ocr_request(f"{image_host}/exact.png")).json()
    b = server.post("/v1/chat/completions", ocr_request(data_url(IMAGES / "exact.png"))).json()
    assert a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"]
    r = server.post("/v1/chat/completions", ocr_request(f"{image_host}/missing.png"))
    assert r.status_code == 400 and "HTTP 404" in r.json()["error"]["message"]
