"""Figures end to end: a server (and `locr ocr --model`) whose every generation is a fixed, realistic
LightOnOCR-2-1B-bbox page text (`--debug-forced-output`), since the tiny random model never writes a
figure box. Three figure markers: one well formed, one malformed (stays text), one out of range
(clamped). Checked over Mistral's shape (ids, coordinates computed here from the boxes, crops
decoded with Pillow against the page image the model read), locr's shape (text, confidence), and
`locr ocr` (PNG crops beside the page Markdown, manifest figures and confidence, resume,
--no-figures, --server)."""
import base64
import io
import json
import math
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import MODEL, NAME, Server, locr_bin

Image = pytest.importorskip("PIL.Image", reason="Pillow (tests/server/requirements.txt) is not installed")

# Sides that are multiples of 28 px: the model reads this page at exactly its own size.
W, H = 448, 336
FIGURE_OK = (102, 150, 498, 420)
FIGURE_CLAMPED = (600, 700, 1200, 1100)  # -> 600,700,1000,1000
MALFORMED = "![image](image_2.png)12,abc,40,50"
FORCED = (
    "# Quarterly report\n\n"
    "Revenue grew in every region, led by the north.\n\n"
    "![image](image_1.png)%d,%d,%d,%d\n\n"
    "Figure 1: revenue by region.\n\n"
    "%s\n\n"
    "| region | revenue |\n|---|---|\n| north | 12 |\n\n"
    "![image](image_3.png)%d,%d,%d,%d\n\n"
    "The end.") % (FIGURE_OK + (MALFORMED,) + FIGURE_CLAMPED)


def page_png():
    """A page with structure everywhere (so a crop off by a pixel would not match): blocks of
    grey levels and a colour gradient."""
    im = Image.new("RGB", (W, H))
    px = im.load()
    for y in range(H):
        for x in range(W):
            g = ((x // 16) * 37 + (y // 16) * 91) % 256
            px[x, y] = (g, (x * 255) // (W - 1), (y * 255) // (H - 1))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


PNG = page_png()


def half_up(v):
    return int(math.floor(v + 0.5))


def pixel_box(box, w, h):
    """The box (0..1000, clamped, ordered) in pixels of a w x h page: (left, top, right, bottom)."""
    x1, y1, x2, y2 = [min(max(v, 0), 1000) for v in box]
    x1, x2 = sorted((x1, x2))
    y1, y2 = sorted((y1, y2))
    return half_up(x1 * w / 1000), half_up(y1 * h / 1000), half_up(x2 * w / 1000), half_up(y2 * h / 1000)


def decode(data):
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def data_url_bytes(url, mime):
    prefix = f"data:{mime};base64,"
    assert url.startswith(prefix), url[:40]
    return base64.b64decode(url[len(prefix):])


def mean_abs_diff(a, b):
    assert a.size == b.size
    pa, pb = a.convert("RGB").tobytes(), b.convert("RGB").tobytes()
    return sum(abs(x - y) for x, y in zip(pa, pb)) / len(pa)


@pytest.fixture(scope="module")
def forced_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("forced") / "page.md"
    p.write_text(FORCED)
    return p


@pytest.fixture(scope="module")
def srv(forced_file):
    s = Server("--served-model-name", NAME, "--max-model-len", "2048", "--debug-forced-output", "@" + str(forced_file))
    yield s
    assert s.stop() == 0


def image_body(**kw):
    body = {"model": NAME, "document": {"type": "image_url", "image_url": "data:image/png;base64,"
                                        + base64.b64encode(PNG).decode()}}
    body.update(kw)
    return body


def test_forced_output_is_what_every_generation_emits(srv):
    r = srv.post("/v1/chat/completions", {"model": NAME, "messages": [{"role": "user", "content": "anything"}],
                                          "logprobs": True, "max_tokens": 1000})
    assert r.status_code == 200, r.text
    c = r.json()["choices"][0]
    assert c["message"]["content"] == FORCED
    assert c["finish_reason"] == "stop"
    # The random model gives these tokens little probability: real logprobs, not zeros.
    assert all(t["logprob"] < -1 for t in c["logprobs"]["content"])
    toks = [t["token"] for t in c["logprobs"]["content"]]
    assert "".join(toks[:-1]) == FORCED and toks[-1] == "<|im_end|>", "the forced tokens, then EOS"
    # max_tokens still cuts it short.
    r = srv.post("/v1/chat/completions", {"model": NAME, "messages": [{"role": "user", "content": "x"}], "max_tokens": 3})
    assert r.json()["choices"][0]["finish_reason"] == "length"
    assert FORCED.startswith(r.json()["choices"][0]["message"]["content"])


def test_mistral_images_coordinates_and_crops(srv):
    r = srv.post("/v1/ocr", image_body(include_image_base64=True))
    assert r.status_code == 200, r.text
    page = r.json()["pages"][0]
    w, h = page["dimensions"]["width"], page["dimensions"]["height"]
    assert (w, h) == (W, H)
    # The page image the model read, from locr's own include_page_image on the same document.
    mine = srv.post("/v1/ocr", {"document": base64.b64encode(PNG).decode(), "include_page_image": True}).json()
    read = decode(data_url_bytes(mine["pages"][0]["image"], "image/jpeg")).convert("RGB")
    assert read.size == (w, h)
    original = decode(PNG).convert("RGB")

    images = page["images"]
    assert [im["id"] for im in images] == ["img-0.jpeg", "img-1.jpeg"], "the malformed marker is no image"
    for im, box in zip(images, (FIGURE_OK, FIGURE_CLAMPED)):
        left, top, right, bottom = pixel_box(box, w, h)
        assert (im["top_left_x"], im["top_left_y"], im["bottom_right_x"], im["bottom_right_y"]) == (left, top, right, bottom)
        crop = decode(data_url_bytes(im["image_base64"], "image/jpeg"))
        assert crop.format == "JPEG" and crop.size == (right - left, bottom - top)
        # JPEG both ways (4:2:0, so colour edges blur): close to the crop of the page the model
        # read (measured 2.0 and 3.4 per channel value), far from a crop shifted by 5 px (20).
        ref = read.crop((left, top, right, bottom))
        near = mean_abs_diff(crop, ref)
        assert near < 5, near
        shifted = (left + 5, top + 5, right + 5, bottom + 5) if right + 5 <= w else (left - 5, top - 5, right - 5, bottom - 5)
        assert mean_abs_diff(crop, read.crop(shifted)) > 3 * near + 5
        assert mean_abs_diff(crop, original.crop((left, top, right, bottom))) < 8  # measured 3.7 and 5.5
    assert pixel_box(FIGURE_CLAMPED, w, h)[2:] == (W, H), "the out-of-range box is clamped to the page"

    md = page["markdown"]
    assert "![img-0.jpeg](img-0.jpeg)" in md and "![img-1.jpeg](img-1.jpeg)" in md
    assert "image_1.png" not in md and "image_3.png" not in md
    assert MALFORMED in md, "a marker whose box does not parse stays as text"
    assert md.count("![") == 3
    assert md == (FORCED.replace("![image](image_1.png)%d,%d,%d,%d" % FIGURE_OK, "![img-0.jpeg](img-0.jpeg)")
                  .replace("![image](image_3.png)%d,%d,%d,%d" % FIGURE_CLAMPED, "![img-1.jpeg](img-1.jpeg)"))
    # Without include_image_base64: the same images, no pixels.
    plain = srv.post("/v1/ocr", image_body()).json()["pages"][0]
    assert [(i["id"], i.get("image_base64")) for i in plain["images"]] == [("img-0.jpeg", None), ("img-1.jpeg", None)]
    assert plain["markdown"] == md


def test_locr_shape_text_and_confidence(srv):
    r = srv.post("/v1/ocr", {"document": base64.b64encode(PNG).decode(), "confidence_threshold": 0.5})
    assert r.status_code == 200, r.text
    p = r.json()["pages"][0]
    assert p["text"] == FORCED  # locr's shape keeps the model's markers as written
    assert p["finish_reason"] == "stop"
    # The same page through chat: the same tokens, so the same logprobs (EOS included in both).
    chat = srv.post("/v1/chat/completions", {
        "model": NAME, "logprobs": True, "max_tokens": 1000,
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}]}]}).json()
    lps = [t["logprob"] for t in chat["choices"][0]["logprobs"]["content"]]
    conf = p["confidence"]
    assert conf["tokens"] == p["usage"]["completion_tokens"] == chat["usage"]["completion_tokens"]
    assert len(lps) == conf["tokens"]
    assert abs(conf["min_logprob"] - min(lps)) < 1e-3
    assert abs(conf["mean_logprob"] - sum(lps) / len(lps)) < 1e-3
    assert conf["mean_logprob"] < -1 and conf["tokens_below_threshold"] == conf["tokens"]


def run_ocr(*args, timeout=300):
    return subprocess.run([locr_bin(), "ocr", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def manifest_page(out):
    m = json.loads((out / "manifest.json").read_text())
    return m, m["documents"][0]["pages"][0]


def test_locr_ocr_writes_crops_manifest_and_resumes(tmp_path, forced_file, srv):
    src = tmp_path / "in" / "report.png"
    src.parent.mkdir()
    src.write_bytes(PNG)
    out = tmp_path / "out"
    common = ["--model", MODEL, "--threads", "1", "--max-model-len", "2048", "--debug-forced-output", "@" + str(forced_file)]
    p = run_ocr(src, "-o", out, *common)
    assert p.returncode == 0, p.stderr[-2000:]
    md = (out / "report" / "page-0001.md").read_text()
    assert "![page-0001-img-1.png](page-0001-img-1.png)" in md and "![page-0001-img-2.png](page-0001-img-2.png)" in md
    assert MALFORMED in md and "image_1.png" not in md and "image_3.png" not in md
    assert sorted(f.name for f in (out / "report").iterdir()) == ["page-0001-img-1.png", "page-0001-img-2.png",
                                                                   "page-0001.md"]
    original = decode(PNG).convert("RGB")
    m, pg = manifest_page(out)
    boxes = [pixel_box(FIGURE_OK, W, H), pixel_box(FIGURE_CLAMPED, W, H)]
    assert [f["file"] for f in pg["figures"]] == ["report/page-0001-img-1.png", "report/page-0001-img-2.png"]
    for f, (left, top, right, bottom) in zip(pg["figures"], boxes):
        assert f["box"] == {"left": left, "top": top, "right": right, "bottom": bottom}
        crop = decode((out / f["file"]).read_bytes())
        assert crop.format == "PNG" and crop.size == (right - left, bottom - top)
        assert crop.convert("RGB").tobytes() == original.crop((left, top, right, bottom)).tobytes(), "lossless crop"
    # The document file sits in OUTDIR: its links point into the document's folder.
    doc = (out / "report.md").read_text()
    assert "![page-0001-img-1.png](report/page-0001-img-1.png)" in doc and MALFORMED in doc
    # Confidence from the engine's logprobs of the forced tokens; the same page on the server
    # (same prompt, same tokens) agrees.
    conf = pg["confidence"]
    assert conf["tokens"] == pg["completion_tokens"] and conf["threshold"] == 0.5
    assert conf["tokens_below_threshold"] == conf["tokens"] and conf["min_logprob"] <= conf["mean_logprob"] < -1
    served = srv.post("/v1/ocr", {"document": base64.b64encode(PNG).decode()}).json()["pages"][0]["confidence"]
    assert served["tokens"] == conf["tokens"]
    assert abs(served["mean_logprob"] - conf["mean_logprob"]) < 0.05
    assert m["options"]["figures"] is True and m["options"]["confidence_threshold"] == 0.5

    # Rerun: skipped, figures and confidence restored from the manifest, files untouched.
    before = {f.name: f.read_bytes() for f in (out / "report").iterdir()}
    p = run_ocr(src, "-o", out, *common)
    m2, pg2 = manifest_page(out)
    assert p.returncode == 0 and m2["pages_skipped"] == 1 and pg2["status"] == "skipped"
    assert pg2["figures"] == pg["figures"] and pg2["confidence"] == pg["confidence"]
    assert {f.name: f.read_bytes() for f in (out / "report").iterdir()} == before
    assert "report/page-0001-img-1.png" in (out / "report.md").read_text()
    # A crop gone: the page is done again and the crop is back.
    (out / "report" / "page-0001-img-2.png").unlink()
    p = run_ocr(src, "-o", out, *common)
    m3, pg3 = manifest_page(out)
    assert p.returncode == 0 and m3["pages_skipped"] == 0 and pg3["status"] == "ok"
    assert (out / "report" / "page-0001-img-2.png").read_bytes() == before["page-0001-img-2.png"]

    # --no-figures: the text as the model wrote it, no crops (those of the earlier run removed).
    p = run_ocr(src, "-o", out, *common, "--no-figures")
    m4, pg4 = manifest_page(out)
    assert p.returncode == 0 and m4["pages_skipped"] == 0 and "options differ" in p.stderr
    assert (out / "report" / "page-0001.md").read_text() == FORCED + "\n"
    assert sorted(f.name for f in (out / "report").iterdir()) == ["page-0001.md"]
    assert pg4["figures"] == [] and pg4["confidence"]["tokens"] == conf["tokens"]

    # --format json: the page file carries the figures and confidence too.
    p = run_ocr(src, "-o", out, *common, "--format", "json")
    page_json = json.loads((out / "report" / "page-0001.json").read_text())
    assert [f["file"] for f in page_json["figures"]] == ["report/page-0001-img-1.png", "report/page-0001-img-2.png"]
    assert "![page-0001-img-1.png](page-0001-img-1.png)" in page_json["text"]
    assert page_json["confidence"]["tokens"] == conf["tokens"]


def test_locr_ocr_server_backend_confidence_from_chat_logprobs(tmp_path, srv):
    src = tmp_path / "report.png"
    src.write_bytes(PNG)
    out = tmp_path / "out"
    threshold = 1e-7  # ln = -16.1: the forced tokens fall on both sides of it
    p = run_ocr(src, "-o", out, "--server", srv.url, "--concurrency", "1", "--confidence-threshold", threshold)
    assert p.returncode == 0, p.stderr[-2000:]
    _, pg = manifest_page(out)
    assert len(pg["figures"]) == 2
    assert "![page-0001-img-1.png](page-0001-img-1.png)" in (out / "report" / "page-0001.md").read_text()
    # What the chat completion of the same page reports, summarised here.
    chat = srv.post("/v1/chat/completions", {
        "model": NAME, "logprobs": True, "top_logprobs": 0,
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}]}]}).json()
    lps = [t["logprob"] for t in chat["choices"][0]["logprobs"]["content"]]
    conf = pg["confidence"]
    assert conf["tokens"] == len(lps) and conf["threshold"] == threshold
    assert abs(conf["mean_logprob"] - sum(lps) / len(lps)) < 1e-3
    assert abs(conf["min_logprob"] - min(lps)) < 1e-3
    below = sum(lp < math.log(threshold) for lp in lps)
    assert 0 < below < len(lps) and abs(conf["tokens_below_threshold"] - below) <= 1


def test_forced_output_flag_errors(tmp_path):
    src = tmp_path / "p.png"
    src.write_bytes(PNG)
    p = run_ocr(src, "-o", tmp_path / "o", "--server", "http://127.0.0.1:9", "--debug-forced-output", "x")
    assert p.returncode != 0 and "--debug-forced-output works with --model only" in p.stderr
    p = run_ocr(src, "-o", tmp_path / "o", "--model", MODEL, "--debug-forced-output", "@" + str(tmp_path / "missing"))
    assert p.returncode != 0 and "--debug-forced-output" in p.stderr
    p = run_ocr(src, "-o", tmp_path / "o", "--model", MODEL, "--confidence-threshold", "1.5")
    assert p.returncode != 0 and "--confidence-threshold must be a probability" in p.stderr
    p = subprocess.run([locr_bin(), "serve", str(MODEL), "--port", "0", "--debug-forced-output", ""],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "--debug-forced-output: the text is empty" in p.stderr
