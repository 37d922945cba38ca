"""deploy/ray/ocr_batch.py on a local Ray cluster (127.0.0.1, 2 CPUs, no dashboard) against two
`locr serve` replicas on loopback: 20 pages in 4 PDFs; one replica is killed (SIGKILL) once it
has served a few pages; every page is in the output exactly once, with text, and the pages that
were running on the dead replica were retried on the other one."""
import os
import signal
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

from conftest import DEPLOY, Server
from minimal_pdf import make_pdf

# A local Ray cluster on loopback only: without this Ray binds and advertises the machine's own
# interface address (read when ray is imported, inherited by its workers).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
sys.path.insert(0, str(DEPLOY / "ray"))
import ocr_batch  # noqa: E402

DOCS, PAGES = 4, 5


@pytest.fixture(scope="module")
def ray_cluster():
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 * 1024 * 1024)
    assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
    yield ray
    ray.shutdown()


def served(server):
    try:
        return sum(v for k, v in server.metrics().items() if k.startswith("vllm:request_success_total{"))
    except Exception:
        return -1


def test_batch_survives_a_replica_killed_mid_run(ray_cluster, tmp_path):
    src = tmp_path / "pdfs"
    (src / "sub").mkdir(parents=True)
    for d in range(DOCS):
        (src / ("sub" if d % 2 else "") / f"doc{d}.pdf").write_bytes(make_pdf(PAGES))
    flags = ("--served-model-name", "lightonocr-2-1b", "--max-model-len", "1024", "--max-num-seqs", "4")
    replicas = [Server(*flags), Server(*flags)]
    victim, survivor = replicas
    killed = threading.Event()

    def killer():  # SIGKILL replica 1 once it has finished 3 pages, with others in flight
        deadline = time.time() + 120
        while time.time() < deadline and victim.proc.poll() is None:
            if served(victim) >= 3:
                victim.proc.send_signal(signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.02)

    k = threading.Thread(target=killer, daemon=True)
    k.start()
    out = tmp_path / "out"
    try:
        rc = ocr_batch.run(ocr_batch.parse_args([
            "--input", str(src), "--output", str(out), "--replica", victim.url, "--replica", survivor.url,
            "--dpi", "36", "--max-tokens", "160", "--option", "ignore_eos=true", "--option", "temperature=0",
            "--actors", "2", "--in-flight", "3", "--batch-size", "3", "--retries", "4"]))
    finally:
        k.join(5)
        for r in replicas:
            r.stop()
    assert killed.is_set(), "the job finished before replica 1 could be killed"
    assert rc == 0
    table = pq.read_table(out).to_pylist()
    keys = sorted((r["document"], r["page"]) for r in table)
    expected = sorted((str(p), i) for p in src.rglob("*.pdf") for i in range(1, PAGES + 1))
    assert keys == expected  # every page, exactly once
    assert all(r["error"] == "" and r["text"] and r["completion_tokens"] == 160 for r in table), table[:2]
    assert {r["replica"] for r in table} == {victim.url, survivor.url}
    retried = [r for r in table if r["attempts"] > 1]
    assert retried and all(r["replica"] == survivor.url for r in retried)
