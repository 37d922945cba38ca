"""`locr serve` with a Qwen3.5 model (the LightOnOCR-3-0.8B layout: tests/fixtures/qwen35/qwen35_a,
made by transformers): chat completions with images give transformers' greedy tokens (each case's
generated_ids), all cases in flight at once; /v1/ocr runs it; prefix caching and speculative
decoding are refused with a notice (a recurrent state cannot be restored or rewound). The same
from llama.cpp's GGUF files of the 4B layout (qwen35_b converted by llama.cpp's own converter:
tests/fixtures/gguf/qwen35/), as llama-server takes them."""
import base64
import concurrent.futures
import json
import struct

from conftest import FIXTURES, ROOT, Server

MODEL = FIXTURES / "qwen35" / "qwen35_a"
NAME = "lightonocr-3"


def tensor_i64(path, name):
    """An I64 tensor of a safetensors file, read by hand (no numpy in the test venv)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    t = json.loads(raw[8:8 + n])[name]
    assert t["dtype"] == "I64"
    a, b = t["data_offsets"]
    data = raw[8 + n + a:8 + n + b]
    return list(struct.unpack(f"<{len(data) // 8}q", data))


def cases(model=MODEL):
    out = []
    for js in sorted((model / "cases").glob("*.json")):
        if js.name == "tokenizer.json":
            continue
        spec = json.loads(js.read_text())
        out.append((js.stem, spec, tensor_i64(js.with_suffix(".safetensors"), "generated_ids")))
    return out


def openai_messages(spec):
    """The case's messages with each {"type": "image"} part its image file as a data: URL."""
    files = iter(spec["images"])
    msgs = []
    for m in spec["messages"]:
        content = m["content"]
        if isinstance(content, list):
            parts = []
            for p in content:
                if p["type"] == "image":
                    data = (ROOT / next(files)["file"]).read_bytes()
                    parts.append({"type": "image_url",
                                  "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()}})
                else:
                    parts.append(p)
            content = parts
        msgs.append({"role": m["role"], "content": content})
    return msgs


def token_ids(choice):
    return [int(t["token"].split(":", 1)[1]) for t in choice["logprobs"]["content"]]


def expect_transformers_tokens(s, cs):
    """Every case at once through /v1/chat/completions: transformers' prompt length and greedy ids."""
    def run(case):
        name, spec, golden = case
        r = s.post("/v1/chat/completions", {
            "model": NAME, "messages": openai_messages(spec), "chat_template_kwargs": spec["chat_template_kwargs"],
            "max_tokens": 24, "temperature": 0, "ignore_eos": True, "logprobs": True,
            "return_tokens_as_token_ids": True}, timeout=300)
        assert r.status_code == 200, (name, r.text)
        j = r.json()
        assert j["usage"]["prompt_tokens"] == spec["prompt_tokens"], name
        assert token_ids(j["choices"][0]) == golden, name

    with concurrent.futures.ThreadPoolExecutor(len(cs)) as pool:
        list(pool.map(run, cs))


def test_chat_completions_equal_transformers_all_in_flight():
    s = Server("--served-model-name", NAME, "--dtype", "float32", "--generation-config", "vllm",
               "--max-num-seqs", "3", "--max-num-batched-tokens", "48", "--kv-cache-memory", "64MiB", "--max-model-len", "4096",
               "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4}', model=MODEL)
    try:
        assert "prefix caching is off" in s.log, s.log
        assert "--speculative-config has no effect on this model" in s.log, s.log
        cs = cases()
        assert len(cs) == 7
        expect_transformers_tokens(s, cs)
        m = s.metrics()
        assert any('enable_prefix_caching="False"' in k for k in m if k.startswith("vllm:cache_config_info")), m
        assert sum(v for k, v in m.items() if k.startswith("vllm:spec_decode_num_draft_tokens")) == 0
    finally:
        s.stop()


def test_gguf_chat_completions_equal_transformers():
    gguf = FIXTURES / "gguf" / "qwen35" / "qwen35_b"
    s = Server("--served-model-name", NAME, "--dtype", "float32", "--max-num-seqs", "4", "--kv-cache-memory", "64MiB",
               "--max-model-len", "4096", "--mmproj", str(gguf / "mmproj-qwen35_b-f32.gguf"),
               model=gguf / "qwen35_b-f32.gguf")
    try:
        cs = cases(FIXTURES / "qwen35" / "qwen35_b")
        assert len(cs) == 7
        expect_transformers_tokens(s, cs)
    finally:
        s.stop()


def test_ocr_endpoint_runs_the_model():
    s = Server("--served-model-name", NAME, "--kv-cache-memory", "64MiB", "--max-model-len", "4096",
               "--default-chat-template-kwargs", '{"enable_thinking": false}', model=MODEL)
    try:
        png = (FIXTURES / "images" / "gray.png").read_bytes()
        for mode in ("ocr", "grounding"):
            r = s.post("/v1/ocr", {"document": base64.b64encode(png).decode(), "mode": mode, "max_tokens": 8,
                                   "temperature": 0}, timeout=300)
            assert r.status_code == 200, r.text
            j = r.json()
            assert len(j["pages"]) == 1
            # The page at the model's size: smart_resize of 95 x 68 is 96 x 64.
            assert j["pages"][0]["dimensions"] == {"width": 96, "height": 64}, j["pages"][0]
            assert j["usage"]["completion_tokens"] > 0
    finally:
        s.stop()


def test_locr_ocr_runs_the_model_in_process(tmp_path):
    import subprocess
    from conftest import locr_bin
    src = tmp_path / "page.png"
    src.write_bytes((FIXTURES / "images" / "page_small.png").read_bytes())
    out = tmp_path / "out"
    p = subprocess.run([locr_bin(), "ocr", str(src), "-o", str(out), "--model", str(MODEL), "--threads", "1",
                        "--max-model-len", "4096", "--kv-cache-memory", "64MiB", "--max-tokens", "8"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (out / "page" / "page-0001.md").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["documents"][0]["pages"][0]["completion_tokens"] == 8, manifest
