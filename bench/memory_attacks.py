#!/usr/bin/env python3
"""Peak server memory under hostile requests (a benchmark, not a test: it prints a table).

For each attack, starts a fresh `locr serve` on the tiny fixture model, records its idle RSS, resets
the kernel's peak-RSS counter (/proc/PID/clear_refs, "5"), sends the request(s) and reads VmHWM: the
column is peak RSS above idle in MiB, next to the HTTP status the attack got. Attacks: a
13000x13000 greyscale PNG (about 165 KB) in one chat request, four of them in one request, the same
four through /tokenize, 100,000 prompts to /v1/completions, a 40-page A4 PDF to /v1/ocr, a
10,000-page TIFF with pages=1, N concurrent requests with one 13000x13000 image each, and the same
with a 7000x7000 image (49 MP, which the default limits accept).

  .venv/bin/python bench/memory_attacks.py [--bin build/bin/locr] [--concurrent 8] [-- extra serve flags]
"""
import argparse
import base64
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "common"))
from hostile_media import big_png, many_page_tiff  # noqa: E402
from minimal_pdf import make_pdf  # noqa: E402

MODEL = ROOT / "tests" / "fixtures" / "models" / "tiny_a"


def status_kib(pid, key):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


class Server:
    def __init__(self, binary, flags):
        self.proc = subprocess.Popen([binary, "serve", str(MODEL), "--port", "0", "--host", "127.0.0.1", "--served-model-name",
                                      "lightonocr-2-1b", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        self.port = None
        ready = threading.Event()

        def reader():
            for line in self.proc.stdout:
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=reader, daemon=True).start()
        if not ready.wait(60) or self.port is None:
            raise RuntimeError("locr serve did not start")
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(600):
            try:
                if requests.get(self.url + "/health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.05)

    def rss_mib(self):
        return status_kib(self.proc.pid, "VmRSS") / 1024

    def reset_peak(self):
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")

    def peak_mib(self):
        return status_kib(self.proc.pid, "VmHWM") / 1024

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def data_url(png):
    return "data:image/png;base64," + base64.b64encode(png).decode()


def chat_body(urls, max_tokens=1):
    content = [{"type": "image_url", "image_url": {"url": u}} for u in urls] + [{"type": "text", "text": "OCR"}]
    return {"model": "lightonocr-2-1b", "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
            "temperature": 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin" / "locr"))
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("flags", nargs="*", help="extra `locr serve` flags (after --)")
    a = ap.parse_args()

    png = big_png(13000, 13000)
    url = data_url(png)
    mid = data_url(big_png(7000, 7000))  # 49 MP: within the default --max-request-image-pixels
    pdf = make_pdf(40, 595, 842)
    tiff = many_page_tiff(10000)
    attacks = [
        ("chat, one 13000x13000 PNG (%d KB)" % (len(png) // 1000), [("/v1/chat/completions", chat_body([url]))]),
        ("chat, four 13000x13000 PNGs", [("/v1/chat/completions", chat_body([url] * 4))]),
        ("/tokenize, four 13000x13000 PNGs",
         [("/tokenize", {"model": "lightonocr-2-1b", "messages": chat_body([url] * 4)["messages"]})]),
        ("/v1/completions, 100,000 prompts",
         [("/v1/completions", {"model": "lightonocr-2-1b", "prompt": ["a"] * 100000, "max_tokens": 1})]),
        ("/v1/ocr, 40-page A4 PDF (%d KB)" % (len(pdf) // 1000),
         [("/v1/ocr", {"model": "lightonocr-2-1b", "document": base64.b64encode(pdf).decode(), "max_tokens": 1})]),
        ("/v1/ocr, 10,000-page TIFF, pages=1",
         [("/v1/ocr", {"model": "lightonocr-2-1b", "document": base64.b64encode(tiff).decode(), "pages": "1",
                       "max_tokens": 1})]),
        ("%d concurrent chats, one 13000x13000 PNG each" % a.concurrent,
         [("/v1/chat/completions", chat_body([url]))] * a.concurrent),
        ("chat, one 7000x7000 PNG", [("/v1/chat/completions", chat_body([mid]))]),
        ("%d concurrent chats, one 7000x7000 PNG each" % a.concurrent,
         [("/v1/chat/completions", chat_body([mid]))] * a.concurrent),
    ]
    rows = []
    for name, reqs in attacks:
        srv = Server(a.bin, a.flags)  # a fresh server per attack: nothing an earlier one kept counts
        try:
            time.sleep(0.5)
            idle = srv.rss_mib()
            srv.reset_peak()
            t0 = time.time()

            def send(pr):
                try:
                    r = requests.post(srv.url + pr[0], json=pr[1], timeout=600)
                    return r.status_code
                except requests.RequestException as e:
                    return type(e).__name__

            with ThreadPoolExecutor(len(reqs)) as ex:
                statuses = list(ex.map(send, reqs))
            peak = srv.peak_mib()
            secs = time.time() - t0
        finally:
            srv.stop()
        codes = ",".join(sorted({str(s) for s in statuses}))
        rows.append({"attack": name, "status": codes, "peak_above_idle_mib": round(peak - idle),
                     "idle_rss_mib": round(idle), "seconds": round(secs, 1)})
        print(f"| {name} | {codes} | {peak - idle:.0f} | {secs:.1f} |", flush=True)
    print("\n| attack | HTTP status | peak RSS above idle (MiB) | seconds |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['attack']} | {r['status']} | {r['peak_above_idle_mib']} | {r['seconds']} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
