#!/usr/bin/env python3
"""Reference bytes of llama.cpp's own Q4_K and Q8_K quantizers (quantize_row_q4_K_ref,
quantize_row_q8_K_ref of ggml-quants.c) for locr's quantizers (tests/unit/quant_q4_k_test.cc):

  tests/fixtures/gguf/q4_k_source.f32   8 x 256 float32 values (little-endian): gaussian rows of two
                                        scales, all-positive, all-negative, an outlier with a zero
                                        sub-block, constant sub-blocks, all zeros
  tests/fixtures/gguf/q4_k_ref.bin      quantize_row_q4_K_ref of them (8 x 144 bytes)
  tests/fixtures/gguf/q8_k_ref.bin      quantize_row_q8_K_ref of them (8 x 292 bytes: float d,
                                        int8 qs[256], int16 bsums[16]; zeroed first, since llama.cpp
                                        leaves the bsums of an all-zero block unwritten)

ggml-quants.c is compiled from llama.cpp's sources as the llama-cpp-python source package ships
them (pip download --no-binary :all: --no-deps llama-cpp-python==0.3.36; unpack it), with gcc -O2
and no -march (no FMA contraction: locr's baseline code computes the same float operations), into
a temporary directory; nothing of it is kept.

Usage: python tools/reference/make_q4_k_fixtures.py LLAMA_CPP_PYTHON_SRC [OUTDIR]   (numpy, gcc)
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

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
  static unsigned char q4[8 * sizeof(block_q4_K)], q8[8 * sizeof(block_q8_K)];
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, 4, N, f) != N) return 1;
  fclose(f);
  memset(q8, 0, sizeof q8);
  quantize_row_q4_K_ref(x, (block_q4_K*)q4, N);
  quantize_row_q8_K_ref(x, (block_q8_K*)q8, N);
  f = fopen(argv[2], "wb"); fwrite(q4, 1, sizeof q4, f); fclose(f);
  f = fopen(argv[3], "wb"); fwrite(q8, 1, sizeof q8, f); fclose(f);
  return sizeof(block_q4_K) == 144 && sizeof(block_q8_K) == 292 ? 0 : 2;
}
"""


def sources():
    rng = np.random.default_rng(20261202)
    rows = [rng.normal(0, 1, 256), rng.normal(0, 1, 256), rng.normal(0, 0.02, 256),
            rng.uniform(0.1, 1.0, 256), -rng.uniform(0.05, 2.0, 256)]
    r = rng.normal(0, 0.5, 256)
    r[32:64] = 0
    r[200] = 40.0
    rows.append(r)
    rows.append(np.repeat(rng.uniform(-1, 1, 8), 32))
    rows.append(np.zeros(256))
    return np.concatenate(rows).astype("<f4")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
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
        subprocess.run([str(t / "h"), str(out / "q4_k_source.f32"), str(out / "q4_k_ref.bin"), str(out / "q8_k_ref.bin")],
                       check=True)
    for n in ("q4_k_source.f32", "q4_k_ref.bin", "q8_k_ref.bin"):
        print(out / n, (out / n).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
