"""CORS from a real browser: headless Chromium loads a page from another origin (a second loopback
port) whose script calls `locr serve` with fetch(), JSON body and an Authorization header, so the
browser sends its own preflight first. Allowed by default (as vLLM); refused by the browser when
--allowed-origins does not list the page's origin."""
import http.server
import json
import shutil
import threading
import time

import pytest

from conftest import NAME, Server

webdriver = pytest.importorskip("selenium.webdriver")
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("chromium and chromium-driver are not installed (scripts/install-deps.sh installs them)",
                allow_module_level=True)

PAGE = b"<!doctype html><html><body>cross-origin client</body></html>"

CALL = """
const [url, done] = arguments;
fetch(url + "/v1/chat/completions", {
  method: "POST",
  headers: {"Content-Type": "application/json", "Authorization": "Bearer sk-browser", "X-Client": "test"},
  body: JSON.stringify({model: "%s", messages: [{role: "user", content: "hi"}], max_tokens: 2, temperature: 0})
}).then(r => r.json().then(j => done({status: r.status, body: j})))
  .catch(e => done({error: String(e)}));
""" % NAME


@pytest.fixture(scope="module")
def page_origin():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
              "--disable-extensions", "--disable-background-networking", "--disable-component-update"):
        opts.add_argument(a)
    d = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    d.set_script_timeout(60)
    yield d
    d.quit()


def call_from(browser, page, server):
    browser.get(page + "/")
    return browser.execute_async_script(CALL, server.url)


def test_browser_preflight_passes_by_default(browser, page_origin):
    s = Server("--served-model-name", NAME, "--api-key", "sk-browser", "--max-model-len", "256")
    try:
        r = call_from(browser, page_origin, s)
        assert "error" not in r, r
        assert r["status"] == 200 and r["body"]["object"] == "chat.completion"
        # The browser handed the response to the script: its CORS check passed.
        assert '"OPTIONS /v1/chat/completions" 200' in s.log  # the browser's own preflight
    finally:
        assert s.stop() == 0


def test_browser_is_refused_an_origin_not_listed(browser, page_origin):
    s = Server("--served-model-name", NAME, "--max-model-len", "256",
               "--allowed-origins", json.dumps(["https://elsewhere.example"]))
    try:
        r = call_from(browser, page_origin, s)
        assert "error" in r and "Failed to fetch" in r["error"], r
        # The server's access line reaches s.log through its reader thread, a moment after the reply.
        deadline = time.time() + 10
        while '"OPTIONS /v1/chat/completions" 400' not in s.log and time.time() < deadline:
            time.sleep(0.05)
        assert '"OPTIONS /v1/chat/completions" 400' in s.log
        assert '"POST /v1/chat/completions"' not in s.log  # the browser never sent the request itself
    finally:
        assert s.stop() == 0
    s = Server("--served-model-name", NAME, "--max-model-len", "256", "--allowed-origins", json.dumps([page_origin]))
    try:
        r = call_from(browser, page_origin, s)
        assert r.get("status") == 200 and r["body"]["object"] == "chat.completion", r
    finally:
        assert s.stop() == 0
