"""The web UI at `/`, driven in a real headless Chromium (Debian's chromium + chromium-driver, through
Selenium) against a real `locr serve` on loopback with the tiny model: upload a two-page PDF, watch
its progress, see both pages, download the Markdown, a broken file's error, cancelling, the API key,
--root-path, --no-ui, rendering (tables, math, boxes, hostile HTML) and a narrow screen.

Screenshots go to $LOCR_ARTIFACT_DIR/ui (CTest: build/artifacts/ui).
"""
import base64
import json
import os
import shutil
import struct
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
import requests

from conftest import NAME, Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_pdf, make_text_pdf  # noqa: E402

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(os.environ.get("LOCR_ARTIFACT_DIR", tempfile.gettempdir())) / "ui"

webdriver = pytest.importorskip("selenium.webdriver")
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("chromium and chromium-driver are not installed (scripts/install-deps.sh installs them)",
                allow_module_level=True)
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

DPI = "72"  # the test PDFs' 144x180 pt pages at 144x180 px: a few dozen image tokens


def browser(download_dir=None, width=1280, height=1000):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              f"--window-size={width},{height}", "--no-first-run", "--disable-extensions",
              "--disable-background-networking", "--disable-component-update"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if download_dir:
        opts.add_experimental_option("prefs", {"download.default_directory": str(download_dir),
                                               "download.prompt_for_download": False})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    d = webdriver.Chrome(options=opts, service=service)
    d.set_page_load_timeout(60)
    d.set_script_timeout(60)
    return d


def wait(d, cond, timeout=120, what="condition"):
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.05).until(lambda _: cond())
    except Exception as e:
        shot(d, "timeout")
        raise AssertionError(f"timed out waiting for {what}") from e


def shot(d, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    d.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def severe_console_errors(d):
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def choose(d, *paths):
    d.find_element(By.ID, "files").send_keys("\n".join(str(p) for p in paths))


def start_ocr(d, path, max_tokens=None, grounding=False):
    """Chooses `path`, sets max tokens, the test PDFs' dpi and grounding, and starts."""
    choose(d, path)
    if max_tokens:
        d.find_element(By.ID, "opt-max-tokens").send_keys(str(max_tokens))
        d.find_element(By.ID, "opt-dpi").send_keys(DPI)
    if grounding:
        d.find_element(By.ID, "opt-grounding").click()
    d.find_element(By.ID, "start").click()


def doc_state(d, i=0):
    docs = d.find_elements(By.CSS_SELECTOR, "#docs .doc")
    return docs[i].get_attribute("data-state") if len(docs) > i else None


# Records every progress text and page state the page shows, so a test can check what was seen
# while the document ran and not only the end.
RECORDER = """
window.__seen = [];
new MutationObserver(() => {
  for (const el of document.querySelectorAll('.doc-stats, .page-state')) {
    const t = el.textContent;
    if (t && !window.__seen.includes(t)) window.__seen.push(t);
  }
}).observe(document.getElementById('docs'), {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(scope="module")
def srv():
    s = Server("--served-model-name", NAME, "--max-model-len", "16384")
    yield s
    assert s.stop() == 0


def test_two_page_pdf_progress_pages_and_download(tmp_path):
    pdf = tmp_path / "two-pages.pdf"
    pdf.write_bytes(make_pdf(2))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    # Every page runs to max_tokens (a forced output longer than that), so that each takes long
    # enough for progress events whatever the random model would write (it may stop after a few
    # hundred tokens, too soon to see a page running).
    forced = tmp_path / "forced.txt"
    forced.write_text("".join(f"Line {i} of a long page.\n" for i in range(600)))
    srv = Server("--served-model-name", NAME, "--max-model-len", "16384", "--debug-forced-output", f"@{forced}")
    d = browser(downloads)
    try:
        d.get(srv.url + "/")
        wait(d, lambda: "cpu" in d.find_element(By.ID, "st-device").text, 30, "the device in the status strip")
        wait(d, lambda: d.find_element(By.ID, "st-model").text == NAME, 30, "the model name")
        wait(d, lambda: d.find_element(By.ID, "st-kv").text.endswith("%"), 30, "the KV cache use from /metrics")
        assert d.find_element(By.ID, "st-running").text.isdigit()
        d.execute_script(RECORDER)
        choose(d, pdf)
        assert "two-pages.pdf" in d.find_element(By.ID, "chosen").text
        # Long enough (~1 s a page here) for progress events (every 250 ms) to come while it runs.
        d.find_element(By.ID, "opt-max-tokens").send_keys("3000")
        d.find_element(By.ID, "opt-dpi").send_keys(DPI)
        d.find_element(By.ID, "opt-temperature").send_keys("0")
        d.find_element(By.ID, "start").click()
        wait(d, lambda: doc_state(d) == "done", 240, "the document to finish")
        shot(d, "two-page-pdf-done")
        seen = d.execute_script("return window.__seen")
        # Progress was shown while it ran: page counts out of 2, and running pages' token counts.
        assert any("/ 2 pages" in t and "tokens/s" in t for t in seen), seen
        assert any(t.endswith(" tokens") and t.split()[0].isdigit() for t in seen), seen
        pages = d.find_elements(By.CSS_SELECTOR, "#docs .page")
        assert [p.get_attribute("data-page") for p in pages] == ["1", "2"]
        assert all(p.get_attribute("data-state") == "done" for p in pages)

        # The same document through the API (greedy, as the UI sends it): the page shows its text.
        ref = requests.post(srv.url + "/v1/ocr", files={"file": ("a.pdf", pdf.read_bytes())},
                            data={"max_tokens": "3000", "dpi": DPI, "temperature": "0"}, timeout=240).json()
        for p, r in zip(pages, ref["pages"]):
            raw = p.find_element(By.CSS_SELECTOR, ".raw").get_attribute("textContent")
            assert raw == r["text"] and raw.strip()
            assert p.find_element(By.CSS_SELECTOR, ".rendered").get_attribute("innerHTML").strip()
            img = p.find_element(By.CSS_SELECTOR, ".image-frame img")
            assert d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == \
                r["dimensions"]["width"]
        # Raw/rendered toggle.
        toggle = pages[0].find_element(By.CSS_SELECTOR, ".toggle")
        toggle.click()
        assert pages[0].find_element(By.CSS_SELECTOR, ".raw").is_displayed()
        assert not pages[0].find_element(By.CSS_SELECTOR, ".rendered").is_displayed()
        assert toggle.get_attribute("aria-pressed") == "true"

        d.find_element(By.CSS_SELECTOR, "#docs .doc .dl-md").click()
        target = downloads / "two-pages.md"
        wait(d, lambda: target.exists() and target.stat().st_size > 0, 30, "the download")
        assert target.read_bytes().decode() == ref["document"] + "\n"  # bytes: no newline translation
        d.find_element(By.CSS_SELECTOR, "#docs .doc .dl-json").click()
        jtarget = downloads / "two-pages.json"
        wait(d, lambda: jtarget.exists() and jtarget.stat().st_size > 0, 30, "the JSON download")
        j = json.loads(jtarget.read_text())
        assert [p["text"] for p in j["pages"]] == [p["text"] for p in ref["pages"]]
        assert j["document"] == ref["document"]
        assert severe_console_errors(d) == []
    finally:
        d.quit()
        assert srv.stop() == 0


def test_text_layer_pdf_shows_its_drafts(srv, tmp_path):
    """A PDF with a text layer is decoded with drafts from it (speculative decoding): each page shows
    how many drafted tokens were accepted, as /v1/ocr reports them; a scan shows nothing of the kind."""
    pdf = tmp_path / "letter.pdf"
    pdf.write_bytes(make_text_pdf([["Invoice 2026-001", "Total: 42.00 EUR", "Thank you."], ["Page two text"]]))
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(make_pdf(1))
    d = browser()
    try:
        d.get(srv.url + "/")
        d.find_element(By.ID, "opt-temperature").send_keys("0")  # greedy, as the reference below
        start_ocr(d, pdf, 40)
        wait(d, lambda: doc_state(d) == "done", 120, "the text-layer document")
        ref = requests.post(srv.url + "/v1/ocr", files={"file": ("a.pdf", pdf.read_bytes())},
                            data={"max_tokens": "40", "dpi": DPI, "temperature": "0"}, timeout=120).json()
        pages = d.find_elements(By.CSS_SELECTOR, "#docs .page")
        assert len(pages) == 2
        for p, r in zip(pages, ref["pages"]):
            sp = r["speculative"]
            assert sp["drafted"] > 0
            badge = p.find_element(By.CSS_SELECTOR, ".page-drafts")
            assert badge.is_displayed()
            assert badge.text == f"drafts {sp['accepted']} / {sp['drafted']} accepted", badge.text
        shot(d, "text-layer-drafts")
        start_ocr(d, scan)  # the fields keep 40 tokens, the dpi and greedy
        find_scan = "return [...window.locrApp.state.docs].find(x => x.file.name === 'scan.pdf')"
        wait(d, lambda: d.execute_script(find_scan + "?.el.dataset.state") == "done", 120, "the scan")
        assert d.execute_script(find_scan + ".el.querySelector('.page .page-drafts').hidden") is True
        assert severe_console_errors(d) == []
    finally:
        d.quit()


def test_broken_file_shows_the_servers_message(srv, tmp_path):
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(make_pdf(2)[:70])  # a truncated PDF
    d = browser()
    try:
        d.get(srv.url + "/")
        start_ocr(d, bad)
        wait(d, lambda: doc_state(d) == "error", 60, "the error")
        err = d.find_element(By.CSS_SELECTOR, "#docs .doc .doc-error")
        assert err.is_displayed()
        assert err.text.startswith("cannot open the document"), err.text
        shot(d, "broken-file")
        # The page keeps working: a good file after a bad one, here in grounding mode.
        pdf = tmp_path / "ok.pdf"
        pdf.write_bytes(make_pdf(1))
        start_ocr(d, pdf, 8, grounding=True)
        wait(d, lambda: doc_state(d, 0) == "done", 120, "the good file")
        prompt = d.execute_script("return [...window.locrApp.state.docs].find(x => x.file.name === 'ok.pdf')"
                                  ".summary.usage.prompt_tokens")
        ref = requests.post(srv.url + "/v1/ocr", files={"file": ("ok.pdf", pdf.read_bytes())},
                            data={"max_tokens": "8", "dpi": DPI, "mode": "grounding"}, timeout=120).json()
        assert prompt == ref["usage"]["prompt_tokens"]
    finally:
        d.quit()


def test_cancel_stops_the_documents_pages_on_the_server(srv, tmp_path):
    pdf = tmp_path / "long.pdf"
    pdf.write_bytes(make_pdf(2))
    before = srv.metrics().get("locr:client_disconnects_total", 0)
    d = browser()
    try:
        d.get(srv.url + "/")
        d.execute_script(RECORDER)
        # ignore_eos is not a UI option: the tiny random model runs to max_tokens only if it never
        # writes EOS, so the request is sent long enough to be running when cancelled either way.
        start_ocr(d, pdf, 12000)
        wait(d, lambda: srv.metrics()["vllm:num_requests_running"] >= 1, 60, "pages running on the server")
        d.find_element(By.CSS_SELECTOR, "#docs .doc .cancel").click()
        wait(d, lambda: doc_state(d) == "cancelled", 30, "the document to show cancelled")
        # The server dropped the pages: nothing runs, and it counted the disconnect.
        wait(d, lambda: srv.metrics()["vllm:num_requests_running"] == 0, 30, "the server to stop the pages")
        assert srv.metrics()["locr:client_disconnects_total"] >= before + 1
        states = [p.get_attribute("data-state") for p in d.find_elements(By.CSS_SELECTOR, "#docs .page")]
        assert "cancelled" in states, states
        shot(d, "cancelled")
    finally:
        d.quit()


def test_api_key_is_asked_once_and_kept_for_the_session(tmp_path):
    s = Server("--served-model-name", NAME, "--max-model-len", "4096", "--api-key", "sesame")
    d = browser()
    try:
        d.get(s.url + "/")  # the page itself needs no key
        wait(d, lambda: d.find_element(By.ID, "st-model").text == "API key needed", 30, "the key notice")
        pdf = tmp_path / "k.pdf"
        pdf.write_bytes(make_pdf(1))
        start_ocr(d, pdf, 4)
        wait(d, lambda: d.find_element(By.ID, "key-dialog").get_attribute("open") is not None, 30, "the key dialog")
        d.find_element(By.ID, "key-input").send_keys("sesame")
        d.find_element(By.ID, "key-ok").click()
        wait(d, lambda: doc_state(d) == "done", 120, "the document with the key")
        assert d.execute_script("return sessionStorage.getItem('locr.apiKey')") == "sesame"
        # A second document goes through without asking again.
        start_ocr(d, pdf)
        wait(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#docs .doc")) == 2 and doc_state(d, 0) == "done",
             120, "the second document")
        assert d.find_element(By.ID, "key-dialog").get_attribute("open") is None
    finally:
        d.quit()
        assert s.stop() == 0


def test_root_path_and_no_ui(tmp_path):
    s = Server("--served-model-name", NAME, "--max-model-len", "4096", "--root-path", "/ocr/")
    d = browser()
    try:
        # Both kinds of proxy: one that strips the prefix and one that keeps it.
        for path in ("/v1/models", "/ocr/v1/models", "/version", "/ocr/version"):
            assert requests.get(s.url + path, timeout=10).status_code == 200, path
        assert requests.get(s.url + "/ocrx/version", timeout=10).status_code == 404
        # A proxy that keeps the prefix: the page, its assets and the API all resolve under /ocr.
        d.get(s.url + "/ocr/")
        assert d.execute_script("return document.baseURI").endswith("/ocr/")
        wait(d, lambda: "cpu" in d.find_element(By.ID, "st-device").text, 30, "the status strip under /ocr")
        pdf = tmp_path / "r.pdf"
        pdf.write_bytes(make_pdf(1))
        start_ocr(d, pdf, 4)
        wait(d, lambda: doc_state(d) == "done", 120, "the document under /ocr")
        assert severe_console_errors(d) == []
    finally:
        d.quit()
        assert s.stop() == 0
    off = Server("--served-model-name", NAME, "--max-model-len", "512", "--no-ui")
    try:
        r = requests.get(off.url + "/", timeout=10)
        assert r.status_code == 404 and r.json()["error"]["code"] == 404
        assert requests.get(off.url + "/ui/app.js", timeout=10).status_code == 404
    finally:
        assert off.stop() == 0


def png_data_url(w=30, h=20):
    """A small white PNG written by hand (no imaging library needed)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff" * (3 * w) for _ in range(h))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode()


def test_rendering_tables_math_boxes_and_hostile_html(srv):
    d = browser()
    try:
        d.get(srv.url + "/")
        text = ("# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<table><tr><td>x</td></tr></table>\n\n"
                "Euler: $e^{i\\pi} + 1 = 0$ and $$\\int_0^1 x\\,dx$$\n\n"
                "![image](image_1.png)100,200,500,600\n\n"
                "<img src=x onerror=\"window.__xss=1\"><script>window.__xss=2</script>"
                "[link](javascript:window.__xss=3)")
        d.execute_script("""
          const doc = new window.locrApp.Doc(new File(['x'], 'synthetic.pdf'), {boxes: true});
          doc.onPage({page: 1, index: 0, text: arguments[0], finish_reason: 'stop', confidence: {score: 0.9731, mean_logprob: -0.0273,
                                     min_logprob: -1.2, tokens: 10, tokens_below_threshold: 2, threshold: 0.5},
                      usage: {completion_tokens: 10}, timings: {total_s: 1.5},
                      dimensions: {width: 30, height: 20}, image: arguments[1]});
        """, text, png_data_url())
        page = d.find_element(By.CSS_SELECTOR, "#docs .page")
        rendered = page.find_element(By.CSS_SELECTOR, ".rendered")
        assert rendered.find_element(By.TAG_NAME, "h1").text == "Title"
        assert len(rendered.find_elements(By.TAG_NAME, "table")) == 2
        assert len(rendered.find_elements(By.CSS_SELECTOR, ".katex")) == 2
        assert len(rendered.find_elements(By.CSS_SELECTOR, ".katex-display")) == 1
        assert rendered.find_elements(By.TAG_NAME, "script") == []
        assert rendered.find_elements(By.TAG_NAME, "img") == []
        for a in rendered.find_elements(By.TAG_NAME, "a"):
            assert not (a.get_attribute("href") or "").startswith("javascript:")
        assert d.execute_script("return window.__xss") is None
        # The figure box: drawn over the page image at its 0..1000 coordinates, numbered in the text.
        boxes = page.find_elements(By.CSS_SELECTOR, ".image-frame .box")
        assert len(boxes) == 1
        style = boxes[0].get_attribute("style")
        assert "left: 10%" in style and "top: 20%" in style and "width: 40%" in style and "height: 40%" in style
        assert rendered.find_element(By.CSS_SELECTOR, ".box-ref").text == "image 1"
        assert page.find_element(By.CSS_SELECTOR, ".page-confidence").text == "confidence 97.3 % · 2 uncertain token(s)"
        shot(d, "rendering")
    finally:
        d.quit()


def test_narrow_screen_and_labels(srv, tmp_path):
    d = browser(width=390, height=844)
    try:
        d.get(srv.url + "/")
        pdf = tmp_path / "n.pdf"
        pdf.write_bytes(make_pdf(1))
        start_ocr(d, pdf, 16)
        wait(d, lambda: doc_state(d) == "done", 120, "the document")
        cols = d.execute_script(
            "return getComputedStyle(document.querySelector('.page-body')).gridTemplateColumns.split(' ').length")
        assert cols == 1
        assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        # Every form control is labelled; every button says what it does.
        unlabelled = d.execute_script("""
          return [...document.querySelectorAll('input, select')].filter(e =>
            !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).map(e => e.id);""")
        assert unlabelled == []
        assert d.execute_script(
            "return [...document.querySelectorAll('button')].every(b => b.textContent.trim().length > 0)")
        # The file picker is reachable by keyboard: Tab from the top lands on controls, among them it.
        reached = set()
        for _ in range(12):
            ActionChains(d).send_keys(Keys.TAB).perform()
            reached.add(d.switch_to.active_element.get_attribute("id"))
        assert "files" in reached, reached
        shot(d, "narrow")
    finally:
        d.quit()
