#!/usr/bin/env python3
"""GGUF fixtures for locr's reader (tests/unit/gguf_test.cc), written by llama.cpp's own `gguf`
Python package (PyPI `gguf`, the writer convert_hf_to_gguf.py uses) and dequantized by its NumPy
dequantizer, the reference:

  tests/fixtures/gguf/types.gguf     metadata of every value type (nested arrays too), alignment 64,
                                     one tensor of each type locr reads (F32, F16, BF16, Q8_0, Q4_0,
                                     Q4_1, Q5_0, Q5_1 quantized by gguf; Q4_K, Q5_K, Q6_K as random
                                     blocks with sane scales, since gguf cannot quantize K types),
                                     a 3-D F32 tensor and a Q3_K one (a type locr refuses to read)
  tests/fixtures/gguf/expected.gguf  the same tensors dequantized by gguf.quants.dequantize, as F32
  tests/fixtures/gguf/sources.gguf   the F32 values gguf quantized into q8_0 (for locr's quantizer)

Usage: python tools/reference/make_gguf_fixtures.py [OUTDIR]   (pip install gguf==0.19.0 numpy)
"""
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "gguf")


def k_blocks(rng, qtype, rows, cols):
    """Random K-quant blocks whose f16 scale fields are small finite numbers."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = rows * cols // block
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    scale_at = {T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208], T.Q3_K: [108]}[qtype]
    for at in scale_at:
        raw[:, at:at + 2] = rng.uniform(-0.05, 0.05, size=n_blocks).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(rows, cols // block * size)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261201)
    w = gguf.GGUFWriter(str(OUT / "types.gguf"), arch="qwen3")
    w.add_custom_alignment(64)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.15625)
    w.add_uint64("test.u64", 18000000000000000000)
    w.add_int64("test.i64", -9000000000000000000)
    w.add_float64("test.f64", -2.5e300)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "Grüße, 世界")
    w.add_array("test.array_i32", [1, -2, 3])
    w.add_array("test.array_str", ["<|im_start|>", "", "Ġhello"])
    w.add_array("test.array_nested", [[1, 2], [3]])

    expected, sources = {}, {}
    f32 = rng.standard_normal((3, 64)).astype(np.float32)
    w.add_tensor("f32", f32)
    expected["f32"] = f32
    w.add_tensor("f32_3d", np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    expected["f32_3d"] = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for name, qtype in (("f16", T.F16), ("bf16", T.BF16), ("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1),
                        ("q5_0", T.Q5_0), ("q5_1", T.Q5_1)):
        x = rng.standard_normal((3, 64)).astype(np.float32)
        q = quants.quantize(x, qtype)
        if qtype == T.Q8_0:
            sources[name] = x
        w.add_tensor(name, q, raw_dtype=qtype)
        expected[name] = quants.dequantize(q, qtype).astype(np.float32)
    for name, qtype in (("q4_k", T.Q4_K), ("q5_k", T.Q5_K), ("q6_k", T.Q6_K), ("q3_k", T.Q3_K)):
        q = k_blocks(rng, qtype, 2, 512)
        w.add_tensor(name, q, raw_dtype=qtype)
        if qtype != T.Q3_K:
            expected[name] = quants.dequantize(q, qtype).astype(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    e = gguf.GGUFWriter(str(OUT / "expected.gguf"), arch="expected")
    for name, x in expected.items():
        assert np.isfinite(x).all(), name
        e.add_tensor(name, np.ascontiguousarray(x, dtype=np.float32))
    e.write_header_to_file()
    e.write_kv_data_to_file()
    e.write_tensors_to_file()
    e.close()
    src = gguf.GGUFWriter(str(OUT / "sources.gguf"), arch="sources")
    for name, x in sources.items():
        src.add_tensor(name, x)
    src.write_header_to_file()
    src.write_kv_data_to_file()
    src.write_tensors_to_file()
    src.close()
    print("wrote", OUT / "types.gguf", OUT / "expected.gguf", OUT / "sources.gguf")


if __name__ == "__main__":
    main()
