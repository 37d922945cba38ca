"""Starting a `locr serve` child process on a free loopback port, shared by the script tests."""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.request


def start_locr_serve(binary: str, model_args: list[str], wait_s: float = 60.0):
    """Starts `binary serve *model_args` and waits until /v1/models answers. Returns (process, base
    URL). Raises RuntimeError with the server's stderr if it exits first."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    base = f"http://127.0.0.1:{port}"
    srv = subprocess.Popen([binary, "serve", *model_args, "--host", "127.0.0.1", "--port", str(port),
                            "--served-model-name", "lightonocr-2-1b", "--threads", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + wait_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(base + "/v1/models", timeout=1).read()
            break
        except OSError:
            if srv.poll() is not None:
                raise RuntimeError("server exited: " + srv.stderr.read())
            time.sleep(0.1)
    return srv, base
