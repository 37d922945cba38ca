"""A local stand-in for the Hugging Face hub and ModelScope APIs that `locr pull` uses, serving a
model directory from disk (stdlib only).

Hugging Face:
  GET /api/models/{org}/{name}/revision/{rev}?blobs=true -> {"sha", "siblings": [{rfilename, size, blobId, lfs?}]}
  GET /{org}/{name}/resolve/{rev}/{path}                 -> file bytes (Range supported; 206)
ModelScope:
  GET /api/v1/models/{org}/{name}/repo/files?Revision=..&Recursive=true -> {"Code": 200, "Data": {"Files": [...]}}
  GET /api/v1/models/{org}/{name}/repo?Revision=..&FilePath=..          -> file bytes (Range supported)

Failure injection (attributes of the Hub object): `interrupt` = {path: n_bytes}: the next GET of path
sends its headers and only n bytes, then drops the connection (once); `corrupt` = {path}: serve the
file with one byte flipped (the listing keeps the true checksum); `token`: require this bearer token.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", "tokenizer.json")
COMMIT = "5f3c1a2b4d6e8f00112233445566778899aabbcc"


class Hub:
    def __init__(self, repo: str, model_dir: str):
        self.repo = repo
        self.files = {}
        for name in sorted(os.listdir(model_dir)):
            p = os.path.join(model_dir, name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    self.files[name] = f.read()
        self.interrupt: dict[str, int] = {}
        self.corrupt: set[str] = set()
        self.token: str | None = None
        self.ranges: list[tuple[str, str]] = []  # (path, Range header) of every file request
        self.requests: list[str] = []
        self.lock = threading.Lock()

    def siblings(self):
        out = []
        for name, data in self.files.items():
            s = {"rfilename": name, "size": len(data),
                 "blobId": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
            if name.endswith(LFS_SUFFIXES):
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            out.append(s)
        return out

    def ms_files(self):
        return [{"Name": n, "Path": n, "Type": "blob", "Size": len(d), "Sha256": hashlib.sha256(d).hexdigest(),
                 "Revision": COMMIT} for n, d in self.files.items()]


def make_handler(hub: Hub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def send_json(self, obj, status=200):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def authorized(self):
            if hub.token is None:
                return True
            if self.headers.get("Authorization") == f"Bearer {hub.token}":
                return True
            self.send_json({"error": "Access to model is restricted"}, 401)
            return False

        def send_file(self, name):
            with hub.lock:
                hub.ranges.append((name, self.headers.get("Range", "")))
                cut = hub.interrupt.pop(name, None)
            if name not in hub.files:
                self.send_json({"error": "Entry not found"}, 404)
                return
            data = hub.files[name]
            if name in hub.corrupt:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            start, status = 0, 200
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                start = int(rng[6:].split("-")[0])
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
            body = data[start:]
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", '"%s"' % hashlib.sha256(hub.files[name]).hexdigest())
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            if cut is not None:
                self.send_header("Connection", "close")
            self.end_headers()
            if cut is not None:
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                try:
                    self.connection.shutdown(2)
                except OSError:
                    pass
                return
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            path = urllib.parse.unquote(url.path)
            q = urllib.parse.parse_qs(url.query)
            with hub.lock:
                hub.requests.append(self.path)
            if not self.authorized():
                return
            hf_api = f"/api/models/{hub.repo}/revision/"
            ms_api = f"/api/v1/models/{hub.repo}/repo"
            hf_resolve = f"/{hub.repo}/resolve/"
            if path.startswith(hf_api):
                rev = path[len(hf_api):]
                if rev not in ("main", COMMIT):
                    self.send_json({"error": "Revision not found"}, 404)
                    return
                self.send_json({"id": hub.repo, "sha": COMMIT, "siblings": hub.siblings()})
            elif path == ms_api + "/files":
                self.send_json({"Code": 200, "Data": {"Files": hub.ms_files()}, "Success": True})
            elif path == ms_api:
                self.send_file(q.get("FilePath", [""])[0])
            elif path.startswith(hf_resolve):
                rest = path[len(hf_resolve):]
                _rev, _, name = rest.partition("/")
                self.send_file(name)
            else:
                self.send_json({"error": "Repository not found"}, 404)

    return Handler


def serve(hub: Hub):
    """Starts the server on a free port in a daemon thread; returns (server, base_url)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(hub))
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"
