#!/usr/bin/env python3
"""Load check (not a test): N concurrent streaming chat clients against `locr serve` on loopback.

Starts its own server with the tiny fixture model (or uses --url), runs every client once, and
reports completions, errors, wall time, tokens/s, TTFT percentiles and the server's peak RSS.
Bounded: every client makes one request; the run stops by itself.

  .venv/bin/python tests/server/load_test.py --clients 256 --max-tokens 64
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import IMAGES, MODEL, NAME, Server, data_url  # noqa: E402


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_client(url, i, args, out):
    content = f"Client {i}: please write a long answer about page {i}."
    if args.image and i % 4 == 0:
        content = [{"type": "image_url", "image_url": {"url": args.image_url}}, {"type": "text", "text": content}]
    body = {"model": NAME, "messages": [{"role": "user", "content": content}], "max_tokens": args.max_tokens,
            "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.2, "ignore_eos": True}
    t0 = time.perf_counter()
    rec = {"ok": False, "ttft": None, "tokens": 0}
    try:
        with requests.post(url + "/v1/chat/completions", json=body, stream=True, timeout=args.timeout) as r:
            if r.status_code != 200:
                rec["error"] = f"HTTP {r.status_code}: {r.text[:200]}"
            else:
                done = False
                for line in r.iter_lines():
                    if not line:
                        continue
                    data = line[len(b"data: "):]
                    if data == b"[DONE]":
                        done = True
                        break
                    chunk = json.loads(data)
                    if rec["ttft"] is None and chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                        rec["ttft"] = time.perf_counter() - t0
                    if chunk.get("usage"):
                        rec["tokens"] = chunk["usage"]["completion_tokens"]
                rec["ok"] = done
                if not done:
                    rec["error"] = "stream ended without [DONE]"
    except Exception as e:  # noqa: BLE001 - a load check counts every failure
        rec["error"] = repr(e)
    rec["latency"] = time.perf_counter() - t0
    out[i] = rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--max-num-seqs", type=int, default=32)
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--url", help="use a running server instead of starting one (no RSS then)")
    ap.add_argument("--image", action="store_true", help="every 4th client sends a page image")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    args.image_url = data_url(IMAGES / "page_small.png")

    server = None
    url = args.url
    if not url:
        server = Server("--served-model-name", NAME, "--max-model-len", "4096", "--max-num-seqs",
                        str(args.max_num_seqs), "--disable-log-requests", model=args.model)
        url = server.url
    results = [None] * args.clients
    threads = [threading.Thread(target=one_client, args=(url, i, args, results)) for i in range(args.clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    report = {"clients": args.clients, "max_tokens": args.max_tokens, "max_num_seqs": args.max_num_seqs}
    ok = [r for r in results if r["ok"]]
    report["completed"] = len(ok)
    report["errors"] = len(results) - len(ok)
    report["wall_s"] = round(wall, 2)
    report["generated_tokens"] = sum(r["tokens"] for r in ok)
    report["tokens_per_s"] = round(report["generated_tokens"] / wall, 1)
    ttfts = sorted(r["ttft"] for r in ok if r["ttft"] is not None)
    if ttfts:
        report["ttft_s"] = {"median": round(statistics.median(ttfts), 3), "p99": round(ttfts[int(0.99 * (len(ttfts) - 1))], 3)}
    lat = sorted(r["latency"] for r in ok)
    if lat:
        report["latency_s"] = {"median": round(statistics.median(lat), 3), "max": round(lat[-1], 3)}
    errors = [r["error"] for r in results if not r["ok"]]
    if errors:
        report["first_errors"] = errors[:5]
    if server:
        report["server_peak_rss_mib"] = round(peak_rss_mib(server.proc.pid), 1)
        m = server.metrics()
        report["server_metrics"] = {k: m[k] for k in ["vllm:generation_tokens_total", "vllm:num_preemptions_total",
                                                       "vllm:num_requests_running"]}
        report["server_exit_code"] = server.stop()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in report.items():
            print(f"{k:>22}: {v}")
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
