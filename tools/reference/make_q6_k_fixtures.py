#!/usr/bin/env python3
"""Reference bytes of llama.cpp's own Q6_K quantizer (quantize_row_q6_K_ref of ggml-quants.c) for
locr's (tests/unit/quant_q6_k_test.cc), on the inputs make_q4_k_fixtures.py writes:

  tests/fixtures/gguf/q4_k_source.f32   the 8 x 256 float32 source rows (make_q4_k_fixtures.py's;
                                        rewritten here with the same values)
  tests/fixtures/gguf/q6_k_ref.bin      quantize_row_q6_K_ref of them (8 x 210 bytes)
  tests/fixtures/gguf/q6_k_ref.f32      gguf's NumPy dequantization of q6_k_ref.bin (gguf.quants,
                                        llama.cpp's own Python package), 8 x 256 float32

ggml-quants.c is compiled as make_q4_k_fixtures.py does (llama-cpp-python 0.3.36's sources, gcc -O2,
no -march, into a temporary directory; nothing of it is kept).

Usage: python tools/reference/make_q6_k_fixtures.py LLAMA_CPP_PYTHON_SRC [OUTDIR]   (numpy, gguf, gcc)
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_q4_k_fixtures import sources  # noqa: E402

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml-quants.h"
void ggml_abort(const char* file, int line, const char* fmt, ...) { fprintf(stderr, "ggml_abort %s:%d\n", file, line); abort(); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { abort(); }
const char* ggml_type_name(enum ggml_type type) { abort(); }
size_t ggml_type_size(enum ggml_type type) { abort(); }
int main(int argc, char** argv) {
  enum { N = 8 * 256 };
  static float x[N];
  static unsigned char q6[8 * sizeof(block_q6_K)];
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, 4, N, f) != N) return 1;
  fclose(f);
  quantize_row_q6_K_ref(x, (block_q6_K*)q6, N);
  f = fopen(argv[2], "wb"); fwrite(q6, 1, sizeof q6, f); fclose(f);
  return sizeof(block_q6_K) == 210 ? 0 : 2;
}
"""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    import gguf

    ggml = Path(sys.argv[1]) / "vendor" / "llama.cpp" / "ggml"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "gguf"
    out.mkdir(parents=True, exist_ok=True)
    x = sources()
    (out / "q4_k_source.f32").write_bytes(x.tobytes())
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "harness.c").write_text(HARNESS)
        inc = ["-I", str(ggml / "include"), "-I", str(ggml / "src")]
        subprocess.run(["gcc", "-O2", "-w", *inc, "-c", str(ggml / "src" / "ggml-quants.c"), "-o", str(t / "q.o")], check=True)
        subprocess.run(["gcc", "-O2", "-w", *inc, str(t / "harness.c"), str(t / "q.o"), "-o", str(t / "h"), "-lm"], check=True)
        subprocess.run([str(t / "h"), str(out / "q4_k_source.f32"), str(out / "q6_k_ref.bin")], check=True)
    q = np.frombuffer((out / "q6_k_ref.bin").read_bytes(), dtype=np.uint8).reshape(8, 210)
    deq = gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q6_K).astype("<f4")
    (out / "q6_k_ref.f32").write_bytes(deq.tobytes())
    for n in ("q4_k_source.f32", "q6_k_ref.bin", "q6_k_ref.f32"):
        print(out / n, (out / n).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
