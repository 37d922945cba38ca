"""`locr serve --kv-cache-dtype` (vLLM's spellings): fp8 / fp8_e4m3 store the KV cache as FP8 E4M3
with a scale per token and kv head, so the same --kv-cache-memory holds about twice the tokens of
the bfloat16 cache; bad values stop start-up naming the accepted ones."""
import re
import subprocess

from conftest import MODEL, Server, locr_bin

# tiny_a: 2 layers, 2 kv heads of 32. A 16-token block: K and V of every layer and kv head.
LAYERS, KV_HEADS, HEAD_DIM, BLOCK = 2, 2, 32, 16
BF16_BLOCK = 2 * LAYERS * BLOCK * KV_HEADS * HEAD_DIM * 2
FP8_BLOCK = 2 * LAYERS * BLOCK * KV_HEADS * (HEAD_DIM + 4)  # a byte per element, an f32 scale per head
MEMORY = 1 << 20
COMMON = ("--kv-cache-memory", "1MiB", "--max-num-seqs", "4", "--max-model-len", "512", "--block-size", str(BLOCK))


def cache_config(server):
    text = server.get("/metrics").text
    m = re.search(r"^vllm:cache_config_info\{([^}]*)\} 1\.0$", text, re.M)
    assert m, text
    return dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))


def chat(server):
    r = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4,
                                             "temperature": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["usage"]["completion_tokens"] >= 1
    return body


def test_fp8_kv_cache_answers_a_chat_and_holds_more_blocks_in_the_same_memory():
    blocks = {}
    for dtype in ("bfloat16", "fp8"):
        s = Server("--kv-cache-dtype", dtype, *COMMON)
        try:
            chat(s)
            cfg = cache_config(s)
            blocks[dtype] = int(cfg["num_gpu_blocks"])
            assert cfg["cache_dtype"] == ("fp8_e4m3" if dtype == "fp8" else "auto")
            assert cfg["kv_cache_memory_bytes"] == str(MEMORY)
            # The start-up log reports the KV size in blocks, tokens and bytes.
            m = re.search(r"engine: cpu executor, (\d+) KV blocks of 16 tokens \((\d+) tokens, (\d+) MiB reserved\)",
                          s.log)
            assert m, s.log
            assert int(m.group(1)) == blocks[dtype] and int(m.group(2)) == 16 * blocks[dtype]
            if dtype == "fp8":
                assert "KV cache: FP8 E4M3 with one f32 scale per token and kv head" in s.log
                assert "--kv-cache-dtype has no effect" not in s.log
        finally:
            assert s.stop() == 0
    assert blocks["bfloat16"] == MEMORY // BF16_BLOCK
    assert blocks["fp8"] == MEMORY // FP8_BLOCK  # 1.78x here (head_dim 32); 1.94x at LightOnOCR's 128


def test_fp8_e4m3_spelling_serves_too():
    s = Server("--kv-cache-dtype", "fp8_e4m3", *COMMON)
    try:
        chat(s)
        assert cache_config(s)["cache_dtype"] == "fp8_e4m3"
    finally:
        assert s.stop() == 0


def test_bad_kv_cache_dtype_stops_start_up_listing_the_accepted_values():
    for value, why in (("int4", "unknown value 'int4'"), ("fp8_e5m2", "fp8_e5m2 is not implemented")):
        out = subprocess.run([locr_bin(), "serve", str(MODEL), "--kv-cache-dtype", value, "--port", "0"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode != 0, out.stderr
        assert why in out.stderr, out.stderr
        assert "accepted: auto, bfloat16, fp8, fp8_e4m3" in out.stderr, out.stderr
