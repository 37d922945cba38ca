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
  tests/fixtures/gguf/tiny_d.sha256                   "<sha256>  <size>  <file>" of tiny_d's text GGUF
                                                      --outtype f32 and q8_0 and its mmproj --outtype q8_0
                                                      (the files are not kept: tests compare locr's
                                                      whole files with these)

tiny_a is the model with the hub-form config (`architectures: LightOnOCRForConditionalGeneration`,
the name llama.cpp's LightOnOCR converter is registered for; its text_config says Qwen3ForCausalLM)
and all widths multiples of 32, so that --outtype q8_0 really quantizes every 2-D weight.
tiny_d is the opposite: text hidden size 48 and ffn 112 (head_dim 24), so that with --outtype q8_0
most text weights (and the mmproj's mm.2, 48 x 48) have rows that are not whole 32-element Q8_0
blocks and the converter falls back to F16 for them (only attn_output, rows of 96, is Q8_0 in the
text model); `locr quantize --type q8_0` does the same.

llama.cpp's source comes from the PyPI source package of llama-cpp-python (it vendors llama.cpp
with its converter and gguf-py); the script downloads and unpacks it into a temporary directory
and never copies any of it into the repository. Nothing here comes from locr's code.

Four patches, all to what the converter reads, not to what it writes:
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
- The converter registers LightOnOCR's mmproj under the hub's class name
  LightOnOCRForConditionalGeneration; tiny_d's config.json (written by transformers 5) says
  LightOnOcrForConditionalGeneration: the temporary copy says the hub's name (tiny_a already does;
  the text model goes by text_config.architectures, Qwen3ForCausalLM, either way).

Usage (CPU only, about a minute; needs network access to PyPI):
  python -m venv /tmp/gguf-ref && . /tmp/gguf-ref/bin/activate
  pip install -r tools/reference/requirements-gguf-models.txt
  python tools/reference/make_gguf_model_fixtures.py [OUTDIR]   # default tests/fixtures/gguf/models;
                                                                # the .sha256 files go to OUTDIR/..
"""
import hashlib
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
# Converted for a SHA-256 only: (model, [(file, outtype, mmproj)]), in tests/fixtures/gguf/<model>.sha256.
HASHED = [("tiny_d", [("tiny_d-f32.gguf", "f32", False), ("tiny_d-q8_0.gguf", "q8_0", False),
                      ("mmproj-tiny_d-q8_0.gguf", "q8_0", True)])]

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
    # PATCH: the converter knows LightOnOCR by the hub's class name only (transformers 5 writes
    # LightOnOcrForConditionalGeneration).
    model_cfg_path = dst / "config.json"
    model_cfg = json.loads(model_cfg_path.read_text())
    if model_cfg.get("architectures") == ["LightOnOcrForConditionalGeneration"]:
        model_cfg["architectures"] = ["LightOnOCRForConditionalGeneration"]
        model_cfg_path.write_text(json.dumps(model_cfg, indent=2))
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
        for name, files in HASHED:
            model = model_copy(ROOT / "tests" / "fixtures" / "models" / name, tmp)
            lines = []
            for file, t, mmproj in files:
                convert(lcpp, model, tmp / file, t, mmproj=mmproj)
                data = (tmp / file).read_bytes()
                lines.append(f"{hashlib.sha256(data).hexdigest()}  {len(data)}  {file}\n")
            (out_dir.parent / f"{name}.sha256").write_text("".join(lines))
            print(out_dir.parent / f"{name}.sha256")
            print("".join(lines), end="")
    link = out_dir / "tokenizer.json"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.relpath(ROOT / "tests" / "fixtures" / "models" / MODELS[0] / "tokenizer.json", out_dir))


if __name__ == "__main__":
    main()
