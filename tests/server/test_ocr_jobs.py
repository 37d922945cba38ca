"""Async OCR jobs (/v1/ocr/jobs) on a real `locr serve`: a job's result is what /v1/ocr answers for
the same body (both shapes), streamed or fetched; cancel, delete, list; the bounds (--max-jobs,
--max-jobs-bytes, --job-ttl); ownership under --api-key; bad ids; and a server killed mid-job and
restarted on the same --jobs-dir that resumes the job without redoing the pages it had finished."""
import base64
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import IMAGES, NAME, Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_pdf  # noqa: E402

PNG = (IMAGES / "page_small.png").read_bytes()
SLOW = 2.0 if os.environ.get("LOCR_SANITIZER") else 1.0


def b64(data):
    return base64.b64encode(data).decode()


def wait_for(cond, timeout=60, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


def wait_status(s, jid, statuses=("succeeded", "failed", "cancelled"), timeout=120, headers=None):
    def done():
        j = s.get(f"/v1/ocr/jobs/{jid}", headers=headers).json()
        return j if j["status"] in statuses else None
    j = wait_for(done, timeout)
    assert j, s.get(f"/v1/ocr/jobs/{jid}", headers=headers).text
    return j


def sse(resp):
    text = resp.content.decode()
    events = [e for e in text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events), text[:500]
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: "):]) for e in events[:-1]]


def strip_run(doc):
    """A locr-shaped result without what differs between two runs of the same request."""
    doc = dict(doc)
    for k in ("id", "created"):
        doc.pop(k)
    doc["pages"] = [{k: v for k, v in p.items() if k != "timings"} for p in doc["pages"]]
    return doc


@pytest.fixture(scope="module")
def srv():
    s = Server("--served-model-name", NAME, "--max-model-len", "8192", "--ocr-pages-in-flight", "1")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def pdf(srv):
    r = srv.post("/v1/ocr", {"document": b64(make_pdf(1)), "dpi": 36, "max_tokens": 2})
    if r.status_code == 400 and "Poppler" in r.text:
        if os.environ.get("LOCR_EXPECT_POPPLER") == "1":
            pytest.fail("this build has Poppler but cannot render a PDF: " + r.text)
        return None
    return make_pdf


def document(pdf, pages):
    """A `pages`-page PDF, or the PNG (one page) in a build without Poppler."""
    return (b64(pdf(pages)), pages) if pdf else (b64(PNG), 1)


def submit(s, body, headers=None):
    r = s.post("/v1/ocr/jobs", body, headers=headers)
    assert r.status_code == 202, r.text
    j = r.json()
    assert r.headers["Location"] == "/v1/ocr/jobs/" + j["id"]
    return j


def test_result_is_the_synchronous_answer(srv, pdf):
    doc, n = document(pdf, 3)
    body = {"document": doc, "dpi": 36, "temperature": 0, "max_tokens": 40, "ignore_eos": True,
            "page_separator": "---", "output": "json"}
    j = submit(srv, body)
    assert j["object"] == "ocr.job" and j["id"].startswith("ocrjob-") and j["shape"] == "locr"
    assert j["status"] in ("queued", "running") and j["model"] == NAME
    assert j["pages_total"] == n and [p["page"] for p in j["pages"]] == list(range(1, n + 1))
    done = wait_status(srv, j["id"])
    assert done["status"] == "succeeded" and done["pages_done"] == n and done["runs"] == 1
    assert all(p["state"] == "done" and p["completion_tokens"] == 40 and p["run"] == 1 for p in done["pages"])
    assert done["finished_at"] >= done["started_at"] > 0 and done["expires_at"] == pytest.approx(done["finished_at"] + 86400)
    r = srv.get(f"/v1/ocr/jobs/{j['id']}/result")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    got = r.json()
    want = srv.post("/v1/ocr", body).json()
    assert got["id"] == j["id"] and got["object"] == "ocr.document"
    assert got["document"] == want["document"]
    assert ("---" in got["document"]) == (n > 1)
    assert [p["text"] for p in got["pages"]] == [p["text"] for p in want["pages"]]
    assert strip_run(got) == strip_run(want)


def test_mistral_shape_result_is_the_synchronous_answer(srv, pdf):
    doc, n = document(pdf, 2)
    mime = "application/pdf" if pdf else "image/png"
    kind = "document_url" if pdf else "image_url"
    body = {"model": NAME, "document": {"type": kind, kind: f"data:{mime};base64,{doc}"}, "temperature": 0,
            "max_tokens": 12, "confidence_scores_granularity": "page", "dpi": 36}
    j = submit(srv, body)
    assert j["shape"] == "mistral" and j["pages_total"] == n
    assert wait_status(srv, j["id"])["status"] == "succeeded"
    got = srv.get(f"/v1/ocr/jobs/{j['id']}/result").json()
    want = srv.post("/v1/ocr", body).json()
    assert set(got) == {"pages", "model", "usage_info", "document_annotation"}
    assert got == want  # Mistral's shape carries no id, time or timing: all of it is equal
    models = pytest.importorskip("mistralai.client.models")
    parsed = models.OCRResponse.model_validate(got)  # what the mistralai SDK makes of it
    assert [p.index for p in parsed.pages] == list(range(n)) and parsed.model == NAME


def test_multipart_submission(srv):
    r = requests.post(srv.url + "/v1/ocr/jobs", files={"file": ("page.png", PNG, "image/png")},
                      data={"max_tokens": "5", "temperature": "0"}, timeout=60)
    assert r.status_code == 202, r.text
    jid = r.json()["id"]
    assert wait_status(srv, jid)["status"] == "succeeded"
    got = srv.get(f"/v1/ocr/jobs/{jid}/result").json()
    want = srv.post("/v1/ocr", {"document": b64(PNG), "max_tokens": 5, "temperature": 0}).json()
    assert got["document"] == want["document"]


@pytest.mark.parametrize("body", [
    {"document": "not base64!"},
    {"max_tokens": 3},
    {"document": b64(b"just text, no document")},
    {"document": b64(PNG), "pages": "2"},
    {"document": b64(PNG), "output": "html"},
    {"document": b64(PNG), "model": "nope"},
    {"document": b64(PNG), "max_tokens": 9000},
    {"document": b64(PNG), "min_tokens": 50, "max_tokens": 10},
    {"document": {"type": "video_url", "video_url": "x"}},
    {"document": {"type": "image_url", "image_url": "data:image/png;base64," + b64(PNG)}, "pages": [3]},
])
def test_bad_requests_are_refused_at_submission_as_v1_ocr_refuses_them(srv, body):
    want = srv.post("/v1/ocr", body)
    got = srv.post("/v1/ocr/jobs", body)
    assert 400 <= want.status_code < 500, want.text
    assert got.status_code == want.status_code, got.text
    assert got.json()["error"] == want.json()["error"]


def test_stream_is_refused_at_submission(srv):
    r = srv.post("/v1/ocr/jobs", {"document": b64(PNG), "stream": True})
    assert r.status_code == 400 and r.json()["error"]["param"] == "stream"
    assert "result?stream=true" in r.json()["error"]["message"]


def test_stream_result_while_running_and_after(srv, pdf):
    doc, n = document(pdf, 3)
    body = {"document": doc, "dpi": 36, "temperature": 0, "max_tokens": int(600 * SLOW), "ignore_eos": True}
    j = submit(srv, body)
    r = srv.get(f"/v1/ocr/jobs/{j['id']}/result", params={"stream": "true"}, timeout=120)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    events = sse(r)
    pages, summary = events[:-1], events[-1]
    assert [e["page"] for e in pages] == list(range(1, n + 1))
    assert all(e["object"] == "ocr.page" and e["id"] == j["id"] for e in pages)
    assert summary["object"] == "ocr.document" and "pages" not in summary
    result = srv.get(f"/v1/ocr/jobs/{j['id']}/result").json()
    assert summary["document"] == result["document"]
    assert [e["text"] for e in pages] == [p["text"] for p in result["pages"]]
    assert [e["timings"] for e in pages] == [p["timings"] for p in result["pages"]]
    # Afterwards (Accept: text/event-stream): every page at once, then the summary.
    again = sse(srv.get(f"/v1/ocr/jobs/{j['id']}/result", headers={"Accept": "text/event-stream"}))
    assert again == events
    assert srv.get(f"/v1/ocr/jobs/{j['id']}/result", params={"stream": "maybe"}).status_code == 400


def test_cancel_running_and_queued_jobs(srv, pdf):
    doc, n = document(pdf, 2)
    long = {"document": doc, "dpi": 36, "temperature": 0, "max_tokens": 6000, "ignore_eos": True}
    a = submit(srv, long)
    b = submit(srv, long)  # --max-running-jobs 1: waits behind a
    assert wait_for(lambda: srv.get(f"/v1/ocr/jobs/{a['id']}").json()["status"] == "running")
    assert srv.get(f"/v1/ocr/jobs/{b['id']}").json()["status"] == "queued"
    r = srv.get(f"/v1/ocr/jobs/{a['id']}/result")
    assert r.status_code == 409 and r.json()["error"]["type"] == "ConflictError"
    assert "running" in r.json()["error"]["message"]
    cb = srv.post(f"/v1/ocr/jobs/{b['id']}/cancel")
    assert cb.status_code == 200 and cb.json()["status"] == "cancelled" and cb.json()["runs"] == 0
    ca = srv.post(f"/v1/ocr/jobs/{a['id']}/cancel")
    assert ca.status_code == 200 and ca.json()["status"] == "cancelled", ca.text
    assert wait_for(lambda: srv.metrics()["vllm:num_requests_running"] == 0, 10)
    r = srv.get(f"/v1/ocr/jobs/{a['id']}/result")
    assert r.status_code == 409 and "cancelled" in r.json()["error"]["message"]
    assert srv.post(f"/v1/ocr/jobs/{a['id']}/cancel").json()["status"] == "cancelled"  # again: as it is
    small = submit(srv, {"document": b64(PNG), "max_tokens": 2})
    assert wait_status(srv, small["id"])["status"] == "succeeded"
    r = srv.post(f"/v1/ocr/jobs/{small['id']}/cancel")
    assert r.status_code == 409 and "succeeded" in r.json()["error"]["message"]
    d = requests.delete(srv.url + f"/v1/ocr/jobs/{small['id']}", timeout=10)
    assert d.status_code == 200 and d.json() == {"id": small["id"], "object": "ocr.job.deleted", "deleted": True}
    assert srv.get(f"/v1/ocr/jobs/{small['id']}").status_code == 404
    assert requests.delete(srv.url + f"/v1/ocr/jobs/{small['id']}", timeout=10).status_code == 404


def test_delete_a_running_job_stops_it(srv):
    j = submit(srv, {"document": b64(PNG), "temperature": 0, "max_tokens": 6000, "ignore_eos": True})
    assert wait_for(lambda: srv.metrics()["vllm:num_requests_running"] == 1, 20)
    assert requests.delete(srv.url + f"/v1/ocr/jobs/{j['id']}", timeout=10).status_code == 200
    assert wait_for(lambda: srv.metrics()["vllm:num_requests_running"] == 0, 10)
    assert srv.get(f"/v1/ocr/jobs/{j['id']}").status_code == 404


def test_list_newest_first_with_limit_and_after(srv):
    ids = [submit(srv, {"document": b64(PNG), "max_tokens": 1})["id"] for _ in range(3)]
    started = [wait_status(srv, jid)["started_at"] for jid in ids]
    assert started == sorted(started)  # run in submission order
    page = srv.get("/v1/ocr/jobs", params={"limit": 2}).json()
    assert page["object"] == "list" and [j["id"] for j in page["data"]] == ids[::-1][:2]
    assert page["has_more"] and page["first_id"] == ids[2] and page["last_id"] == ids[1]
    rest = srv.get("/v1/ocr/jobs", params={"limit": 1, "after": page["last_id"]}).json()
    assert [j["id"] for j in rest["data"]] == [ids[0]]
    for bad in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"after": "ocrjob-" + "0" * 32}):
        r = srv.get("/v1/ocr/jobs", params=bad)
        assert r.status_code == 400, (bad, r.text)
    m = srv.metrics()
    assert m[f'locr:ocr_jobs{{model_name="{NAME}",status="succeeded"}}'] >= 3
    assert "# TYPE locr:ocr_jobs gauge" in srv.get("/metrics").text


@pytest.mark.parametrize("jid", [
    pytest.param("ocrjob-" + "0" * 32, id="unknown"),
    pytest.param("ocrjob-zz", id="malformed"),
    pytest.param("..", id="dotdot"),
    pytest.param("x" * 5000, id="long"),
    pytest.param("%2e%2e%2fx", id="encoded-traversal"),
    pytest.param("..%2F..%2Fetc", id="encoded-slashes"),
])
def test_unknown_and_bad_ids_are_404(srv, jid):
    for method, path in (("GET", ""), ("GET", "/result"), ("POST", "/cancel"), ("DELETE", "")):
        r = requests.request(method, srv.url + f"/v1/ocr/jobs/{jid}{path}", timeout=10)
        assert r.status_code == 404, (method, path, r.text)
        assert "error" in r.json()


def test_jobs_belong_to_the_key_that_submitted_them():
    s = Server("--served-model-name", NAME, "--api-key", "alice", "bob")
    try:
        alice, bob = {"Authorization": "Bearer alice"}, {"Authorization": "Bearer bob"}
        assert s.post("/v1/ocr/jobs", {"document": b64(PNG)}).status_code == 401
        j = submit(s, {"document": b64(PNG), "max_tokens": 2}, headers=alice)
        assert wait_status(s, j["id"], headers=alice)["status"] == "succeeded"
        assert s.get(f"/v1/ocr/jobs/{j['id']}/result", headers=alice).status_code == 200
        for method, path in (("GET", ""), ("GET", "/result"), ("POST", "/cancel"), ("DELETE", "")):
            r = requests.request(method, s.url + f"/v1/ocr/jobs/{j['id']}{path}", headers=bob, timeout=10)
            assert r.status_code == 404, (method, path, r.text)
            assert r.json()["error"]["type"] == "NotFoundError"
        assert requests.get(s.url + f"/v1/ocr/jobs/{j['id']}", timeout=10).status_code == 401
        assert s.get("/v1/ocr/jobs", headers=bob).json()["data"] == []
        assert [x["id"] for x in s.get("/v1/ocr/jobs", headers=alice).json()["data"]] == [j["id"]]
        # The job dir remembers a digest of the key, never the key.
        assert "alice" not in json.dumps(s.get(f"/v1/ocr/jobs/{j['id']}", headers=alice).json())
    finally:
        assert s.stop() == 0


def test_max_jobs_and_max_jobs_bytes():
    s = Server("--served-model-name", NAME, "--max-jobs", "2", "--max-jobs-bytes", str(2 * len(PNG) + 20000))
    try:
        body = {"document": b64(PNG), "max_tokens": 1}
        a, b = submit(s, body), submit(s, body)
        r = s.post("/v1/ocr/jobs", body)
        assert r.status_code == 429 and "--max-jobs)" in r.json()["error"]["message"], r.text
        wait_status(s, a["id"])
        assert requests.delete(s.url + f"/v1/ocr/jobs/{a['id']}", timeout=10).status_code == 200
        d = submit(s, body)  # room again
        big = s.post("/v1/ocr/jobs", {"document": b64(PNG * 4)})
        assert big.status_code == 413 and "--max-jobs-bytes" in big.json()["error"]["message"], big.text
        for j in (b, d):
            wait_status(s, j["id"])
            assert requests.delete(s.url + f"/v1/ocr/jobs/{j['id']}", timeout=10).status_code == 200
        c = submit(s, {"document": b64(PNG + PNG), "max_tokens": 1})  # fits alone
        r = s.post("/v1/ocr/jobs", body)  # not beside it
        assert r.status_code == 429 and "--max-jobs-bytes" in r.json()["error"]["message"], r.text
        wait_status(s, c["id"])
    finally:
        assert s.stop() == 0


def test_finished_jobs_expire_after_the_ttl(tmp_path):
    s = Server("--served-model-name", NAME, "--jobs-dir", str(tmp_path), "--job-ttl", "1")
    try:
        j = submit(s, {"document": b64(PNG), "max_tokens": 1})
        done = wait_status(s, j["id"])
        assert done["expires_at"] == pytest.approx(done["finished_at"] + 1)
        assert (tmp_path / j["id"] / "result.json").is_file()
        assert wait_for(lambda: s.get(f"/v1/ocr/jobs/{j['id']}").status_code == 404, 10)
        assert wait_for(lambda: not (tmp_path / j["id"]).exists(), 5)
    finally:
        assert s.stop() == 0


def test_without_jobs_dir_the_temporary_directory_goes_at_exit():
    s = Server("--served-model-name", NAME)
    try:
        j = submit(s, {"document": b64(PNG), "max_tokens": 1})
        wait_status(s, j["id"])
        tmp = Path(os.environ.get("TMPDIR") or "/tmp")
        mine = [d for d in tmp.glob("locr-jobs-*") if (d / j["id"]).is_dir()]
        assert len(mine) == 1
    finally:
        assert s.stop() == 0
    assert not mine[0].exists()


def page_record(jobs_dir, jid, i):
    return json.loads((jobs_dir / jid / "pages" / f"{i}.json").read_text())


def test_killed_mid_job_resumes_without_redoing_finished_pages(tmp_path, pdf):
    """SIGKILL after a page finished and before the others did; the restarted server (same
    --jobs-dir) finishes the job: every page exactly once, the pages finished before the kill not
    recomputed (their stored record, timings included, unchanged; their `run` 1, the others 2)."""
    if not pdf:
        pytest.skip("built without Poppler (a multi-page document needs it)")
    n, tokens = 4, int(2000 * SLOW)
    flags = ("--served-model-name", NAME, "--max-model-len", "8192", "--ocr-pages-in-flight", "1",
             "--jobs-dir", str(tmp_path))
    body = {"document": b64(make_pdf(n)), "dpi": 36, "temperature": 0, "max_tokens": tokens, "ignore_eos": True}
    s = Server(*flags)
    j = submit(s, body)
    jid = j["id"]
    seen = wait_for(lambda: (lambda x: x if x["pages_done"] >= 1 else None)(s.get(f"/v1/ocr/jobs/{jid}").json()),
                    120, step=0.005)
    s.proc.kill()
    s.proc.wait(10)
    assert seen and seen["pages_done"] < n, seen
    before = {i: page_record(tmp_path, jid, i) for i in range(n) if (tmp_path / jid / "pages" / f"{i}.json").exists()}
    assert 1 <= len(before) < n, sorted(before)
    assert all(r["run"] == 1 for r in before.values())

    s2 = Server(*flags)
    try:
        assert "to run" in s2.log
        done = wait_status(s2, jid, timeout=300)
        assert done["status"] == "succeeded" and done["runs"] == 2, done
        assert done["pages_done"] == n and [p["page"] for p in done["pages"]] == list(range(1, n + 1))
        for i, p in enumerate(done["pages"]):
            assert p["run"] == (1 if i in before else 2), (i, p)
            if i in before:
                assert p["finished_at"] == before[i]["finished_at"]
        for i, rec in before.items():
            assert page_record(tmp_path, jid, i) == rec  # not written again
        result = s2.get(f"/v1/ocr/jobs/{jid}/result").json()
        assert [p["page"] for p in result["pages"]] == list(range(1, n + 1))  # every page exactly once
        assert result["usage"]["completion_tokens"] == n * tokens
        for i, rec in before.items():
            assert result["pages"][i]["timings"] == rec["event"]["timings"]
            assert result["pages"][i]["text"] == rec["event"]["text"]
        streamed = sse(s2.get(f"/v1/ocr/jobs/{jid}/result", params={"stream": "true"}))
        assert [e["page"] for e in streamed[:-1]] == list(range(1, n + 1))
        # Greedy: the resumed job's text is what one uninterrupted request gives.
        want = s2.post("/v1/ocr", body, timeout=300).json()
        assert result["document"] == want["document"]
        assert [p["text"] for p in result["pages"]] == [p["text"] for p in want["pages"]]
    finally:
        assert s2.stop() == 0


def test_sigterm_stops_running_jobs_at_once_and_they_resume(tmp_path, pdf):
    doc, n = document(pdf, 3)
    flags = ("--served-model-name", NAME, "--max-model-len", "8192", "--jobs-dir", str(tmp_path),
             "--ocr-pages-in-flight", "1", "--shutdown-timeout", "600")
    s = Server(*flags)
    j = submit(s, {"document": doc, "dpi": 36, "temperature": 0, "max_tokens": 8000, "ignore_eos": True})
    assert wait_for(lambda: s.get(f"/v1/ocr/jobs/{j['id']}").json()["status"] == "running", 20)
    t0 = time.time()
    assert s.stop(signal.SIGTERM) == 0
    if n > 1:
        assert time.time() - t0 < 8  # the drain did not wait for the job's 3 x 8000 tokens
    # Stopped unfinished, and queued again for the next start.
    assert json.loads((tmp_path / j["id"] / "status.json").read_text())["status"] == "queued"
    s2 = Server(*flags)
    try:
        again = s2.get(f"/v1/ocr/jobs/{j['id']}").json()
        assert again["status"] in ("queued", "running") and again["runs"] >= 1
        assert s2.post(f"/v1/ocr/jobs/{j['id']}/cancel").json()["status"] == "cancelled"
    finally:
        assert s2.stop() == 0


def test_a_damaged_job_directory_is_skipped(tmp_path):
    flags = ("--served-model-name", NAME, "--jobs-dir", str(tmp_path))
    s = Server(*flags)
    try:
        good = submit(s, {"document": b64(PNG), "max_tokens": 2})
        wait_status(s, good["id"])
        want = s.get(f"/v1/ocr/jobs/{good['id']}/result").json()
    finally:
        assert s.stop() == 0
    bad = tmp_path / ("ocrjob-" + "ab" * 16)
    bad.mkdir()
    (bad / "request.json").write_text("{not json")
    half = tmp_path / ("ocrjob-" + "cd" * 16)
    half.mkdir()
    (half / "document").write_bytes(b"x")  # created, killed before request.json was written
    (tmp_path / "stray-file").write_text("?")
    s2 = Server(*flags)
    try:
        assert s2.get(f"/v1/ocr/jobs/{good['id']}/result").json() == want
        assert s2.get(f"/v1/ocr/jobs/{bad.name}").status_code == 404
        assert "skipping job directory" in s2.log and bad.name in s2.log and half.name in s2.log
        assert bad.exists()  # left for the operator to look at
    finally:
        assert s2.stop() == 0
