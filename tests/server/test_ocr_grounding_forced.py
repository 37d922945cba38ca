"""LightOnOCR-3 grounding end to end: a LightOnOCR-3-1B directory (the tiny fixture under that
name) whose every generation is a fixed, realistic grounding page (`--debug-forced-output`), since
the random model never writes a marker. Checked: /v1/ocr `mode: grounding` blocks (labels, 0-1000
boxes, pixel boxes computed here, texts), the Markdown made of them with and without headers and
footers; a Mistral request on that model (run in grounding mode: the image block becomes the image,
cropped); and `locr ocr --mode grounding` (page Markdown, blocks file, figure crop)."""
import base64
import json
import subprocess

import pytest

from conftest import MODEL, NAME, Server, locr_bin
from test_ocr_figures import H, PNG, W, data_url_bytes, decode, mean_abs_diff, pixel_box

BLOCKS = [  # label, box (0..1000), text
    ("header", (0, 0, 1000, 60), "ACME Quarterly"),
    ("title", (100, 80, 900, 140), "# Revenue"),
    ("text", (100, 160, 480, 500), "Revenue grew in every"),
    ("text+", (520, 160, 900, 500), "region, led by the north."),
    ("image", (150, 520, 850, 800), "A bar chart of revenue by region."),
    ("caption", (300, 810, 700, 840), "Figure 1: revenue by region."),
    ("table", (100, 850, 900, 940), "| region | revenue |\n|---|---|\n| north | 12 |"),
    ("page_number", (480, 960, 520, 990), "3"),
]
FORCED = "".join(f"![{label}]({','.join(map(str, box))}) {text}\n" if label != "table" else
                 f"![{label}]({','.join(map(str, box))})\n{text}\n" for label, box, text in BLOCKS)
MARKDOWN = ("ACME Quarterly\n\n# Revenue\n\nRevenue grew in every region, led by the north.\n\n"
            "A bar chart of revenue by region.\n\nFigure 1: revenue by region.\n\n"
            "| region | revenue |\n|---|---|\n| north | 12 |\n\n3")
NO_FURNITURE = MARKDOWN[len("ACME Quarterly\n\n"):-len("\n\n3")]


@pytest.fixture(scope="module")
def model3(tmp_path_factory):
    d = tmp_path_factory.mktemp("models") / "LightOnOCR-3-1B"
    d.mkdir()
    for f in MODEL.iterdir():
        (d / f.name).symlink_to(f.resolve())
    return d


@pytest.fixture(scope="module")
def forced_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("forced") / "grounding.md"
    p.write_text(FORCED)
    return p


@pytest.fixture(scope="module")
def srv(model3, forced_file):
    s = Server("--served-model-name", NAME, "--max-model-len", "2048", "--debug-forced-output", "@" + str(forced_file),
               model=model3)
    yield s
    assert s.stop() == 0


def doc():
    return base64.b64encode(PNG).decode()


def test_grounding_blocks_boxes_and_markdown(srv):
    r = srv.post("/v1/ocr", {"document": doc(), "mode": "grounding"})
    assert r.status_code == 200, r.text
    page = r.json()["pages"][0]
    assert (page["dimensions"]["width"], page["dimensions"]["height"]) == (W, H)
    assert page["raw"] == FORCED
    assert [(b["label"], b["continues"]) for b in page["blocks"]] == [
        (label.rstrip("+"), label.endswith("+")) for label, _, _ in BLOCKS]
    for b, (_, box, text) in zip(page["blocks"], BLOCKS):
        assert b["bbox"] == list(box) and b["text"] == text and b["dropped"] is False
        left, top, right, bottom = pixel_box(box, W, H)
        assert b["box"] == {"left": left, "top": top, "right": right, "bottom": bottom}
    assert page["text"] == MARKDOWN and r.json()["document"] == MARKDOWN

    r = srv.post("/v1/ocr", {"document": doc(), "mode": "grounding", "drop_headers_footers": True}).json()
    assert r["pages"][0]["text"] == NO_FURNITURE
    assert [b["dropped"] for b in r["pages"][0]["blocks"]] == [True] + [False] * 6 + [True]
    r = srv.post("/v1/ocr", {"document": doc(), "mode": "grounding", "drop_labels": ["caption", "image"]}).json()
    assert "Figure 1" not in r["pages"][0]["text"] and "bar chart" not in r["pages"][0]["text"]


def test_mistral_request_on_lightonocr3_crops_the_image_block(srv):
    body = {"model": NAME, "include_image_base64": True,
            "document": {"type": "image_url", "image_url": "data:image/png;base64," + doc()}}
    r = srv.post("/v1/ocr", body)
    assert r.status_code == 200, r.text
    page = r.json()["pages"][0]
    assert page["markdown"] == MARKDOWN.replace("A bar chart of revenue by region.", "![img-0.jpeg](img-0.jpeg)")
    [im] = page["images"]
    left, top, right, bottom = pixel_box(BLOCKS[4][1], W, H)
    assert (im["id"], im["top_left_x"], im["top_left_y"], im["bottom_right_x"], im["bottom_right_y"]) == (
        "img-0.jpeg", left, top, right, bottom)
    crop = decode(data_url_bytes(im["image_base64"], "image/jpeg"))
    assert crop.size == (right - left, bottom - top)
    assert mean_abs_diff(crop, decode(PNG).convert("RGB").crop((left, top, right, bottom))) < 8


def test_locr_ocr_grounding_writes_markdown_blocks_and_the_figure(tmp_path, model3, forced_file):
    src = tmp_path / "report.png"
    src.write_bytes(PNG)
    out = tmp_path / "out"
    p = subprocess.run([locr_bin(), "ocr", str(src), "-o", str(out), "--model", str(model3), "--threads", "1",
                        "--max-model-len", "2048", "--debug-forced-output", "@" + str(forced_file), "--mode", "grounding",
                        "--drop-headers-footers"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    md = (out / "report" / "page-0001.md").read_text()
    assert md == NO_FURNITURE.replace("A bar chart of revenue by region.", "![page-0001-img-1.png](page-0001-img-1.png)") + "\n"
    blocks = json.loads((out / "report" / "page-0001.blocks.json").read_text())
    assert (blocks["width"], blocks["height"]) == (W, H)
    assert [b["label"] for b in blocks["blocks"]] == [label.rstrip("+") for label, _, _ in BLOCKS]
    assert [b["dropped"] for b in blocks["blocks"]] == [True] + [False] * 6 + [True]
    left, top, right, bottom = pixel_box(BLOCKS[4][1], W, H)
    crop = decode((out / "report" / "page-0001-img-1.png").read_bytes())
    assert crop.size == (right - left, bottom - top)
    assert crop.convert("RGB").tobytes() == decode(PNG).convert("RGB").crop((left, top, right, bottom)).tobytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["mode"] == "grounding" and manifest["options"]["drop_headers_footers"] is True


def test_an_async_grounding_job_answers_the_same_blocks(srv):
    """A grounding request as an async job (/v1/ocr/jobs): its result carries the same blocks and
    Markdown as the synchronous answer, and the Mistral shape's image on LightOnOCR-3 too."""
    import time
    for body in ({"document": doc(), "mode": "grounding", "drop_headers_footers": True},
                 {"model": NAME, "document": {"type": "image_url", "image_url": "data:image/png;base64," + doc()}}):
        sync = srv.post("/v1/ocr", body).json()
        r = srv.post("/v1/ocr/jobs", body)
        assert r.status_code == 202, r.text
        jid = r.json()["id"]
        deadline = time.time() + 60
        while srv.get(f"/v1/ocr/jobs/{jid}").json()["status"] not in ("succeeded", "failed") and time.time() < deadline:
            time.sleep(0.02)
        got = srv.get(f"/v1/ocr/jobs/{jid}/result").json()
        want, page = sync["pages"][0], got["pages"][0]
        if "blocks" in want:
            assert page["blocks"] == want["blocks"] and page["text"] == NO_FURNITURE
        else:
            assert page["markdown"] == want["markdown"] and page["images"] == want["images"] and want["images"]


def test_plain_text_output_keeps_the_blocks_and_matches_locr_ocr(srv, tmp_path, model3, forced_file):
    """Post-processing applies to each block's text after the markers are read: plain text output
    (`output: "text"`, `locr ocr --format txt`) keeps every block and box (plain text would turn a
    marker into its label), and `locr ocr` writes the page the server answers."""
    r = srv.post("/v1/ocr", {"document": doc(), "mode": "grounding", "output": "text"})
    assert r.status_code == 200, r.text
    page = r.json()["pages"][0]
    assert [(b["label"], b["bbox"]) for b in page["blocks"]] == [(label.rstrip("+"), list(box)) for label, box, _ in BLOCKS]
    title = page["blocks"][1]["text"]
    assert title == "Revenue"  # the heading mark is gone: post-processed
    assert "![" not in page["text"] and "# Revenue" not in page["text"] and "Revenue grew in every" in page["text"]
    src = tmp_path / "report.png"
    src.write_bytes(PNG)
    out = tmp_path / "out"
    p = subprocess.run([locr_bin(), "ocr", str(src), "-o", str(out), "--model", str(model3), "--threads", "1",
                        "--max-model-len", "2048", "--debug-forced-output", "@" + str(forced_file), "--mode", "grounding",
                        "--format", "txt", "--no-figures"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    files = sorted((out / "report").glob("page-0001.*"))
    text_file = [f for f in files if f.suffix in (".txt", ".md")][0]
    assert text_file.read_text() == page["text"] + "\n"
    blocks = json.loads((out / "report" / "page-0001.blocks.json").read_text())
    assert [b["text"] for b in blocks["blocks"]] == [b["text"] for b in page["blocks"]]
