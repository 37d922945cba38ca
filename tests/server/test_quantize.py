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
    r = quantize(MODEL, tmp_path / "x.gguf", "--type", "q4_k_m")
    assert r.returncode == 1 and "--type q4_k_m is not supported yet" in r.stderr
    r = quantize(MODEL, tmp_path / "x.gguf", "--type", "int3")
    assert r.returncode == 1 and "use q8_0, f16, bf16 or f32" in r.stderr
    r = quantize(MODEL, tmp_path / "missing" / "x.gguf", "--type", "q8_0")
    assert r.returncode == 1 and "does not exist" in r.stderr
    r = quantize(MODEL, tmp_path / "x.bin", "--type", "q8_0")
    assert r.returncode == 1 and "must be a .gguf" in r.stderr
    r = quantize(FIXTURES / "models" / "tiny_d", tmp_path / "d.gguf", "--type", "q8_0")
    assert r.returncode == 1 and "not a multiple of Q8_0's 32-element block" in r.stderr
    assert list(tmp_path.iterdir()) == []
    r = quantize(MODEL, tmp_path / "y.gguf", "--type", "f16", "--mmproj-out", tmp_path / "vision.gguf")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vision.gguf", "y.gguf"]
