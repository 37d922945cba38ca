"""`locr serve TEXT.gguf --mmproj MMPROJ.gguf`, as llama-server takes the community's LightOnOCR GGUFs
(fixtures: llama.cpp's own converter on tiny_a, tests/fixtures/gguf/models/)."""
import base64

import pytest

from conftest import FIXTURES, IMAGES, MODEL, Server, data_url, greedy

GGUF = FIXTURES / "gguf" / "models"
TEXT = GGUF / "tiny_a-f32.gguf"
MMPROJ = GGUF / "mmproj-tiny_a-f32.gguf"


def image_chat(**kw):
    body = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(IMAGES / "page_small.png")}},
        {"type": "text", "text": "Describe."}]}], "max_tokens": 8}
    body.update(greedy(**kw))
    return body


@pytest.fixture(scope="module")
def gguf_server():
    s = Server("--mmproj", str(MMPROJ), "--served-model-name", "m", model=TEXT)
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def dir_server():
    s = Server("--served-model-name", "m", model=MODEL)
    yield s
    s.stop()


def test_gguf_serves_a_chat_completion_with_an_image(gguf_server, dir_server):
    r = gguf_server.post("/v1/chat/completions", image_chat())
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["usage"]["completion_tokens"] == 8
    # The F32 GGUF holds tiny_a's weights: the same greedy text as the safetensors directory.
    ref = dir_server.post("/v1/chat/completions", image_chat())
    assert ref.status_code == 200, ref.text
    assert out["choices"][0]["message"]["content"] == ref.json()["choices"][0]["message"]["content"]
    assert out["usage"]["prompt_tokens"] == ref.json()["usage"]["prompt_tokens"]
    assert "generation_config" in gguf_server.log  # the defaults used are said


def test_text_gguf_without_mmproj_serves_text_and_refuses_images():
    s = Server("--served-model-name", "m", model=TEXT)
    try:
        r = s.post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Hello"}],
                                            "max_tokens": 4, **greedy()})
        assert r.status_code == 200, r.text
        r = s.post("/v1/chat/completions", image_chat())
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert "--mmproj" in err["message"] and "no vision encoder" in err["message"]
        # /v1/ocr too (its pages are images).
        doc = base64.b64encode((IMAGES / "page_small.png").read_bytes()).decode()
        r = s.post("/v1/ocr", {"document": doc, **greedy()})
        assert r.status_code == 400, r.text
        assert "no vision encoder" in r.json()["error"]["message"]
        # The server is still up.
        assert s.get("/health").status_code == 200
    finally:
        assert s.stop() == 0


def test_bad_mmproj_is_a_clear_startup_error():
    import subprocess
    from conftest import locr_bin
    out = subprocess.run([locr_bin(), "serve", str(TEXT), "--mmproj", str(GGUF / "tiny_a-f16.gguf"), "--port", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "general.architecture 'clip'" in out.stderr + out.stdout
