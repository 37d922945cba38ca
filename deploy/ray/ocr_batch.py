#!/usr/bin/env python3
"""Batch OCR of a folder of PDFs across several `locr serve` replicas with Ray Data.

    python deploy/ray/ocr_batch.py --input /data/pdfs --output /data/ocr \\
        --replica http://10.0.0.11:8000 --replica http://10.0.0.12:8000

Pipeline (ray.data, streaming, so memory stays bounded however many pages there are):
  1. the PDF paths under --input (recursively) become a dataset;
  2. flat_map: each PDF's page count (pypdf reads only the page tree) -> one row per page;
  3. map_batches on a pool of actors: each page goes to POST /v1/ocr of one replica as the whole
     document with `pages: "N"`: locr renders and OCRs that page. Replicas are picked round
     robin, skipping any that failed recently; a failed attempt (connection error, timeout, 5xx,
     503 while a replica drains) is retried on the next replica, up to --retries times, with a
     short backoff. A page that still fails is written with its `error` (and the job exits 1);
  4. rows are written as Parquet (default) or JSONL files under --output.
Every page is one output row: document, page, text, finish_reason, replica, attempts, tokens,
seconds, error. Progress: Ray Data's progress report, and a summary line at the end.

The input folder must be readable from every Ray worker (a shared file system); the replicas
are plain HTTP endpoints (a Kubernetes Service, haproxy, or each replica listed).
"""
import argparse
import itertools
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("--input", required=True, help="folder of PDFs (searched recursively for *.pdf)")
    p.add_argument("--output", required=True, help="output folder (created; Ray writes one file per block)")
    p.add_argument("--replica", action="append", required=True, metavar="URL",
                   help="base URL of a locr serve replica, e.g. http://127.0.0.1:8000 (repeat for each)")
    p.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    p.add_argument("--model", default=None, help="`model` of each request (default: the server's)")
    p.add_argument("--api-key", default=os.environ.get("VLLM_API_KEY"), help="bearer key (default $VLLM_API_KEY)")
    p.add_argument("--dpi", type=int, default=None, help="PDF rendering resolution (default: locr's, 1540 px)")
    p.add_argument("--max-tokens", type=int, default=None, help="per page (default: locr's)")
    p.add_argument("--output-mode", choices=("markdown", "text"), default="markdown", help="/v1/ocr `output`")
    p.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                   help="another /v1/ocr field, e.g. tables_to_markdown=true, temperature=0 (repeatable)")
    p.add_argument("--retries", type=int, default=4, help="attempts per page beyond the first (default 4)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per request (default 600)")
    p.add_argument("--actors", type=int, default=2, help="actors sending pages (default 2)")
    p.add_argument("--in-flight", type=int, default=16,
                   help="pages each actor keeps in flight; a replica batches them (default 16)")
    p.add_argument("--batch-size", type=int, default=32, help="pages per Ray Data batch (default 32)")
    p.add_argument("--ray-address", default=None, help="ray.init address (default: a new local cluster)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a new local cluster")
    return p.parse_args(argv)


def pdf_pages(row):
    """One row per page of the PDF at row['path']."""
    import pypdf
    path = row["path"]
    try:
        n = len(pypdf.PdfReader(path).pages)
    except Exception as e:  # a damaged PDF is reported, not fatal to the job
        return [{"document": path, "page": 0, "page_count": 0, "open_error": f"cannot read page count: {e}"}]
    return [{"document": path, "page": i + 1, "page_count": n, "open_error": ""} for i in range(n)]


class PageOcr:
    """A Ray actor sending pages to the replicas (round robin, failover, retries)."""

    def __init__(self, replicas, options, retries, timeout, in_flight, api_key):
        import requests
        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=len(replicas), pool_maxsize=in_flight)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.replicas = list(replicas)
        self.order = itertools.cycle(random.sample(range(len(self.replicas)), len(self.replicas)))
        self.down_until = [0.0] * len(self.replicas)
        self.options, self.retries, self.timeout = options, retries, timeout
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.pool = ThreadPoolExecutor(in_flight)
        self.docs = {}

    def _pick(self):
        now = time.monotonic()
        for _ in range(len(self.replicas)):
            i = next(self.order)
            if self.down_until[i] <= now:
                return i
        return min(range(len(self.replicas)), key=lambda k: self.down_until[k])

    def _document(self, path):
        import base64
        if path not in self.docs:
            if len(self.docs) > 8:
                self.docs.clear()
            self.docs[path] = base64.b64encode(Path(path).read_bytes()).decode()
        return self.docs[path]

    def _one(self, row):
        out = {"document": row["document"], "page": int(row["page"]), "text": "", "finish_reason": "",
               "replica": "", "attempts": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
               "error": row["open_error"]}
        if out["error"]:
            return out
        body = dict(self.options, document=self._document(row["document"]), pages=str(out["page"]))
        t0 = time.monotonic()
        for attempt in range(self.retries + 1):
            i = self._pick()
            out["attempts"], out["replica"] = attempt + 1, self.replicas[i]
            try:
                r = self.session.post(self.replicas[i] + "/v1/ocr", json=body, headers=self.headers,
                                      timeout=self.timeout)
                if r.status_code == 200:
                    (page,) = r.json()["pages"]
                    usage = page.get("usage", {})
                    out.update(text=page["text"], finish_reason=page["finish_reason"],
                               prompt_tokens=usage.get("prompt_tokens", 0),
                               completion_tokens=usage.get("completion_tokens", 0),
                               error=page.get("error", "") or "")
                    break
                out["error"] = f"HTTP {r.status_code}: {r.text[:300]}"
                if r.status_code < 500:  # the request itself is wrong: another replica says the same
                    break
            except Exception as e:  # connection refused/reset, timeout: the replica is gone or stuck
                out["error"] = f"{type(e).__name__}: {e}"[:300]
            self.down_until[i] = time.monotonic() + 5.0
            time.sleep(min(2.0, 0.1 * 2 ** attempt))
        out["seconds"] = time.monotonic() - t0
        return out

    def __call__(self, batch):
        rows = [dict(zip(batch.keys(), values)) for values in zip(*batch.values())]
        done = list(self.pool.map(self._one, rows))
        return {k: [d[k] for d in done] for k in done[0]} if done else {}


def run(args):
    import ray

    paths = sorted(str(p) for p in Path(args.input).rglob("*.pdf"))
    if not paths:
        print(f"no *.pdf under {args.input}", file=sys.stderr)
        return 2
    options = {"output": args.output_mode}
    if args.model:
        options["model"] = args.model
    if args.dpi:
        options["dpi"] = args.dpi
    if args.max_tokens:
        options["max_tokens"] = args.max_tokens
    for kv in args.option:
        key, sep, value = kv.partition("=")
        if not sep:
            print(f"--option {kv!r}: expected KEY=JSON", file=sys.stderr)
            return 2
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    replicas = [u.rstrip("/") for u in args.replica]

    if __name__ != "__main__":  # imported (e.g. by a test): ship this module's code to the workers
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if not ray.is_initialized():
        init = {"address": args.ray_address} if args.ray_address else {
            "num_cpus": args.num_cpus, "include_dashboard": False}
        ray.init(**init)
    t0 = time.time()
    ds = ray.data.from_items([{"path": p} for p in paths])
    pages = ds.flat_map(pdf_pages)
    results = pages.map_batches(
        PageOcr, batch_size=args.batch_size, compute=ray.data.ActorPoolStrategy(size=args.actors),
        num_cpus=0.5, batch_format="numpy",
        fn_constructor_kwargs={"replicas": replicas, "options": options, "retries": args.retries,
                               "timeout": args.timeout, "in_flight": args.in_flight, "api_key": args.api_key})
    results = results.materialize()
    if args.format == "parquet":
        results.write_parquet(args.output)
    else:
        results.write_json(args.output)
    seconds = time.time() - t0
    n = results.count()
    failed = sum(1 for r in results.select_columns(["error"]).iter_rows() if r["error"])
    summary = {"documents": len(paths), "pages": n, "failed_pages": failed, "seconds": round(seconds, 2),
               "pages_per_second": round(n / seconds, 3) if seconds else None, "replicas": len(replicas),
               "output": args.output}
    print("ocr_batch: " + json.dumps(summary), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run(parse_args()))
