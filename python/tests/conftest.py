"""The Python package's tests: run by python/tests/run.sh in a fresh venv where the wheel built
from this repository is installed (CTest tier `python`). The `locr` command they compare with is
the one the wheel installed beside Python ($VENV/bin/locr): the same engine behind the CLI."""
import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
MODEL = FIXTURES / "models" / "tiny_a"
IMAGES = FIXTURES / "images"
sys.path.insert(0, str(ROOT / "tests" / "common"))

# The engine arguments every comparison uses, as LLM keywords and as `locr serve` flags.
ENGINE = dict(max_model_len=1024, max_num_seqs=32, seed=1024)
SERVE_FLAGS = ["--max-model-len", "1024", "--max-num-seqs", "32", "--seed", "1024"]


def locr_bin():
    exe = shutil.which("locr", path=str(Path(sys.executable).parent))
    assert exe, "the wheel did not install the locr command beside " + sys.executable
    return exe


class Server:
    """`locr serve` (the wheel's) on loopback, port picked by the OS."""

    def __init__(self, *flags, model=MODEL):
        from serve_process import start_locr_serve
        self.proc, self.url = start_locr_serve(locr_bin(), [str(model), *flags], name="m", threads=None)

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="session")
def llm():
    from locr import LLM
    engine = LLM(str(MODEL), **ENGINE)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def server():
    s = Server(*SERVE_FLAGS)
    yield s
    s.stop()
