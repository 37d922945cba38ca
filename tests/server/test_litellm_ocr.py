"""LiteLLM's `ocr()` (its Mistral OCR provider) pointed at `locr serve` through `api_base`: what a
LiteLLM user or its proxy's /ocr route sends reaches /v1/ocr in Mistral's shape and comes back parsed
into LiteLLM's OCRResponse; errors surface as LiteLLM's exceptions with the server's message."""
import base64
import os
import sys
from pathlib import Path

import pytest
import requests

from conftest import IMAGES, NAME, Server, full_size_pages

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_pdf  # noqa: E402

# LiteLLM fetches its model price list from GitHub at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

PNG = (IMAGES / "page_small.png").read_bytes()


def data_url(data, mime):
    return f"data:{mime};base64," + base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def srv():
    s = Server("--served-model-name", NAME, "--max-model-len", "4096")
    yield s
    assert s.stop() == 0


def test_litellm_ocr_image(srv):
    doc = {"type": "image_url", "image_url": data_url(PNG, "image/png")}
    r = litellm.ocr(model="mistral/" + NAME, document=doc, api_base=srv.url + "/v1", api_key="unused")
    direct = requests.post(srv.url + "/v1/ocr", json={"model": NAME, "document": doc}, timeout=120).json()
    assert len(r.pages) == 1 and r.pages[0].index == 0
    assert isinstance(r.pages[0].markdown, str)
    assert r.pages[0].dimensions.width == direct["pages"][0]["dimensions"]["width"]
    assert r.pages[0].dimensions.height == direct["pages"][0]["dimensions"]["height"]
    assert r.usage_info.pages_processed == 1
    assert r.model == NAME


@full_size_pages
def test_litellm_ocr_pdf_pages(srv):
    pdf = make_pdf(3)
    probe = requests.post(srv.url + "/v1/ocr", json={"document": base64.b64encode(pdf).decode(), "dpi": 36, "max_tokens": 2},
                          timeout=60)
    if probe.status_code == 400 and "Poppler" in probe.text:
        pytest.skip("built without Poppler")
    doc = {"type": "document_url", "document_url": data_url(pdf, "application/pdf")}
    r = litellm.ocr(model="mistral/" + NAME, document=doc, pages=[0, 2], api_base=srv.url + "/v1", api_key="unused")
    assert [p.index for p in r.pages] == [0, 2]
    assert r.usage_info.pages_processed == 2
    assert r.usage_info.doc_size_bytes == len(pdf)


def test_litellm_raises_with_the_servers_message(srv):
    doc = {"type": "image_url", "image_url": data_url(b"not an image at all", "image/png")}
    with pytest.raises(Exception) as e:
        litellm.ocr(model="mistral/" + NAME, document=doc, api_base=srv.url + "/v1", api_key="unused")
    assert "400" in str(e.value) or "cannot open" in str(e.value), str(e.value)
    with pytest.raises(Exception) as e:
        litellm.ocr(model="mistral/no-such-model", document={"type": "image_url", "image_url": data_url(PNG, "image/png")},
                    api_base=srv.url + "/v1", api_key="unused")
    assert "404" in str(e.value) or "no-such-model" in str(e.value), str(e.value)
