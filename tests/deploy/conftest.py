"""Deployment tests: the Kubernetes manifests, the haproxy configuration and the Ray batch job of
deploy/, against real `locr serve` processes on loopback with the tiny fixture model.

`Server` (a `locr serve` child on a port the OS picks, binary from $LOCR_BIN) is the one of
tests/server/conftest.py, loaded from there so both tiers start servers the same way.
"""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
sys.path.insert(0, str(ROOT / "tests" / "common"))

_spec = importlib.util.spec_from_file_location("server_conftest", ROOT / "tests" / "server" / "conftest.py")
server_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(server_conftest)
Server = server_conftest.Server
MODEL = server_conftest.MODEL
locr_bin = server_conftest.locr_bin
# A run whose tests were all skipped exits 77 (CTest: skipped), as in the server tier.
pytest_runtest_logreport = server_conftest.pytest_runtest_logreport
pytest_sessionfinish = server_conftest.pytest_sessionfinish
