#!/usr/bin/env python3
"""The SHA-256 of what llama.cpp's own quantizer writes for `locr quantize --type q4_k_m`
(tests/server/test_quantize.py compares locr's text GGUF with it, whole file):

  tests/fixtures/gguf/tiny_k-q4_k_m.sha256   "<sha256>  <size>" of llama_model_quantize(ftype
                                             LLAMA_FTYPE_MOSTLY_Q4_K_M, no importance matrix) run on
                                             the f32 GGUF `locr quantize --type f32` writes for
                                             `locr make-model --preset tiny-k --dtype f32` (seed 0)
  tests/fixtures/gguf/tiny_d-q4_k_m.sha256   the same for tests/fixtures/models/tiny_d, whose text
                                             rows (48, 96, 112 elements) are not whole 256-blocks:
                                             llama-quantize's fallbacks (attn_output Q4_K -> Q5_0,
                                             everything else F16); its f32 file is the converter's
                                             (tests/fixtures/gguf/tiny_d.sha256)
  tests/fixtures/gguf/qwen35/<m>-q4_k_m.sha256 the same for the Qwen3.5 family (arch qwen35): m =
                                             qwen35_a, qwen35_b from the converter's own f32 files
                                             (tests/fixtures/gguf/qwen35/<m>/<m>-f32.gguf; widths
                                             of 32 to 128: every tensor falls back, Q4_K -> Q5_0,
                                             Q6_K -> Q8_0), and m = tiny_qk, `locr make-model
                                             --preset tiny-qwen35-k --dtype f32` (rows of whole
                                             256-blocks: Q4_K and Q6_K) through `locr quantize
                                             --type f32` (the converter's bytes on the fixtures)

(`--type f32` is byte for byte llama.cpp's converter on the fixture models, tests/unit/
gguf_export_test.cc, so this is llama.cpp's convert + llama-quantize pipeline.) The quantizer is
libllama from llama-cpp-python 0.3.36's sources (pip download --no-binary :all: --no-deps
llama-cpp-python==0.3.36; unpack; configure vendor/llama.cpp out of tree with cmake and build the
`llama` target); a 10-line C driver calling llama_model_quantize is compiled against it in a
temporary directory; nothing of it is kept.

Usage: python tools/reference/make_q4_k_m_fixture.py LLAMA_CPP_PYTHON_SRC LIBLLAMA_DIR LOCR_BIN [OUTDIR]   (gcc)
"""
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVER = r"""
#include <stdio.h>
#include "llama.h"
int main(int argc, char** argv) {
  llama_backend_init();
  llama_model_quantize_params p = llama_model_quantize_default_params();
  p.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
  p.nthread = 2;
  return (int)llama_model_quantize(argv[1], argv[2], &p);
}
"""


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    src = Path(sys.argv[1]) / "vendor" / "llama.cpp"
    lib, locr = Path(sys.argv[2]).resolve(), sys.argv[3]
    out = Path(sys.argv[4]) if len(sys.argv) > 4 else Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "gguf"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        subprocess.run([locr, "make-model", "--preset", "tiny-k", "--dtype", "f32", "--out", str(t / "tiny_k"), "--quiet"],
                       check=True)
        (t / "q.c").write_text(DRIVER)
        subprocess.run(["gcc", "-O1", "-I", str(src / "include"), "-I", str(src / "ggml" / "include"), str(t / "q.c"),
                        "-o", str(t / "q"), "-L", str(lib), "-lllama", f"-Wl,-rpath,{lib}"], check=True)
        root = Path(__file__).resolve().parents[2]
        subprocess.run([locr, "make-model", "--preset", "tiny-qwen35-k", "--dtype", "f32", "--out", str(t / "tiny_qk"),
                        "--quiet"], check=True)
        conv = root / "tests" / "fixtures" / "gguf" / "qwen35"
        runs = [("tiny_k", t / "tiny_k", out), ("tiny_d", root / "tests" / "fixtures" / "models" / "tiny_d", out),
                ("tiny_qk", t / "tiny_qk", out / "qwen35")]
        runs += [(m, conv / m / f"{m}-f32.gguf", out / "qwen35") for m in ("qwen35_a", "qwen35_b")]
        for name, model, dest in runs:
            if model.suffix == ".gguf":  # the converter's own f32 file
                (t / f"{name}-f32.gguf").write_bytes(model.read_bytes())
            else:
                subprocess.run([locr, "quantize", str(model), str(t / f"{name}-f32.gguf"), "--type", "f32"], check=True,
                               stdout=subprocess.DEVNULL)
            subprocess.run([str(t / "q"), str(t / f"{name}-f32.gguf"), str(t / f"{name}-q4_k_m.gguf")], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            data = (t / f"{name}-q4_k_m.gguf").read_bytes()
            line = f"{hashlib.sha256(data).hexdigest()}  {len(data)}\n"
            (dest / f"{name}-q4_k_m.sha256").write_text(line)
            print(dest / f"{name}-q4_k_m.sha256", line.strip())


if __name__ == "__main__":
    main()
