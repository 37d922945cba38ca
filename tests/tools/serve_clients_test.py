#!/usr/bin/env python3
"""`locr chat --mode api` and `locr bench` against a real `locr serve` on a fixture model.

Usage: serve_clients_test.py LOCR_BIN MODEL_DIR IMAGE. The server binary is $LOCR_SERVE_BIN if set,
else LOCR_BIN. A server that does not start (or a binary without `serve`) fails the test: it is
never skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from serve_process import start_locr_serve  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def main() -> int:
    locr, model, image = sys.argv[1], sys.argv[2], sys.argv[3]
    serve_bin = os.environ.get("LOCR_SERVE_BIN", locr)
    h = subprocess.run([serve_bin, "serve", "--help"], capture_output=True, text=True)
    if h.returncode != 0:
        print(f"FAIL `{serve_bin} serve --help` exits {h.returncode}: {h.stderr[-300:]}")
        return 1
    try:
        srv, base = start_locr_serve(serve_bin, ["--model", model], wait_s=30)
    except RuntimeError as e:
        print(e)
        return 1
    try:
        # chat --mode api: streamed text, system prompt, image as a data: URL.
        p = subprocess.run([locr, "chat", "--mode", "api", "--url", base + "/v1/chat/completions", "--model-name",
                            "lightonocr-2-1b", "--prompt", "Hello, how are you?", "--system", "Be brief.", "--image", image,
                            "--max-tokens", "8", "--temperature", "0"], capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and p.stdout.strip() != "", f"chat --mode api streams text (rc={p.returncode}) {p.stderr[-300:]}")
        check("completion_tokens=8" in p.stderr, "chat api reports usage (8 completion tokens)")
        p = subprocess.run([locr, "chat", "--mode", "api", "--url", base + "/v1/chat/completions", "--model-name", "nope",
                            "--prompt", "x"], capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and "HTTP 4" in p.stderr, "chat api reports server errors")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "bench.json")
            p = subprocess.run([locr, "bench", "--url", base + "/v1/completions", "--model", "lightonocr-2-1b", "--max-tokens", "8",
                                "--input-len", "16", "--latency-iters", "2", "--throughput-requests", "4",
                                "--throughput-concurrency", "2", "--ignore-eos", "--json", out, "--no-progress"],
                               capture_output=True, text=True, timeout=300)
            check(p.returncode == 0, f"bench (text) exits 0 {p.stderr[-300:]}")
            check("Mean TTFT (ms):" in p.stdout and "P99 ITL (ms):" in p.stdout, "bench prints the vLLM fields")
            j = json.load(open(out))
            t = j["throughput"]
            check(t["completed"] == 4 and t["failed"] == 0, "throughput phase: 4 completed")
            check(t["total_output_tokens"] == 32, f"ignore_eos gives exactly 8 tokens per request ({t['total_output_tokens']})")
            for k in ("duration", "total_input_tokens", "request_throughput", "output_throughput", "total_token_throughput",
                      "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "p99_e2el_ms"):
                check(k in t, f"json field {k}")
            check(j["latency"]["completed"] == 2, "latency phase: 2 completed")
            p = subprocess.run([locr, "bench", "--url", base + "/v1/chat/completions", "--max-tokens", "4", "--latency-iters", "0",
                                "--throughput-requests", "3", "--request-rate", "50", "--image-size", "280x392",
                                "--json", out, "--no-progress"], capture_output=True, text=True, timeout=300)
            check(p.returncode == 0, f"bench (OCR pages, Poisson) exits 0 {p.stderr[-300:]}")
            j = json.load(open(out))
            check(j["throughput"]["completed"] == 3 and j["throughput"]["pages_per_second"] > 0, "pages/s reported")
            check(j["model_id"] == "lightonocr-2-1b", "model name from GET /v1/models")
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
    print("FAILED: %d checks" % len(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
