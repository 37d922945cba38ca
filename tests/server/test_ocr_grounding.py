"""LightOnOCR checkpoints told apart by name, and LightOnOCR-3's grounding mode on /v1/ocr: a
LightOnOCR-3-1B directory (the tiny fixture under that name) runs `mode: grounding` and answers with
blocks and the Markdown made from them, Mistral requests on it run in grounding mode; a LightOnOCR-2
model refuses grounding and, without -bbox, `include_image_base64` (in the caller's API shape)."""
import base64
import json

import pytest
import requests

from conftest import IMAGES, MODEL, NAME, Server

PNG = (IMAGES / "page_small.png").read_bytes()
DOC = base64.b64encode(PNG).decode()


def named_model(tmp_path_factory, name):
    d = tmp_path_factory.mktemp("models") / name
    d.mkdir()
    for f in MODEL.iterdir():
        (d / f.name).symlink_to(f.resolve())
    return d


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    s = Server("--served-model-name", NAME, "--max-model-len", "4096", model=named_model(tmp_path_factory, "LightOnOCR-3-1B"))
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    s = Server("--served-model-name", NAME, "--max-model-len", "4096", model=named_model(tmp_path_factory, "LightOnOCR-2-1B"))
    yield s
    assert s.stop() == 0


def ocr(srv, **body):
    r = requests.post(srv.url + "/v1/ocr", json={"document": DOC, "max_tokens": 24, "temperature": 0, **body}, timeout=120)
    return r


def test_grounding_pages_carry_blocks_raw_and_markdown_of_the_blocks(three):
    plain = ocr(three)
    assert plain.status_code == 200, plain.text
    g = ocr(three, mode="grounding")
    assert g.status_code == 200, g.text
    page = g.json()["pages"][0]
    assert isinstance(page["raw"], str) and isinstance(page["blocks"], list)
    # The grounding prompt is the plain one plus the text `grounding`.
    assert page["usage"]["prompt_tokens"] > plain.json()["pages"][0]["usage"]["prompt_tokens"]
    for b in page["blocks"]:
        assert set(b) == {"label", "continues", "bbox", "box", "text", "dropped"}
    # Text before any marker is kept as a block: nothing the model wrote is lost.
    if page["raw"].strip():
        assert page["blocks"], page
    assert "blocks" not in plain.json()["pages"][0]


def test_mistral_requests_on_lightonocr3_run_in_grounding_mode(three):
    g = ocr(three, mode="grounding")
    m = requests.post(three.url + "/v1/ocr", json={
        "model": NAME, "document": {"type": "image_url", "image_url": "data:image/png;base64," + DOC},
        "max_tokens": 24, "temperature": 0}, timeout=120)
    assert m.status_code == 200, m.text
    # Same greedy decode of the same grounding prompt: the Mistral page is that Markdown.
    assert m.json()["pages"][0]["markdown"] == g.json()["pages"][0]["text"]


def test_drop_labels_need_grounding_and_a_list(three):
    r = ocr(three, drop_headers_footers=True)
    assert r.status_code == 400 and r.json()["error"]["param"] == "mode", r.text
    r = ocr(three, mode="grounding", drop_labels=7)
    assert r.status_code == 400 and r.json()["error"]["param"] == "drop_labels", r.text
    r = ocr(three, mode="grounding", drop_labels=["header", 3])
    assert r.status_code == 400 and r.json()["error"]["param"] == "drop_labels", r.text
    r = ocr(three, mode="grounding", drop_labels=["header"], drop_headers_footers=True)
    assert r.status_code == 200, r.text


def test_lightonocr2_refuses_grounding_naming_the_checkpoint(two):
    r = ocr(two, mode="grounding")
    assert r.status_code == 400, r.text
    e = r.json()["error"]
    assert e["param"] == "mode" and "LightOnOCR-3" in e["message"] and "LightOnOCR-2-1B" in e["message"]
    assert ocr(two).status_code == 200  # and keeps serving


def test_include_image_base64_on_a_model_without_boxes_is_a_400_the_sdk_raises(two):
    body = {"model": NAME, "document": {"type": "image_url", "image_url": "data:image/png;base64," + DOC},
            "include_image_base64": True}
    r = requests.post(two.url + "/v1/ocr", json=body, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "include_image_base64"
    assert "no figure boxes" in r.json()["error"]["message"]
    mistralai = pytest.importorskip("mistralai.client")
    client = mistralai.Mistral(api_key="unused", server_url=two.url)
    with pytest.raises(Exception) as e:
        client.ocr.process(model=NAME, document=body["document"], include_image_base64=True)
    assert "400" in str(e.value) or "figure boxes" in str(e.value)


def checkpoint_with_generation_config(tmp_path_factory, name, **gen):
    d = named_model(tmp_path_factory, name)
    (d / "generation_config.json").unlink()
    base = json.loads((MODEL / "generation_config.json").read_text())
    (d / "generation_config.json").write_text(json.dumps({**base, **gen}))
    return d


def test_sampling_defaults_come_from_the_checkpoints_generation_config(tmp_path_factory):
    """A LightOnOCR-3 checkpoint's own generation_config.json sets /v1/ocr's sampling defaults: greedy
    when it says do_sample false, hot sampling when it says temperature 5."""
    greedy_dir = checkpoint_with_generation_config(tmp_path_factory, "LightOnOCR-3-1B", do_sample=False)
    hot_dir = checkpoint_with_generation_config(tmp_path_factory, "LightOnOCR-3-1B", temperature=5.0, top_p=1.0)
    outputs = {}
    for key, d in (("greedy", greedy_dir), ("hot", hot_dir)):
        s = Server("--served-model-name", NAME, "--max-model-len", "4096", model=d)
        try:
            base = {"document": DOC, "mode": "grounding", "max_tokens": 24, "ignore_eos": True}
            outputs[key] = [requests.post(s.url + "/v1/ocr", json={**base, "seed": seed}, timeout=120).json()["pages"][0]["raw"]
                            for seed in (1, 2)]
            outputs[key + "0"] = requests.post(s.url + "/v1/ocr", json={**base, "temperature": 0}, timeout=120).json()[
                "pages"][0]["raw"]
        finally:
            assert s.stop() == 0
    assert outputs["greedy"] == [outputs["greedy0"]] * 2, "do_sample false: the default is greedy"
    assert outputs["hot0"] == outputs["greedy0"]
    assert outputs["hot"][0] != outputs["hot0"] and outputs["hot"][0] != outputs["hot"][1], "temperature 5 samples"
