#!/usr/bin/env python3
"""`locr ocr` over a folder with two images and a two-page PDF: in-process (--model), reruns
under the same and under other options, an interrupted run resumed (killed once its manifest
recorded a page), and --server against a real `locr serve`. Checks page files, document files,
the manifest, and that the three ways agree.

Usage: ocr_test.py LOCR_BIN MODEL_DIR IMAGES_DIR [--pdf required|optional]. With `required` (CTest
passes it when the build has Poppler) a binary that cannot render the PDF fails the test; with
`optional` (a build without Poppler) the PDF is left out.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_pdf, make_text_pdf  # noqa: E402
from serve_process import start_locr_serve  # noqa: E402

failures = []
MAX_TOKENS = "24"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def page_files(out: Path):
    return sorted(str(p.relative_to(out)) for p in out.glob("*/page-*"))


def texts(out: Path):
    return {f: (out / f).read_text() for f in page_files(out)}


def main() -> int:
    locr, model, images = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    pdf_required = "--pdf" in sys.argv and sys.argv[sys.argv.index("--pdf") + 1] == "required"
    work = Path(tempfile.mkdtemp(prefix="locr-ocr-test-"))
    try:
        inputs = work / "in"
        inputs.mkdir()
        shutil.copy(images / "page_small.png", inputs / "alpha.png")
        shutil.copy(images / "page_portrait.png", inputs / "beta.png")
        (inputs / "notes.txt").write_text("not a document")  # ignored: not a document extension
        (inputs / "doc.pdf").write_bytes(make_pdf(2))
        probe = subprocess.run([locr, "ocr", str(inputs / "doc.pdf"), "-o", str(work / "probe"), "--model", model,
                                "--max-tokens", "1", "--dpi", "36", "--threads", "1"], capture_output=True, text=True,
                               timeout=300)
        have_pdf = "Poppler" not in probe.stderr
        if pdf_required and (not have_pdf or probe.returncode != 0):
            print(f"FAIL this build should render PDFs (Poppler) but `locr ocr doc.pdf` says: {probe.stderr[-400:]}")
            return 1
        if not have_pdf:
            print("note: built without Poppler; the PDF is left out")
            (inputs / "doc.pdf").unlink()
        expected = ["alpha/page-0001.md", "beta/page-0001.md"] + (
            ["doc/page-0001.md", "doc/page-0002.md"] if have_pdf else [])
        n_pages = len(expected)
        common = ["--max-tokens", MAX_TOKENS, "--temperature", "0", "--dpi", "36"]

        # 1. In-process.
        out1 = work / "out1"
        p = subprocess.run([locr, "ocr", str(inputs), "-o", str(out1), "--model", model, "--threads", "1", *common],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"--model run succeeds (rc={p.returncode}) {p.stderr[-500:]}")
        check(page_files(out1) == expected, f"page files {page_files(out1)}")
        for name in ["alpha", "beta"] + (["doc"] if have_pdf else []):
            check((out1 / f"{name}.md").is_file(), f"document file {name}.md")
        if have_pdf:
            doc = (out1 / "doc.md").read_text()
            pages = [(out1 / f"doc/page-000{i}.md").read_text().rstrip("\n ") for i in (1, 2)]
            check(doc == "\n\n".join(pages) + "\n", "doc.md joins its pages with a blank line")
        m = json.loads((out1 / "manifest.json").read_text())
        check(m["pages_total"] == n_pages and m["pages_done"] == n_pages and m["pages_failed"] == 0,
              f"manifest counts {m['pages_total']}/{m['pages_done']}/{m['pages_failed']}")
        check(len(m["documents"]) == n_pages - (1 if have_pdf else 0), "manifest lists every document")
        check(all(pg["status"] == "ok" and pg["completion_tokens"] > 0 for d in m["documents"] for pg in d["pages"]),
              "manifest pages ok with token counts")
        check(m["backend"].startswith("model:"), "manifest names the backend")
        # The random model writes no figure boxes; every page has its confidence over its tokens.
        check(all(pg["figures"] == [] for d in m["documents"] for pg in d["pages"]), "no figures recorded")
        check(all(pg["confidence"]["tokens"] == pg["completion_tokens"] and pg["confidence"]["threshold"] == 0.5
                  and pg["confidence"]["min_logprob"] <= pg["confidence"]["mean_logprob"] < 0
                  and 0 <= pg["confidence"]["tokens_below_threshold"] <= pg["confidence"]["tokens"]
                  for d in m["documents"] for pg in d["pages"]), "every page has its confidence")
        confidence1 = {(d["source"], pg["page"]): pg["confidence"] for d in m["documents"] for pg in d["pages"]}
        check(all("speculative" not in pg for d in m["documents"] for pg in d["pages"]),
              "pages without a text layer (images, a scanned PDF) are decoded without drafts")
        ref = texts(out1)

        # 1b. A PDF with a text layer: drafts from it by default (speculative decoding), the pages'
        # drafted and accepted counts in the manifest; --no-text-drafts gives the same text without.
        drafted_texts = None
        if have_pdf:
            tin = work / "text-in"
            tin.mkdir()
            (tin / "letter.pdf").write_bytes(make_text_pdf([["Invoice 2026-001", "Total: 42.00 EUR", "Thank you."],
                                                            ["Page two text", "More lines"]]))
            runs = {}
            for flag in ("--text-drafts", "--no-text-drafts"):
                out = work / ("drafts" + flag)
                p = subprocess.run([locr, "ocr", str(tin), "-o", str(out), "--model", model, "--threads", "1",
                                    *common, flag], capture_output=True, text=True, timeout=300)
                check(p.returncode == 0, f"{flag} run succeeds (rc={p.returncode}) {p.stderr[-300:]}")
                runs[flag] = (texts(out), [pg for d in json.loads((out / "manifest.json").read_text())["documents"]
                                           for pg in d["pages"]])
            on, off = runs["--text-drafts"], runs["--no-text-drafts"]
            drafted_texts = on[0]
            check(on[0] == off[0] and len(on[0]) == 2, "text-layer drafts leave every page's text as it is")
            check(len(on[1]) == 2 and all(pg["speculative"]["drafted"] > 0
                                          and 0 <= pg["speculative"]["accepted"] <= pg["speculative"]["drafted"]
                                          for pg in on[1]), f"the manifest counts drafts per page: {on[1]}")
            check(all("speculative" not in pg for pg in off[1]), "--no-text-drafts decodes without drafts")

        # Rerun: nothing left to do, everything skipped, same files.
        p = subprocess.run([locr, "ocr", str(inputs), "-o", str(out1), "--model", model, *common],
                           capture_output=True, text=True, timeout=300)
        m = json.loads((out1 / "manifest.json").read_text())
        # pages_done counts the pages that are done, those an earlier run did included (a rerun with
        # nothing left to do once reported 0); the rate is of this run's pages only.
        check(p.returncode == 0 and m["pages_skipped"] == n_pages and m["pages_done"] == n_pages,
              f"rerun skips every page and counts them done ({m['pages_skipped']} skipped, {m['pages_done']} done)")
        check(m["pages_failed"] == 0 and m["pages_per_s"] == 0, f"and ran none of them ({m['pages_per_s']} pages/s)")
        check(texts(out1) == ref, "rerun leaves the page files as they were")
        check(m["complete"] is True and all(pg["status"] == "skipped" and pg["completion_tokens"] > 0
                                            and pg["finish_reason"] in ("stop", "length")
                                            for d in m["documents"] for pg in d["pages"]),
              "skipped pages keep their tokens and finish_reason in the manifest")
        check({(d["source"], pg["page"]): pg["confidence"] for d in m["documents"] for pg in d["pages"]} == confidence1,
              "and their confidence")

        # Rerun with other options: every page is redone under them, none kept from the first run.
        p = subprocess.run([locr, "ocr", str(inputs), "-o", str(out1), "--model", model,
                            *[x if x != MAX_TOKENS else "3" for x in common]],
                           capture_output=True, text=True, timeout=300)
        m = json.loads((out1 / "manifest.json").read_text())
        check(p.returncode == 0 and m["pages_skipped"] == 0 and m["pages_done"] == n_pages,
              f"a rerun with another --max-tokens redoes every page ({m['pages_skipped']} skipped)")
        check("options differ" in p.stderr and "max_tokens" in p.stderr, "and says why: " + p.stderr[-300:])
        check(all(0 < pg["completion_tokens"] <= 3 for d in m["documents"] for pg in d["pages"]),
              "every page now has at most 3 tokens")
        check(m["options"]["max_tokens"] == "3", "the manifest records the options of the run")
        p = subprocess.run([locr, "ocr", str(inputs), "-o", str(out1), "--model", model, "--format", "json",
                            *[x if x != MAX_TOKENS else "3" for x in common]],
                           capture_output=True, text=True, timeout=300)
        m = json.loads((out1 / "manifest.json").read_text())
        check(p.returncode == 0 and m["pages_skipped"] == 0 and m["pages_done"] == n_pages,
              "a rerun with another --format redoes every page")
        check(all((out1 / pg["file"]).suffix == ".json" and json.loads((out1 / pg["file"]).read_text())["page"]
                  for d in m["documents"] for pg in d["pages"]), "and writes its page files in that format")

        # 2. Kill after the first page file appears, then resume. Twenty copies of one image (and the
        # PDF) on the slow scalar backend, one page at a time, so the kill lands mid-run.
        many = work / "many"
        many.mkdir()
        for i in range(20):
            shutil.copy(images / "page_small.png", many / f"p{i:02d}.png")
        if have_pdf:
            shutil.copy(inputs / "doc.pdf", many / "doc.pdf")
        expected2 = sorted([f"p{i:02d}/page-0001.md" for i in range(20)] +
                           (["doc/page-0001.md", "doc/page-0002.md"] if have_pdf else []))
        slow = ["--model", model, "--threads", "1", "--backend", "ref", "--concurrency", "1", *common]
        out2 = work / "out2"
        proc = subprocess.Popen([locr, "ocr", str(many), "-o", str(out2), *slow],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def recorded_ok():
            """Pages the manifest of the running process records done (it is replaced atomically)."""
            try:
                man = json.loads((out2 / "manifest.json").read_text())
            except (OSError, ValueError):
                return None, []
            return man, [(d["source"], pg) for d in man["documents"] for pg in d["pages"] if pg["status"] == "ok"]

        deadline = time.time() + 300
        while time.time() < deadline and not recorded_ok()[1] and proc.poll() is None:
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        first = page_files(out2)
        killed, before = recorded_ok()
        print(f"note: killed with {len(first)} of {len(expected2)} page file(s) written, {len(before)} recorded")
        check(1 <= len(first) < len(expected2), "the first run was killed after writing some but not all pages")
        check(killed is not None and killed["complete"] is False and killed["pages_total"] == len(expected2),
              "the killed run left a valid manifest, marked incomplete")
        check(len(before) >= 1 and all((out2 / pg["file"]).is_file() and pg["completion_tokens"] > 0 for _, pg in before),
              "its pages recorded done have their files and token counts")
        p = subprocess.run([locr, "ocr", str(many), "-o", str(out2), *slow], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"resumed run succeeds (rc={p.returncode}) {p.stderr[-500:]}")
        check(page_files(out2) == expected2, f"every page exactly once after resuming: {page_files(out2)}")
        check(not list(out2.glob("**/*.tmp")), "no temporary files left")
        m = json.loads((out2 / "manifest.json").read_text())
        check(m["pages_skipped"] == len(before) and m["pages_done"] == len(expected2),
              f"resume skipped {m['pages_skipped']} (recorded {len(before)}), {m['pages_done']} done in all")
        after = {(d["source"], pg["page"]): pg for d in m["documents"] for pg in d["pages"]}
        check(all(after[(src, pg["page"])]["status"] == "skipped"
                  and after[(src, pg["page"])]["completion_tokens"] == pg["completion_tokens"]
                  and after[(src, pg["page"])]["finish_reason"] == pg["finish_reason"] for src, pg in before),
              "pages done before the kill keep their tokens and finish_reason after the resume")
        check(m["complete"] is True and all(pg["status"] in ("ok", "skipped") for pg in after.values()),
              "the resumed manifest is complete")
        t2 = texts(out2)
        check(len({t2[f"p{i:02d}/page-0001.md"] for i in range(20)}) == 1,
              "pages written before and after the kill are identical (same image, greedy)")
        check(all((out2 / f"p{i:02d}.md").is_file() for i in range(20)), "every document file written")

        # 3. --server against locr serve.
        try:
            srv, base = start_locr_serve(locr, [model])
        except RuntimeError as e:
            print(e)
            return 1
        try:
            out3 = work / "out3"
            globbed = [str(inputs / "*.png")] + ([str(inputs / "doc.pdf")] if have_pdf else [])
            p = subprocess.run([locr, "ocr", *globbed, "-o", str(out3), "--server", base, "--concurrency", "3", *common],
                               capture_output=True, text=True, timeout=600)
            check(p.returncode == 0, f"--server run succeeds (rc={p.returncode}) {p.stderr[-500:]}")
            check(page_files(out3) == expected, f"--server page files {page_files(out3)}")
            check(texts(out3) == ref, "--server output equals the in-process output (greedy)")
            if have_pdf:
                # The text-layer PDF: its pages' text goes along as vllm_xargs.draft_text, the server
                # drafts from it (its spec_decode counters grow) and the pages are the same.
                def drafted_total():
                    m = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
                    return sum(float(line.split()[-1]) for line in m.splitlines()
                               if line.startswith("vllm:spec_decode_num_draft_tokens_total"))
                before = drafted_total()
                out7 = work / "out7"
                p = subprocess.run([locr, "ocr", str(work / "text-in"), "-o", str(out7), "--server", base, *common],
                                   capture_output=True, text=True, timeout=300)
                check(p.returncode == 0 and texts(out7) == drafted_texts,
                      f"--server on a text-layer PDF gives the in-process pages (rc={p.returncode}) {p.stderr[-300:]}")
                check(drafted_total() > before, "and the server drafted from the text layer it was sent")
            m = json.loads((out3 / "manifest.json").read_text())
            check(m["pages_done"] == n_pages and m["backend"] == "server:" + base, "--server manifest")
            conf3 = {(d["source"].replace(str(inputs), ""), pg["page"]): pg["confidence"]
                     for d in m["documents"] for pg in d["pages"]}
            conf1 = {(k[0].replace(str(inputs), ""), k[1]): v for k, v in confidence1.items()}
            check(all(conf3[k]["tokens"] == conf1[k]["tokens"]
                      and abs(conf3[k]["mean_logprob"] - conf1[k]["mean_logprob"]) < 0.05 for k in conf1),
                  "--server confidence (from the chat logprobs) agrees with the in-process one")
            # A failing server: every page fails after its retries, exit code 1, failures listed.
            out4 = work / "out4"
            p = subprocess.run([locr, "ocr", str(inputs / "alpha.png"), "-o", str(out4), "--server", base,
                                "--model-name", "nope", "--retries", "1"], capture_output=True, text=True, timeout=120)
            m = json.loads((out4 / "manifest.json").read_text())
            check(p.returncode == 1 and m["pages_failed"] == 1 and len(m["failures"]) == 1, "failed pages reported")
            check(m["documents"][0]["pages"][0]["attempts"] == 2, "failed page retried --retries times")
            check(not page_files(out4), "no page file for a failed page")
            # A rerun under other options whose page fails leaves neither the earlier page file nor
            # the earlier document file: nothing on disk mixes two settings.
            out6 = work / "out6"
            p = subprocess.run([locr, "ocr", str(inputs / "alpha.png"), "-o", str(out6), "--server", base, *common],
                               capture_output=True, text=True, timeout=120)
            check(p.returncode == 0 and (out6 / "alpha.md").is_file(), "a first run into out6")
            p = subprocess.run([locr, "ocr", str(inputs / "alpha.png"), "-o", str(out6), "--server", base,
                                "--model-name", "nope", "--retries", "0"], capture_output=True, text=True, timeout=120)
            m = json.loads((out6 / "manifest.json").read_text())
            check(p.returncode == 1 and m["pages_failed"] == 1 and not page_files(out6)
                  and not (out6 / "alpha.md").exists(), "a failed redo removes the stale page and document files")
            # A document that cannot be opened: reported, the others still done, exit code 1.
            bad = work / "bad"
            bad.mkdir()
            (bad / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really")
            shutil.copy(images / "page_small.png", bad / "ok.png")
            out5 = work / "out5"
            p = subprocess.run([locr, "ocr", str(bad), "-o", str(out5), "--server", base, "--max-tokens", "2"],
                               capture_output=True, text=True, timeout=120)
            m = json.loads((out5 / "manifest.json").read_text())
            check(p.returncode == 1 and m["documents_failed"] == 1 and m["pages_done"] == 1,
                  f"unreadable document reported (rc={p.returncode}, {m['documents_failed']}, {m['pages_done']})")
            check((out5 / "ok" / "page-0001.md").is_file(), "the readable document is still done")
        finally:
            srv.send_signal(signal.SIGTERM)
            try:
                srv.wait(30)
            except subprocess.TimeoutExpired:
                srv.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("FAILED:" if failures else "all ok", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
