"""Mistral's OCR API on POST /v1/ocr, driven by the real `mistralai` SDK (its `server_url` pointed at
locr serve): document_url and image_url documents as data: URLs, 0-based pages, dimensions, page
confidence, and errors the SDK raises; the raw JSON shape checked field by field."""
import base64
import sys
from pathlib import Path

import pytest
import requests

from conftest import IMAGES, NAME, Server, full_size_pages

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_pdf  # noqa: E402

mistralai = pytest.importorskip("mistralai.client")
from mistralai.client import Mistral  # noqa: E402

PNG = (IMAGES / "page_small.png").read_bytes()


def b64(data):
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def srv():
    s = Server("--served-model-name", NAME, "--max-model-len", "4096")
    yield s
    assert s.stop() == 0


def pdf_ok(srv):
    r = requests.post(srv.url + "/v1/ocr", json={"document": b64(make_pdf(1)), "dpi": 36, "max_tokens": 2}, timeout=60)
    return not (r.status_code == 400 and "Poppler" in r.text)


@full_size_pages
def test_sdk_document_url_pages_and_dimensions(srv):
    if not pdf_ok(srv):
        pytest.skip("built without Poppler")
    client = Mistral(api_key="unused", server_url=srv.url)
    doc = {"type": "document_url", "document_url": "data:application/pdf;base64," + b64(make_pdf(3))}
    r = client.ocr.process(model=NAME, document=doc, pages=[0, 2], include_image_base64=True,
                           confidence_scores_granularity="page")
    assert r.model == NAME
    assert [p.index for p in r.pages] == [0, 2]
    assert r.usage_info.pages_processed == 2
    assert r.usage_info.doc_size_bytes == len(make_pdf(3))
    # The same pages through locr's own form: the same text.
    mine = requests.post(srv.url + "/v1/ocr", json={"document": b64(make_pdf(3)), "pages": "1,3"}, timeout=120).json()
    for p, m in zip(r.pages, mine["pages"]):
        assert p.dimensions.width == m["dimensions"]["width"] and p.dimensions.height == m["dimensions"]["height"]
        # A 144 pt wide page at the default 1540 px longest edge.
        assert p.dimensions.dpi == round(72 * p.dimensions.width / 144)
        assert p.images == []  # the tiny model writes no figure markers
        assert 0 < p.confidence_scores.average_page_confidence_score <= 1
        assert 0 < p.confidence_scores.minimum_page_confidence_score <= p.confidence_scores.average_page_confidence_score
        assert isinstance(p.markdown, str)
    # Greedy text matches locr's form of the same request.
    greedy = {"temperature": 0, "max_tokens": 12}
    a = requests.post(srv.url + "/v1/ocr", json={"model": NAME, "document": doc, "pages": "1", **greedy}, timeout=60).json()
    b = requests.post(srv.url + "/v1/ocr", json={"document": b64(make_pdf(3)), "pages": "2", **greedy}, timeout=60).json()
    assert a["pages"][0]["index"] == 1 and a["pages"][0]["markdown"] == b["pages"][0]["text"]


def test_sdk_image_url(srv):
    client = Mistral(api_key="unused", server_url=srv.url)
    r = client.ocr.process(model=NAME, document={"type": "image_url", "image_url": "data:image/png;base64," + b64(PNG)})
    assert len(r.pages) == 1 and r.pages[0].index == 0
    assert r.pages[0].dimensions.width > 0 and r.pages[0].dimensions.dpi > 0


def test_raw_shape(srv):
    body = {"model": NAME, "document": {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(PNG)}},
            "max_tokens": 4}
    j = requests.post(srv.url + "/v1/ocr", json=body, timeout=60).json()
    assert set(j) == {"pages", "model", "usage_info", "document_annotation"}
    assert set(j["pages"][0]) == {"index", "markdown", "images", "dimensions"}
    assert set(j["pages"][0]["dimensions"]) == {"dpi", "height", "width"}
    assert j["usage_info"]["pages_processed"] == 1


@pytest.mark.parametrize("body, param", [
    ({"document": {"type": "file", "file_id": "abc"}}, "document"),
    ({"document": {"type": "video_url", "video_url": "x"}}, "document"),
    ({"document": {"type": "image_url"}}, "document"),
    ({"document": {"type": "image_url", "image_url": "data:image/png;base64,@@@"}}, "document"),
    ({"document": {"type": "image_url", "image_url": "https://example.com/a.png"}}, "document"),
    ({"pages": [-1]}, "pages"),
    ({"pages": "a-b"}, "pages"),
    ({"pages": [5]}, "pages"),
    ({"confidence_scores_granularity": "word"}, "confidence_scores_granularity"),
    ({"bbox_annotation_format": {"type": "json_schema"}}, "bbox_annotation_format"),
    ({"image_limit": -2}, "image_limit"),
    ({"stream": True}, "stream"),
])
def test_bad_requests_are_400_naming_the_field(srv, body, param):
    full = {"model": NAME, "document": {"type": "image_url", "image_url": "data:image/png;base64," + b64(PNG)}}
    full.update(body)
    r = requests.post(srv.url + "/v1/ocr", json=full, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


def test_sdk_raises_on_an_unknown_model(srv):
    client = Mistral(api_key="unused", server_url=srv.url)
    with pytest.raises(Exception) as e:
        client.ocr.process(model="nope", document={"type": "image_url", "image_url": "data:image/png;base64," + b64(PNG)})
    assert "404" in str(e.value) or "nope" in str(e.value)


def test_a_document_that_is_not_what_was_declared_is_a_400(srv):
    if not pdf_ok(srv):
        pytest.skip("built without Poppler")
    pdf = make_pdf(1)
    cases = [
        ({"type": "image_url", "image_url": "data:image/png;base64," + b64(pdf)}, "holds a PDF"),
        ({"type": "image_url", "image_url": "data:application/octet-stream;base64," + b64(pdf)}, "holds a PDF"),
        ({"type": "document_url", "document_url": "data:image/jpeg;base64," + b64(pdf)}, "holds a PDF"),
        ({"type": "document_url", "document_url": "data:application/pdf;base64," + b64(PNG)}, "holds a PNG image"),
        ({"type": "document_url", "document_url": "data:application/pdf;base64," + b64(b"plain words")}, "neither a PDF"),
    ]
    for doc, words in cases:
        r = requests.post(srv.url + "/v1/ocr", json={"model": NAME, "document": doc}, timeout=60)
        assert r.status_code == 400, (doc["type"], r.text)
        assert r.json()["error"]["param"] == "document" and words in r.json()["error"]["message"], r.text
    # locr's own form: a data: URL that declares a PDF must hold one.
    r = requests.post(srv.url + "/v1/ocr", json={"document": "data:application/pdf;base64," + b64(PNG)}, timeout=60)
    assert r.status_code == 400 and "declared a PDF" in r.json()["error"]["message"], r.text
    # What was declared: accepted (an image is also a document).
    for doc in ({"type": "document_url", "document_url": "data:application/pdf;base64," + b64(pdf)},
                {"type": "document_url", "document_url": "data:image/png;base64," + b64(PNG)}):
        r = requests.post(srv.url + "/v1/ocr", json={"model": NAME, "document": doc, "max_tokens": 2, "dpi": 36}, timeout=60)
        assert r.status_code == 200, r.text
    client = Mistral(api_key="unused", server_url=srv.url)
    with pytest.raises(Exception) as e:
        client.ocr.process(model=NAME, document={"type": "image_url", "image_url": "data:image/png;base64," + b64(pdf)})
    assert "400" in str(e.value) or "holds a PDF" in str(e.value)
