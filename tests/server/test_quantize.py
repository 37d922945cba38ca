"""`locr quantize IN OUT.gguf --type ...`: the files it writes read back with llama.cpp's own `gguf`
Python package (gguf==0.19.0, pinned in requirements.txt) with the same tensors and metadata as the
converter's files (tests/fixtures/gguf/models/); `locr serve` serves them; bad input is a clear error."""
import subprocess

import numpy as np
import pytest

from conftest import FIXTURES, MODEL, Server, greedy, locr_bin

GGUF = FIXTURES / "gguf" / "models"


def quantize(*args):
    return subprocess.run([locr_bin(), "quantize", *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("quantize")
    out = {}
    for t in ("q8_0", "f32"):
        r = quantize(MODEL, d / f"tiny_a-{t}.gguf", "--type", t)
        assert r.returncode == 0, r.stderr
        assert f"mmproj-tiny_a-{t}.gguf" in r.stdout
        out[t] = (d / f"tiny_a-{t}.gguf", d / f"mmproj-tiny_a-{t}.gguf")
    return out


def fields(reader):
    """Metadata as {key: (gguf type names, python value)} through gguf's own decoding."""
    out = {}
    for k, f in reader.fields.items():
        if k.startswith("GGUF."):
            continue
        out[k] = ([t.name for t in f.types], f.contents())
    return out


@pytest.mark.parametrize("t", ["q8_0", "f32"])
def test_gguf_package_reads_the_text_file_as_the_converters(written, t):
    gguf = pytest.importorskip("gguf")
    mine = gguf.GGUFReader(written[t][0])
    conv = gguf.GGUFReader(GGUF / f"tiny_a-{t}.gguf")
    assert fields(mine) == fields(conv)
    assert fields(mine)["general.architecture"][1] == "qwen3"
    assert [x.name for x in mine.tensors] == [x.name for x in conv.tensors]
    for a, b in zip(mine.tensors, conv.tensors):
        assert a.tensor_type == b.tensor_type, a.name
        assert list(a.shape) == list(b.shape), a.name
        assert np.array_equal(np.asarray(a.data), np.asarray(b.data)), a.name
    types = {x.name: x.tensor_type for x in mine.tensors}
    want = gguf.GGMLQuantizationType.Q8_0 if t == "q8_0" else gguf.GGMLQuantizationType.F32
    assert types["blk.0.attn_q.weight"] == want and types["token_embd.weight"] == want
    assert types["blk.0.attn_norm.weight"] == gguf.GGMLQuantizationType.F32


def test_gguf_package_reads_the_mmproj_and_dequantizes_it(written):
    gguf = pytest.importorskip("gguf")
    f32 = gguf.GGUFReader(written["f32"][1])
    conv = gguf.GGUFReader(GGUF / "mmproj-tiny_a-f32.gguf")
    assert fields(f32) == fields(conv)
    assert fields(f32)["clip.projector_type"][1] == "lightonocr"
    q8 = gguf.GGUFReader(written["q8_0"][1])
    ref = {x.name: x for x in conv.tensors}
    assert [x.name for x in q8.tensors] == list(ref)
    for x in q8.tensors:
        r = ref[x.name]
        forced = x.name in ("v.patch_embd.weight", "mm.patch_merger.weight")
        if len(r.shape) == 2 and not forced:
            assert x.tensor_type == gguf.GGMLQuantizationType.Q8_0, x.name
            # gguf's NumPy dequantizer: within a Q8_0 step of the F32 weights (the q/k rows permuted alike).
            got = gguf.quants.dequantize(np.asarray(x.data), x.tensor_type).reshape(-1, 32)
            want = np.asarray(r.data, dtype=np.float32).reshape(-1, 32)
            step = np.abs(want).max(axis=1, keepdims=True) / 127
            assert np.all(np.abs(got - want) <= step * 0.6 + 1e-6), x.name
        else:
            assert x.tensor_type == gguf.GGMLQuantizationType.F32, x.name
            assert np.array_equal(np.asarray(x.data), np.asarray(r.data)), x.name


def test_serve_runs_the_written_files(written):
    text, mmproj = written["q8_0"]
    s = Server("--mmproj", str(mmproj), "--served-model-name", "m", model=text)
    try:
        r = s.post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Hello"}],
                                            "max_tokens": 4, **greedy()})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


def test_bad_input_is_a_clear_error(tmp_path):
    r = quantize(MODEL, tmp_path / "x.gguf")
    assert r.returncode == 1 and "--type is required" in r.stderr
    r = quantize(MODEL, tmp_path / "x.gguf", "--type", "q5_k_m")
    assert r.returncode == 1 and "--type q5_k_m is not supported yet" in r.stderr
    r = quantize(MODEL, tmp_path / "x.gguf", "--type", "int3")
    assert r.returncode == 1 and "use q4_k_m, q8_0, f16, bf16 or f32" in r.stderr
    r = quantize(MODEL, tmp_path / "missing" / "x.gguf", "--type", "q8_0")
    assert r.returncode == 1 and "does not exist" in r.stderr
    r = quantize(MODEL, tmp_path / "x.bin", "--type", "q8_0")
    assert r.returncode == 1 and "must be a .gguf" in r.stderr
    assert list(tmp_path.iterdir()) == []
    r = quantize(MODEL, tmp_path / "y.gguf", "--type", "f16", "--mmproj-out", tmp_path / "vision.gguf")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vision.gguf", "y.gguf"]


# --type q4_k_m: llama-quantize's Q4_K_M on a model whose text widths are whole 256-element
# super-blocks (make-model --preset tiny-k: 8 layers, hidden 256, ffn 512, tied embeddings).

def llama_order(name):
    """llama_model_loader's weight_name_comparer: tensors outside the blocks first, then by block number, by name."""
    layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
    return (layer, name.encode())


@pytest.fixture(scope="module")
def k_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("q4_k_m")
    r = subprocess.run([locr_bin(), "make-model", "--preset", "tiny-k", "--dtype", "f32", "--out", str(d / "tiny_k"),
                        "--quiet"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = {}
    for t in ("q4_k_m", "f32", "q8_0"):
        r = quantize(d / "tiny_k", d / f"tiny_k-{t}.gguf", "--type", t)
        assert r.returncode == 0, r.stderr
        out[t] = (d / f"tiny_k-{t}.gguf", d / f"mmproj-tiny_k-{t}.gguf", r.stdout)
    return out


def test_q4_k_m_is_llama_quantizes_mix_and_reads_back_with_gguf(k_model):
    gguf = pytest.importorskip("gguf")
    Q = gguf.GGMLQuantizationType
    text, _, stdout = k_model["q4_k_m"]
    assert "(48 Q4_K, 9 Q6_K, " in stdout, stdout  # 8 layers x 7 weights + token_embd; mmproj Q8_0
    mine, f32 = gguf.GGUFReader(text), gguf.GGUFReader(k_model["f32"][0])
    # Metadata: the converter's (locr's f32 file is), general.file_type 15 (MOSTLY_Q4_K_M), and
    # llama-quantize's order: general.quantization_version and general.file_type moved last.
    got, want = fields(mine), fields(f32)
    assert got.pop("general.file_type") == (["UINT32"], 15)
    assert want.pop("general.file_type") == (["UINT32"], 0)
    assert got == want
    assert [k for k in mine.fields if not k.startswith("GGUF.")][-2:] == ["general.quantization_version", "general.file_type"]
    # Tensors: llama-quantize's order, the mix's types, the norms' bytes, the weights within a step.
    names = [x.name for x in f32.tensors]
    assert [x.name for x in mine.tensors] == sorted(names, key=llama_order)
    ref = {x.name: x for x in f32.tensors}
    more_bits = {0, 3, 6, 7}  # use_more_bits(i, 8)
    counts = {}
    for x in mine.tensors:
        r = ref[x.name]
        assert list(x.shape) == list(r.shape), x.name
        if len(r.shape) == 1:
            assert x.tensor_type == Q.F32 and np.array_equal(np.asarray(x.data), np.asarray(r.data)), x.name
            continue
        layer = int(x.name.split(".")[1]) if x.name.startswith("blk.") else -1
        six = x.name == "token_embd.weight" or (layer in more_bits and x.name.split(".")[2] in ("attn_v", "ffn_down"))
        assert x.tensor_type == (Q.Q6_K if six else Q.Q4_K), x.name
        counts[x.tensor_type] = counts.get(x.tensor_type, 0) + 1
        got = gguf.quants.dequantize(np.asarray(x.data), x.tensor_type).reshape(-1, 16)
        want = np.asarray(r.data, dtype=np.float32).reshape(-1, 16)
        rms = np.sqrt(np.mean(want.astype(np.float64) ** 2))
        err = np.sqrt(np.mean((got.astype(np.float64) - want) ** 2)) / rms
        assert err < (0.03 if six else 0.12), (x.name, err)
    assert counts == {Q.Q4_K: 48, Q.Q6_K: 9}
    # The mmproj is the q8_0 export's, byte for byte.
    assert k_model["q4_k_m"][1].read_bytes() == k_model["q8_0"][1].read_bytes()


def test_q4_k_m_text_file_is_llama_cpps_own_byte_for_byte(k_model):
    """llama.cpp's llama_model_quantize (Q4_K_M) on locr's f32 file of the same model (the converter's
    pipeline) wrote a file of this SHA-256 (tools/reference/make_q4_k_m_fixture.py; the model directory
    is named tiny_k there too, general.name comes from it)."""
    import hashlib
    want_hash, want_size = (GGUF.parent / "tiny_k-q4_k_m.sha256").read_text().split()
    data = k_model["q4_k_m"][0].read_bytes()
    assert len(data) == int(want_size)
    assert hashlib.sha256(data).hexdigest() == want_hash


def test_serve_runs_the_q4_k_m_files(k_model):
    text, mmproj, _ = k_model["q4_k_m"]
    s = Server("--mmproj", str(mmproj), "--served-model-name", "m", model=text)
    try:
        r = s.post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Hello"}],
                                            "max_tokens": 4, **greedy()})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


# Rows that are not whole blocks of the chosen type (tiny_d: text hidden 48, ffn 112): llama.cpp's
# fallbacks, byte for byte, each tensor named.

TINY_D = FIXTURES / "models" / "tiny_d"
TINY_D_Q8_FALLBACKS = ["token_embd.weight"] + [f"blk.{i}.{w}.weight" for i in (0, 1)
                                               for w in ("ffn_down", "ffn_gate", "ffn_up", "attn_k", "attn_q", "attn_v")]


def sha256_and_size(path):
    import hashlib
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)


def test_q8_0_fallback_is_the_converters_byte_for_byte(tmp_path):
    """convert_hf_to_gguf.py --outtype q8_0 on tiny_d falls back to F16 for each weight whose rows are
    not whole 32-element blocks; locr quantize writes the same files (SHA-256 of the converter's,
    tools/reference/make_gguf_model_fixtures.py) and names those tensors."""
    want = {}
    for line in (GGUF.parent / "tiny_d.sha256").read_text().splitlines():
        h, size, name = line.split()
        want[name] = (h, int(size))
    r = quantize(TINY_D, tmp_path / "tiny_d-q8_0.gguf", "--type", "q8_0")
    assert r.returncode == 0, r.stderr
    r32 = quantize(TINY_D, tmp_path / "tiny_d-f32.gguf", "--type", "f32")
    assert r32.returncode == 0, r32.stderr
    for name in want:
        assert sha256_and_size(tmp_path / name) == want[name], name
    # The summary names every tensor that fell back, with the type change; the log says it per file.
    assert "10 of the 39 tensors in Q8_0" in r.stdout, r.stdout
    assert "14 tensors fell back to a wider type" in r.stdout, r.stdout
    summary = next(line for line in r.stdout.splitlines() if "fell back" in line)
    assert "Q8_0 -> F16: " in summary
    named = summary.split("Q8_0 -> F16: ", 1)[1].split(", ")
    assert sorted(named) == sorted(TINY_D_Q8_FALLBACKS + ["mmproj mm.2.weight"])
    for n in TINY_D_Q8_FALLBACKS:
        assert n in r.stderr, r.stderr
    assert "mm.2.weight (48 columns) Q8_0 -> F16" in r.stderr, r.stderr
    assert "fell back" not in r32.stdout
    gguf = pytest.importorskip("gguf")
    types = {x.name: x.tensor_type for x in gguf.GGUFReader(tmp_path / "tiny_d-q8_0.gguf").tensors}
    assert types["blk.0.attn_output.weight"] == gguf.GGMLQuantizationType.Q8_0
    assert all(types[n] == gguf.GGMLQuantizationType.F16 for n in TINY_D_Q8_FALLBACKS)


def test_q4_k_m_fallback_is_llama_quantizes_byte_for_byte(tmp_path):
    """llama_model_quantize (Q4_K_M) on tiny_d's f32 file: Q4_K rows of 96 -> Q5_0, rows of 48 / 112
    -> F16 (the head's Q8_0 and the more-bits Q6_K too); locr's text file has its SHA-256
    (tools/reference/make_q4_k_m_fixture.py)."""
    r = quantize(TINY_D, tmp_path / "tiny_d-q4_k_m.gguf", "--type", "q4_k_m")
    assert r.returncode == 0, r.stderr
    want_hash, want_size = (GGUF.parent / "tiny_d-q4_k_m.sha256").read_text().split()
    assert sha256_and_size(tmp_path / "tiny_d-q4_k_m.gguf") == (want_hash, int(want_size))
    assert "(0 Q4_K, 0 Q6_K, 8 Q8_0, 2 Q5_0)" in r.stdout, r.stdout
    summary = next(line for line in r.stdout.splitlines() if "fell back" in line)
    assert summary.startswith("16 tensors fell back"), summary
    assert "Q4_K -> Q5_0: blk.0.attn_output.weight, blk.1.attn_output.weight" in summary, summary
    assert "Q6_K -> F16: blk.1.attn_v.weight, blk.1.ffn_down.weight" in summary, summary
    assert "Q8_0 -> F16: token_embd.weight, mmproj mm.2.weight" in summary, summary
    assert "as llama.cpp's llama-quantize does" in r.stderr and "as llama.cpp's converter does" in r.stderr, r.stderr


def test_serve_runs_the_fallback_files(tmp_path):
    r = quantize(TINY_D, tmp_path / "d.gguf", "--type", "q8_0")
    assert r.returncode == 0, r.stderr
    s = Server("--mmproj", str(tmp_path / "mmproj-d.gguf"), "--served-model-name", "m", model=tmp_path / "d.gguf")
    try:
        r = s.post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Hello"}],
                                            "max_tokens": 4, **greedy()})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


# The Qwen3.5 family (LightOnOCR-3-0.8B / -4B layouts): --type q4_k_m is llama-quantize's Q4_K_M run on
# the converter's f32 file, byte for byte (tools/reference/make_q4_k_m_fixture.py), on the fixture
# models (widths 32 to 128: every quantized tensor falls back) and on make-model's tiny-qwen35-k (rows
# of whole 256-blocks; the 4B's value-head layout, untied head); locr serves what it wrote.
QWEN35 = FIXTURES / "qwen35"


def sha256_of(path):
    import hashlib
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)


def want_sha256(name):
    h, n = (FIXTURES / "gguf" / "qwen35" / f"{name}-q4_k_m.sha256").read_text().split()
    return h, int(n)


@pytest.mark.parametrize("m", ["qwen35_a", "qwen35_b"])
def test_qwen35_q4_k_m_is_llama_quantizes_byte_for_byte(tmp_path, m):
    r = quantize(QWEN35 / m, tmp_path / f"{m}-q4_k_m.gguf", "--type", "q4_k_m")
    assert r.returncode == 0, r.stderr
    assert sha256_of(tmp_path / f"{m}-q4_k_m.gguf") == want_sha256(m)
    # Every row of 32 to 128 elements: Q4_K -> Q5_0, the more-bits tensors' Q6_K -> Q8_0.
    assert "Q4_K -> Q5_0" in r.stdout and "Q6_K -> Q8_0" in r.stdout, r.stdout


def test_qwen35_q4_k_m_mix_is_llama_quantizes_and_serves(tmp_path):
    r = subprocess.run([locr_bin(), "make-model", "--preset", "tiny-qwen35-k", "--dtype", "f32", "--out",
                        str(tmp_path / "tiny_qk"), "--quiet"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    text = tmp_path / "tiny_qk-q4_k_m.gguf"
    r = quantize(tmp_path / "tiny_qk", text, "--type", "q4_k_m")
    assert r.returncode == 0, r.stderr
    assert sha256_of(text) == want_sha256("tiny_qk")
    # 8 layers: 6 DeltaNet (attn_qkv, attn_gate, ssm_alpha, ssm_beta, ssm_out) and 2 attention (q, k, v,
    # output), each with gate / up / down; token_embd, output. Q6_K: output, and attn_qkv / attn_v and
    # ffn_down of the more-bits layers 0, 3, 6, 7; the mmproj's 2-D weights Q8_0.
    assert "(55 Q4_K, 9 Q6_K, 10 Q8_0, 0 Q5_0)" in r.stdout, r.stdout
    (tmp_path / "preprocessor_config.json").write_bytes((tmp_path / "tiny_qk" / "preprocessor_config.json").read_bytes())
    s = Server("--mmproj", str(tmp_path / "mmproj-tiny_qk-q4_k_m.gguf"), "--served-model-name", "m",
               "--max-model-len", "4096", "--kv-cache-memory", "64MiB", model=text)
    try:
        png = (FIXTURES / "images" / "page_small.png").read_bytes()
        import base64
        r = s.post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}]}],
            "max_tokens": 4, **greedy()}, timeout=300)
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] > 0
    finally:
        s.stop()
