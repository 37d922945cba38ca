#!/usr/bin/env python3
"""GGUF model fixtures for locr's GGUF loader, written by llama.cpp's OWN converter
(convert_hf_to_gguf.py) from the tiny transformers fixture model tiny_a (tests/fixtures/models/),
as the community converts LightOnOCR: a text GGUF of arch `qwen3` and an `mmproj` GGUF of arch
`clip` with projector type `lightonocr`.

  tests/fixtures/gguf/models/tiny_a-f32.gguf          text, --outtype f32   (lossless)
  tests/fixtures/gguf/models/tiny_a-f16.gguf          text, --outtype f16   (2-D weights as F16)
  tests/fixtures/gguf/models/tiny_a-bf16.gguf         text, --outtype bf16
  tests/fixtures/gguf/models/tiny_a-q8_0.gguf         text, --outtype q8_0  (2-D weights as Q8_0)
  tests/fixtures/gguf/models/mmproj-tiny_a-f32.gguf   vision + projector, --mmproj --outtype f32
  tests/fixtures/gguf/models/mmproj-tiny_a-f16.gguf   vision + projector, --mmproj --outtype f16
  tests/fixtures/gguf/models/tokenizer.json           a symlink to tiny_a's: locr reads a tokenizer.json
                                                      next to the text GGUF when there is one

tiny_a is the model with the hub-form config (`architectures: LightOnOCRForConditionalGeneration`,
the name llama.cpp's LightOnOCR converter is registered for; its text_config says Qwen3ForCausalLM)
and all widths multiples of 32, so that --outtype q8_0 really quantizes every 2-D weight.

llama.cpp's source comes from the PyPI source package of llama-cpp-python (it vendors llama.cpp
with its converter and gguf-py); the script downloads and unpacks it into a temporary directory
and never copies any of it into the repository. Nothing here comes from locr's code.

Three patches, all to what the converter reads, not to what it writes:
- The converter refuses a BPE tokenizer whose pre-tokenizer hash it does not know (it hashes the
  ids of a test text); the tiny tokenizer is a Qwen2-style byte-level BPE (same regex, same
  NFC + ByteLevel pipeline) trained on a small corpus, so its hash is unknown: get_vocab_base_pre
  is monkeypatched to answer "qwen2", the pre-tokenizer of the real LightOnOCR GGUFs.
- The converter's mmproj tensor-name map has entries for blocks 0..block_count-1 only, and it maps
  the projector's linear_1 / linear_2 as "blocks" 1 and 2 (mm.1, mm.2): with tiny_a's 2 vision
  layers linear_2 has no entry. The map is built for at least 3 blocks (the real model has 24).
- transformers 4.57 (the converter's pinned version) does not read the tokenizer_config.json that
  transformers 5 wrote (`tokenizer_class: TokenizersBackend`, `extra_special_tokens: []`): the
  model is converted from a temporary copy whose tokenizer_config.json says `Qwen2TokenizerFast`
  (what the hub file says, up to the Fast suffix) without those two keys; tokenizer.json and
  everything else is unchanged.

Usage (CPU only, about a minute; needs network access to PyPI):
  python -m venv /tmp/gguf-ref && . /tmp/gguf-ref/bin/activate
  pip install -r tools/reference/requirements-gguf-models.txt
  python tools/reference/make_gguf_model_fixtures.py [OUTDIR]
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"
ROOT = Path(__file__).resolve().parents[2]
MODELS = ["tiny_a"]
TEXT_TYPES = ["f32", "f16", "bf16", "q8_0"]
MMPROJ_TYPES = ["f32", "f16"]

# Run in a child interpreter for each conversion (the converter keeps global state): puts
# llama.cpp's gguf-py and conversion package on sys.path, applies the pre-tokenizer patch, runs main().
CHILD = r"""
import sys
lcpp = sys.argv[1]
sys.path.insert(0, lcpp + "/gguf-py")
sys.path.insert(0, lcpp)
import conversion.base as base
# PATCH: the tiny tokenizer's pre-tokenizer hash is unknown to the converter; it is Qwen2's.
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
# PATCH: the mmproj name map covers blocks 0..n_blocks-1, and the projector's linear_1/linear_2 are
# mapped as blocks 1 and 2 (mm.{bid}); with tiny_a's 2 vision layers linear_2 would be unmapped.
import gguf
_name_map = gguf.get_tensor_name_map
gguf.get_tensor_name_map = lambda arch, n: _name_map(arch, max(n, 3) if arch == gguf.MODEL_ARCH.MMPROJ else n)
sys.argv = [lcpp + "/convert_hf_to_gguf.py"] + sys.argv[2:]
import runpy
runpy.run_path(lcpp + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def fetch_llama_cpp(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(tmp)], check=True)
    sdist = next(tmp.glob("llama_cpp_python-*.tar.gz"))
    with tarfile.open(sdist) as t:
        t.extractall(tmp, filter="data")
    lcpp = tmp / f"llama_cpp_python-{LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp"
    if not (lcpp / "convert_hf_to_gguf.py").is_file():
        sys.exit(f"no convert_hf_to_gguf.py in {lcpp}")
    return lcpp


def model_copy(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("cases"))
    cfg_path = dst / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    # PATCH: transformers 4.57 cannot load "TokenizersBackend" (a transformers 5 name) nor a list
    # for extra_special_tokens (empty here).
    cfg["tokenizer_class"] = "Qwen2TokenizerFast"
    for k in ("backend", "extra_special_tokens"):
        cfg.pop(k, None)
    cfg_path.write_text(json.dumps(cfg, indent=2))
    return dst


def convert(lcpp: Path, model: Path, out: Path, outtype: str, mmproj: bool):
    args = [sys.executable, "-c", CHILD, str(lcpp), str(model), "--outfile", str(out), "--outtype", outtype]
    if mmproj:
        args.append("--mmproj")
    subprocess.run(args, check=True)
    print(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {out.stat().st_size} bytes")


def main():
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "gguf" / "models"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        lcpp = fetch_llama_cpp(tmp)
        for name in MODELS:
            model = model_copy(ROOT / "tests" / "fixtures" / "models" / name, tmp)
            for t in TEXT_TYPES:
                convert(lcpp, model, out_dir / f"{name}-{t}.gguf", t, mmproj=False)
            for t in MMPROJ_TYPES:
                convert(lcpp, model, out_dir / f"mmproj-{name}-{t}.gguf", t, mmproj=True)
    link = out_dir / "tokenizer.json"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.relpath(ROOT / "tests" / "fixtures" / "models" / MODELS[0] / "tokenizer.json", out_dir))


if __name__ == "__main__":
    main()
