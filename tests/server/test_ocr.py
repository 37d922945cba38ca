"""POST /v1/ocr: documents (PNG, multi-page PDF) as base64 JSON, data: URLs and multipart uploads;
page selections, per-page results and the joined document, streaming in page and completion order,
and the error cases."""
import base64
import os
import json
import math
import sys
import socket
import time
from pathlib import Path

import pytest
import requests

from conftest import FIXTURES, IMAGES, NAME, Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_pdf  # noqa: E402

PNG = (IMAGES / "page_small.png").read_bytes()


def b64(data):
    return base64.b64encode(data).decode()


def greedy(**kw):
    return {"temperature": 0, "max_tokens": 4, **kw}


def poppler_present(r):
    """False for a build without Poppler; a build that has it (CTest sets LOCR_EXPECT_POPPLER=1)
    but cannot render fails the test instead of skipping it."""
    present = not (r.status_code == 400 and "Poppler" in r.text)
    if not present and os.environ.get("LOCR_EXPECT_POPPLER") == "1":
        pytest.fail("this build has Poppler but the server cannot render a PDF: " + r.text[:300])
    return present


def pdf_supported(server):
    r = server.post("/v1/ocr", {"document": b64(make_pdf(1)), "dpi": 36, **greedy()})
    return poppler_present(r)


def sse_events(resp):
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    raw = resp.content.decode()
    assert raw.endswith("\n\n")
    events = raw.split("\n\n")[:-1]
    for e in events:
        assert e.startswith("data: "), e
        assert "\n" not in e
    return [e[len("data: "):] for e in events]


def check_page(p, number):
    assert p["page"] == number
    assert isinstance(p["text"], str)
    assert p["finish_reason"] in ("stop", "length")
    assert p["usage"]["prompt_tokens"] > 0 and 0 < p["usage"]["completion_tokens"] <= 4
    assert p["timings"]["total_s"] >= 0 and p["timings"]["render_s"] >= 0


def test_png_base64(server):
    r = server.post("/v1/ocr", {"document": b64(PNG), **greedy()})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["object"] == "ocr.document" and j["model"] == NAME and j["id"].startswith("ocr-")
    assert j["page_count"] == 1 and j["format"] == "PNG" and len(j["pages"]) == 1
    check_page(j["pages"][0], 1)
    assert j["document"] == j["pages"][0]["text"].rstrip("\n ")
    assert j["usage"]["completion_tokens"] == j["pages"][0]["usage"]["completion_tokens"]
    assert j["usage"]["total_tokens"] == j["usage"]["prompt_tokens"] + j["usage"]["completion_tokens"]


def test_png_data_url_matches_chat(server):
    url = "data:image/png;base64," + b64(PNG)
    r = server.post("/v1/ocr", {"document": url, **greedy(max_tokens=6), "fix_dollars": False})
    assert r.status_code == 200, r.text
    chat = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}]}], **greedy(max_tokens=6)}).json()
    # The same image-only OCR prompt as a chat request with just the image.
    assert r.json()["pages"][0]["text"] == chat["choices"][0]["message"]["content"]
    assert r.json()["usage"]["prompt_tokens"] == chat["usage"]["prompt_tokens"]


def test_page_confidence_is_the_sampled_tokens_logprobs(server):
    """Each page's confidence summarises the log-probabilities of the tokens it sampled: the same
    numbers a chat request with `logprobs: true` returns for the same image."""
    url = "data:image/png;base64," + b64(PNG)
    opts = {"temperature": 0, "max_tokens": 24, "ignore_eos": True}
    r = server.post("/v1/ocr", {"document": url, "confidence_threshold": 0.3, **opts})
    assert r.status_code == 200, r.text
    c = r.json()["pages"][0]["confidence"]
    chat = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}]}], "logprobs": True, **opts}).json()
    lps = [t["logprob"] for t in chat["choices"][0]["logprobs"]["content"]]
    assert len(lps) == 24 and c["tokens"] == 24
    assert c["mean_logprob"] == pytest.approx(sum(lps) / len(lps), rel=1e-5, abs=1e-6)
    assert c["min_logprob"] == pytest.approx(min(lps), rel=1e-5, abs=1e-6)
    assert c["tokens_below_threshold"] == sum(lp < math.log(0.3) for lp in lps)
    assert c["threshold"] == pytest.approx(0.3)
    assert c["score"] == pytest.approx(math.exp(c["mean_logprob"]))
    for bad in (0, 1, -0.5, "x"):
        e = server.post("/v1/ocr", {"document": url, "confidence_threshold": bad, **opts})
        assert e.status_code == 400 and e.json()["error"]["param"] == "confidence_threshold", bad


def test_grounding_mode_is_the_image_then_grounding(server):
    """mode "grounding" (LightOnOCR-3): the page image followed by the text `grounding`, exactly as a
    chat request with those two parts."""
    url = "data:image/png;base64," + b64(PNG)
    r = server.post("/v1/ocr", {"document": url, "mode": "grounding", **greedy(max_tokens=6), "fix_dollars": False})
    assert r.status_code == 200, r.text
    chat = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "grounding"}]}],
        **greedy(max_tokens=6)}).json()
    # `raw` is the model's output; `text` the Markdown of its blocks (test_ocr_grounding.py).
    assert r.json()["pages"][0]["raw"] == chat["choices"][0]["message"]["content"]
    assert r.json()["usage"]["prompt_tokens"] == chat["usage"]["prompt_tokens"]
    plain = server.post("/v1/ocr", {"document": url, **greedy(max_tokens=6)}).json()
    assert r.json()["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"]
    bad = server.post("/v1/ocr", {"document": url, "mode": "layout"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "mode"


def test_pdf_pages_and_ranges(server):
    if not pdf_supported(server):
        pytest.skip("built without Poppler")
    doc = b64(make_pdf(3))
    j = server.post("/v1/ocr", {"document": doc, "dpi": 36, **greedy()}).json()
    assert j["format"] == "PDF" and j["page_count"] == 3
    assert [p["page"] for p in j["pages"]] == [1, 2, 3]
    for i, p in enumerate(j["pages"]):
        check_page(p, i + 1)
    assert j["document"] == "\n\n".join(p["text"].rstrip("\n ") for p in j["pages"])
    j2 = server.post("/v1/ocr", {"document": doc, "dpi": 36, "pages": "3,1", **greedy(),
                                 "page_separator": "---"}).json()
    assert [p["page"] for p in j2["pages"]] == [1, 3]
    assert j2["pages_selected"] == 2
    assert "\n\n---\n\n" in j2["document"]
    # Greedy: a page's text does not depend on the others in the request.
    assert j2["pages"][1]["text"] == j["pages"][2]["text"]
    j3 = server.post("/v1/ocr", {"document": doc, "dpi": 36, "pages": "2-", **greedy()}).json()
    assert [p["page"] for p in j3["pages"]] == [2, 3]


def test_multipart_upload(server):
    r = requests.post(server.url + "/v1/ocr", files={"file": ("page.png", PNG, "image/png")},
                      data={"max_tokens": "4", "temperature": "0", "output": "text", "pages": "1"}, timeout=60)
    assert r.status_code == 200, r.text
    j = r.json()
    check_page(j["pages"][0], 1)
    ref = server.post("/v1/ocr", {"document": b64(PNG), **greedy(), "output": "text"}).json()
    assert j["pages"][0]["text"] == ref["pages"][0]["text"]
    r = requests.post(server.url + "/v1/ocr", files={"other": ("x", b"1")}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["param"] == "file"


def test_line_wrapped_base64(server):
    wrapped = "\n".join(b64(PNG)[i:i + 76] for i in range(0, len(b64(PNG)), 76)) + "\n"
    a = server.post("/v1/ocr", {"document": wrapped, **greedy()}).json()
    b = server.post("/v1/ocr", {"document": b64(PNG), **greedy()}).json()
    assert a["pages"][0]["text"] == b["pages"][0]["text"]


def test_output_json_has_raw(server):
    j = server.post("/v1/ocr", {"document": b64(PNG), **greedy(), "output": "json"}).json()
    assert "raw" in j["pages"][0]


@pytest.mark.parametrize("order", ["page", "completion"])
def test_stream(server, order):
    if pdf_supported(server):
        doc, n = b64(make_pdf(3)), 3
    else:
        doc, n = b64(PNG), 1
    body = {"document": doc, "dpi": 36, "stream": True, "order": order, **greedy()}
    r = server.post("/v1/ocr", body, stream=False)
    assert r.status_code == 200, r.text
    data = sse_events(r)
    assert data[-1] == "[DONE]"
    events = [json.loads(d) for d in data[:-1]]
    pages, summary = events[:-1], events[-1]
    assert len(pages) == n
    assert all(e["object"] == "ocr.page" for e in pages)
    assert sorted(e["page"] for e in pages) == list(range(1, n + 1))
    if order == "page":
        assert [e["page"] for e in pages] == list(range(1, n + 1))
    else:
        done = [e["timings"]["total_s"] for e in pages]
        assert done == sorted(done)
    for e in pages:
        check_page(e, e["page"])
    assert summary["object"] == "ocr.document" and "pages" not in summary
    assert summary["usage"]["completion_tokens"] == sum(e["usage"]["completion_tokens"] for e in pages)
    by_page = sorted(pages, key=lambda e: e["page"])
    assert summary["document"] == "\n\n".join(e["text"].rstrip("\n ") for e in by_page)


def test_page_images_and_dimensions(server):
    """include_page_image: each page carries the image the model read (a JPEG data: URL of exactly
    `dimensions`, the model-size page that box coordinates refer to)."""
    r = server.post("/v1/ocr", {"document": b64(PNG), "include_page_image": True, **greedy()})
    assert r.status_code == 200, r.text
    p = r.json()["pages"][0]
    w, h = p["dimensions"]["width"], p["dimensions"]["height"]
    assert w > 0 and h > 0
    assert p["image"].startswith("data:image/jpeg;base64,")
    jpeg = base64.b64decode(p["image"].split(",", 1)[1])
    assert jpeg[:2] == b"\xff\xd8"
    # The SOF0 frame header gives the encoded size.
    i = 2
    while jpeg[i + 1] != 0xC0:
        i += 2 + int.from_bytes(jpeg[i + 2:i + 4], "big")
    assert (int.from_bytes(jpeg[i + 5:i + 7], "big"), int.from_bytes(jpeg[i + 7:i + 9], "big")) == (h, w)
    # Without the option: dimensions, but no image.
    q = server.post("/v1/ocr", {"document": b64(PNG), **greedy()}).json()["pages"][0]
    assert q["dimensions"] == p["dimensions"] and "image" not in q


def test_progress_events(server):
    """progress: true adds ocr.progress events: one at once listing every selected page, then while
    tokens come; the counts only grow and end at the pages' totals."""
    doc, n = (b64(make_pdf(2)), 2) if pdf_supported(server) else (b64(PNG), 1)
    body = {"document": doc, "dpi": 36, "stream": True, "progress": True, "temperature": 0, "ignore_eos": True,
            "max_tokens": 600}
    r = server.post("/v1/ocr", body)
    assert r.status_code == 200, r.text
    events = [json.loads(d) for d in sse_events(r)[:-1]]
    progress = [e for e in events if e["object"] == "ocr.progress"]
    pages = [e for e in events if e["object"] == "ocr.page"]
    assert events[0]["object"] == "ocr.progress"
    first = events[0]
    assert first["pages_selected"] == n and first["pages_done"] == 0
    assert [p["page"] for p in first["pages"]] == list(range(1, n + 1))
    assert all(p["state"] == "waiting" for p in first["pages"])
    done = [e["pages_done"] for e in progress]
    assert done == sorted(done)
    tokens = [e["completion_tokens"] for e in progress]
    assert tokens == sorted(tokens) and tokens[-1] <= sum(p["usage"]["completion_tokens"] for p in pages)
    assert len(pages) == n and events[-1]["object"] == "ocr.document"
    for e in progress:
        for p in e["pages"]:
            assert p["state"] in ("waiting", "running", "done")


def test_progress_needs_stream(server):
    r = server.post("/v1/ocr", {"document": b64(PNG), "progress": True, **greedy()})
    assert r.status_code == 400 and r.json()["error"]["param"] == "progress"


def error_of(r, status, param=None):
    assert r.status_code == status, r.text
    e = r.json()["error"]
    if param is not None:
        assert e["param"] == param, e
    return e["message"]


def test_errors(server):
    assert "base64" in error_of(server.post("/v1/ocr", {"document": "not base64 at all!"}), 400, "document")
    assert "required" in error_of(server.post("/v1/ocr", {"max_tokens": 3}), 400, "document")
    msg = error_of(server.post("/v1/ocr", {"document": b64(b"this is not a document, just some text")}), 400, "document")
    assert "cannot open the document" in msg
    assert "out of range" in error_of(server.post("/v1/ocr", {"document": b64(PNG), "pages": "2"}), 400, "pages")
    error_of(server.post("/v1/ocr", {"document": b64(PNG), "pages": "0-"}), 400, "pages")
    error_of(server.post("/v1/ocr", {"document": b64(PNG), "output": "html"}), 400, "output")
    error_of(server.post("/v1/ocr", {"document": b64(PNG), "order": "random"}), 400, "order")
    error_of(server.post("/v1/ocr", {"document": b64(PNG), "model": "nope"}), 404, "model")
    error_of(server.post("/v1/ocr", {"document": b64(PNG), "temperature": -1}), 400, "temperature")
    # A truncated PDF.
    msg = error_of(server.post("/v1/ocr", {"document": b64(make_pdf(2)[:60])}), 400, "document")
    assert "document" in msg
    # The server is fine afterwards.
    assert server.post("/v1/ocr", {"document": b64(PNG), **greedy()}).status_code == 200


def test_encrypted_pdf(server):
    if not pdf_supported(server):
        pytest.skip("built without Poppler")
    doc = b64((FIXTURES / "documents" / "encrypted_rc4.pdf").read_bytes())
    msg = error_of(server.post("/v1/ocr", {"document": doc, **greedy()}), 400, "document")
    assert "encrypted and needs a password" in msg
    msg = error_of(server.post("/v1/ocr", {"document": doc, "password": "nope", **greedy()}), 400, "document")
    assert "password" in msg
    r = server.post("/v1/ocr", {"document": doc, "password": "secret", "dpi": 36, **greedy()})
    assert r.status_code == 200, r.text
    assert r.json()["page_count"] == 1
    check_page(r.json()["pages"][0], 1)


def test_prompt_too_long_for_context(server):
    # max-model-len is 1024 in the test server: 4 + 1100 tokens cannot fit.
    error_of(server.post("/v1/ocr", {"document": b64(PNG), "max_tokens": 1100}), 400, "max_tokens")


@pytest.fixture(scope="module")
def limited():
    s = Server("--served-model-name", NAME, "--max-model-len", "1024", "--max-document-pages", "2",
               "--api-key", "sekret")
    yield s
    s.stop()


def test_page_limit_and_api_key(limited):
    auth = {"Authorization": "Bearer sekret"}
    r = limited.post("/v1/ocr", {"document": b64(PNG)})
    assert r.status_code == 401
    assert limited.post("/v1/ocr", {"document": b64(PNG), **greedy()}, headers=auth).status_code == 200
    if not pdf_supported_auth(limited, auth):
        pytest.skip("built without Poppler")
    r = limited.post("/v1/ocr", {"document": b64(make_pdf(3)), "dpi": 36, **greedy()}, headers=auth)
    assert "too many pages" in error_of(r, 400, "pages")
    r = limited.post("/v1/ocr", {"document": b64(make_pdf(3)), "dpi": 36, "pages": "2-3", **greedy()}, headers=auth)
    assert r.status_code == 200 and [p["page"] for p in r.json()["pages"]] == [2, 3]


def pdf_supported_auth(server, headers):
    r = server.post("/v1/ocr", {"document": b64(make_pdf(1)), "dpi": 36, **greedy()}, headers=headers)
    return poppler_present(r)


def wait_for(cond, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_disconnect_cancels_all_pages(server):
    if pdf_supported(server):
        doc, n = b64(make_pdf(2)), 2
    else:
        doc, n = b64(PNG), 1
    before = server.metrics()
    aborted = before[f'vllm:request_success_total{{model_name="{NAME}",finished_reason="abort"}}']
    body = json.dumps({"document": doc, "dpi": 36, "stream": True, "max_tokens": 900, "temperature": 0,
                       "ignore_eos": True}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"POST /v1/ocr HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert wait_for(lambda: server.metrics()["vllm:num_requests_running"] == n, 20)
    sock.close()
    assert wait_for(lambda: server.metrics()["vllm:num_requests_running"] == 0)
    after = server.metrics()
    assert after["locr:client_disconnects_total"] > before["locr:client_disconnects_total"]
    assert after[f'vllm:request_success_total{{model_name="{NAME}",finished_reason="abort"}}'] == aborted + n
