"""Images and documents as the engine takes them: every image becomes a URL the server's media
code reads (data: URLs for PIL images, bytes, paths and file:// URLs; http(s) URLs pass through and
are fetched only from LLM(allowed_media_domains=...))."""
from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any, Union
from urllib.parse import unquote, urlparse

_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
]


def _mime(data: bytes) -> str:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    return "application/octet-stream"  # the engine names what it cannot read


def _data_url(data: bytes) -> str:
    return f"data:{_mime(data)};base64," + base64.b64encode(data).decode("ascii")


def _is_pil(obj: Any) -> bool:
    return type(obj).__module__.startswith("PIL.") and hasattr(obj, "save") and hasattr(obj, "mode")


def read_source(obj: Union[str, bytes, os.PathLike, Any], what: str = "image") -> bytes:
    """The encoded bytes of a path, a file:// URL, bytes, a file object or a PIL image."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    if _is_pil(obj):
        buf = io.BytesIO()
        img = obj
        if img.mode not in ("RGB", "RGBA", "L", "LA", "P", "I;16", "1"):
            img = img.convert("RGB")
        img.save(buf, format="PNG")  # lossless: the engine sees the exact pixels
        return buf.getvalue()
    if hasattr(obj, "read"):
        return obj.read()
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    if isinstance(obj, str):
        if obj.startswith("file://"):
            obj = unquote(urlparse(obj).path)
        path = Path(obj)
        if not path.is_file():
            raise ValueError(f"{what} '{obj}' is not a file, a data: URL or an http(s) URL")
        return path.read_bytes()
    raise TypeError(f"cannot read an {what} from {type(obj).__name__}: give a PIL.Image, bytes, a path or a URL")


def image_url(obj: Any) -> str:
    """A URL for one image: data: and http(s) URLs as given, everything else read and encoded."""
    if isinstance(obj, str) and (obj.startswith("data:") or obj.startswith("http://") or obj.startswith("https://")):
        return obj
    return _data_url(read_source(obj, "image"))


def _image_of_part(part: dict) -> Any:
    t = part.get("type")
    if t == "image_url":
        v = part.get("image_url")
        return v.get("url") if isinstance(v, dict) else v
    if t in ("image_pil", "image", "input_image"):
        for key in (t, "image", "image_pil", "image_url"):
            if key in part and part[key] is not None:
                v = part[key]
                return v.get("url") if isinstance(v, dict) else v
    raise ValueError(f"a '{t}' content part carries no image")


def chat_messages(messages: list) -> list:
    """OpenAI-style messages with every image part turned into {"type": "image_url", "image_url":
    {"url": ...}} (images given as PIL images, bytes, paths, file:// or data: URLs)."""
    out = []
    for m in messages:
        if not isinstance(m, dict):
            raise TypeError(f"a message must be a dict, got {type(m).__name__}")
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") in ("image_url", "image_pil", "image", "input_image"):
                    parts.append({"type": "image_url", "image_url": {"url": image_url(_image_of_part(part))}})
                else:
                    parts.append(part)
            m = {**m, "content": parts}
        out.append(m)
    return out
