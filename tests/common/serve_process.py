"""Starting a `locr serve` child process on a free loopback port, shared by the script tests."""
from __future__ import annotations

import socket
import subprocess
import tempfile
import time
import urllib.request


def start_locr_serve(binary: str, model_args: list[str], wait_s: float = 60.0, name: str = "lightonocr-2-1b",
                     threads: str | None = "1"):
    """Starts `binary serve *model_args` (served as `name`, on `threads` threads; None: the default)
    and waits until /v1/models answers. Returns (process, base URL). Raises RuntimeError with the
    server's stderr if it exits first."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    base = f"http://127.0.0.1:{port}"
    # The log goes to a temporary file, not a pipe: a pipe nobody reads would stall a busy server.
    log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    srv = subprocess.Popen([binary, "serve", *model_args, "--host", "127.0.0.1", "--port", str(port),
                            "--served-model-name", name, *(["--threads", threads] if threads else [])],
                           stdout=subprocess.DEVNULL, stderr=log, text=True)
    deadline = time.time() + wait_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(base + "/v1/models", timeout=1).read()
            break
        except OSError:
            if srv.poll() is not None:
                log.seek(0)
                raise RuntimeError("server exited: " + log.read())
            time.sleep(0.1)
    return srv, base
