#!/usr/bin/env python3
"""GGUF fixtures of the Qwen3.5 family (LightOnOCR-3-0.8B / -4B layouts) for locr's GGUF loader,
written by llama.cpp's OWN converter (convert_hf_to_gguf.py: Qwen3_5TextModel for the text model,
Qwen3VLVisionModel for the mmproj) from the tiny transformers fixture models of tests/fixtures/qwen35/
(qwen35_a: the 0.8B layout, tied head; qwen35_b: the 4B layout, value heads = 2 x key heads, which the
converter reorders, untied head):

  tests/fixtures/gguf/qwen35/<model>/<model>-{f32,bf16,q8_0}.gguf       text, --outtype f32 / bf16 / q8_0
  tests/fixtures/gguf/qwen35/<model>/mmproj-<model>-{f32,f16}.gguf     vision + merger, --mmproj
  tests/fixtures/gguf/qwen35/<model>/preprocessor_config.json           a symlink to the model's: the
                                                                        image processor's pixel bounds
                                                                        are not in GGUF
No tokenizer.json goes next to them: the loader's tokenizer comes from the GGUF's metadata.

llama.cpp's source comes from the PyPI source package of llama-cpp-python (it vendors llama.cpp with
its converter and gguf-py), downloaded into a temporary directory as make_gguf_model_fixtures.py
does; nothing of it is copied into the repository, and nothing here comes from locr's code.

One patch, to what the converter reads: it refuses a BPE tokenizer whose pre-tokenizer hash it does
not know (it hashes the ids of a test text), and the tiny tokenizer is one trained for the fixtures
with Qwen3.5's pipeline, so get_vocab_base_pre is monkeypatched to answer "qwen35", the
pre-tokenizer name of the real LightOnOCR-3 GGUFs. `--no-mtp`: the fixtures have no multi-token
prediction layers (the text converter asserts some unless told so; the mmproj converter refuses the flag).

Usage (CPU only, under a minute; needs network access to PyPI; the converter's pinned versions):
  python -m venv /tmp/gguf-ref && . /tmp/gguf-ref/bin/activate
  pip install -r tools/reference/requirements-gguf-models.txt
  python tools/reference/make_gguf_qwen35_fixtures.py [OUTDIR]   # default tests/fixtures/gguf/qwen35
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_gguf_model_fixtures import ROOT, fetch_llama_cpp  # noqa: E402

MODELS = ["qwen35_a", "qwen35_b"]
TEXT_TYPES = ["f32", "bf16", "q8_0"]
MMPROJ_TYPES = ["f32", "f16"]

CHILD = r"""
import sys
lcpp = sys.argv[1]
sys.path.insert(0, lcpp + "/gguf-py")
sys.path.insert(0, lcpp)
import conversion.base as base
# PATCH: the tiny tokenizer's pre-tokenizer hash is unknown to the converter; its pipeline is Qwen3.5's.
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen35"
sys.argv = [lcpp + "/convert_hf_to_gguf.py"] + sys.argv[2:]
import runpy
runpy.run_path(lcpp + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def convert(lcpp: Path, model: Path, out: Path, outtype: str, mmproj: bool):
    args = [sys.executable, "-c", CHILD, str(lcpp), str(model), "--outfile", str(out), "--outtype", outtype]
    args.append("--mmproj" if mmproj else "--no-mtp")
    subprocess.run(args, check=True)
    print(f"{out}: {out.stat().st_size} bytes")


def main():
    out_root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "gguf" / "qwen35"
    with tempfile.TemporaryDirectory() as tmp_s:
        lcpp = fetch_llama_cpp(Path(tmp_s))
        for name in MODELS:
            model = ROOT / "tests" / "fixtures" / "qwen35" / name
            out = out_root / name
            out.mkdir(parents=True, exist_ok=True)
            for t in TEXT_TYPES:
                convert(lcpp, model, out / f"{name}-{t}.gguf", t, mmproj=False)
            for t in MMPROJ_TYPES:
                convert(lcpp, model, out / f"mmproj-{name}-{t}.gguf", t, mmproj=True)
            link = out / "preprocessor_config.json"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(os.path.relpath(model / "preprocessor_config.json", out))


if __name__ == "__main__":
    main()
