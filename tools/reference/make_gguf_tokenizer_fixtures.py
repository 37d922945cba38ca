#!/usr/bin/env python3
"""Vocab-only GGUF fixtures for locr's GGUF tokenizer (tests/unit/tokenizer_gguf_test.cc), written by
llama.cpp's own converter, convert_hf_to_gguf.py --vocab-only, from Hugging Face model directories:

  tests/fixtures/gguf/tokenizer_tiny_a.gguf     tests/fixtures/models/tiny_a as it is (its tokenizer.json,
                                                tokenizer_config.json, chat_template.jinja, config.json)
  tests/fixtures/gguf/tokenizer_qwen2.gguf.gz   the real Qwen vocabulary: a model directory holding
                                                tests/fixtures/tokenizer/qwen2_tokenizer.json.gz (the
                                                tokenizer.json transformers' TikTokenConverter builds from
                                                qwen.tiktoken, see make_tokenizer_goldens.py), tiny_a's
                                                tokenizer_config.json and chat_template.jinja (the real
                                                LightOnOCR-2 ones) and tiny_a's config.json with the real
                                                vocab_size 151936 and special ids; gzipped (-n, so two runs
                                                give the same bytes)

Nothing here comes from locr's code. llama.cpp's source is taken from the PyPI source package of
llama-cpp-python (which vendors llama.cpp): `pip download --no-deps --no-binary :all:
llama-cpp-python==0.3.36`, extracted to a temporary directory (or LLAMA_CPP_DIR=.../vendor/llama.cpp to
reuse an extracted copy). Its gguf-py goes first on sys.path, so the `gguf` writer is the one of that
llama.cpp, not the PyPI package.

Two changes to what the converter does, both outside the vocabulary code it writes:
  * get_vocab_base_pre() identifies the pre-tokenizer by hashing the ids of a check string against a
    table of known models; a tiny trained vocabulary (and the every-split merges of the qwen.tiktoken
    tokenizer.json) give ids no table entry has, so it would stop with "BPE pre-tokenizer was not
    recognized". Both tokenizers use Qwen2's Split regex, so it is patched to return "qwen2", the value
    it returns for the real Qwen2/Qwen3 tokenizers.
  * The converter imports torch at the top and enters torch.inference_mode(), but --vocab-only reads
    no tensor. When torch is not installed, a stand-in module that only satisfies those imports is put
    in sys.modules (PyPI's torch wheel pulls gigabytes of CUDA libraries). With torch installed, the
    real one is used; the output is the same.

Usage: python tools/reference/make_gguf_tokenizer_fixtures.py [OUTDIR]
       (pip install -r tools/reference/requirements.txt: transformers, tokenizers, numpy, Jinja2, pyyaml)
"""
import contextlib
import gzip
import json
import os
import runpy
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "gguf")
LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"

# The real vocabulary's numbers (model-spec §1, §4): embedding rows, <|im_end|>, <|endoftext|>, <|image_pad|>.
REAL_VOCAB_SIZE, REAL_EOS, REAL_PAD, REAL_IMAGE = 151936, 151645, 151643, 151655


def llama_cpp_dir(tmp: Path) -> Path:
    if os.environ.get("LLAMA_CPP_DIR"):
        return Path(os.environ["LLAMA_CPP_DIR"])
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", LLAMA_CPP_PYTHON,
                    "-d", str(tmp)], check=True)
    (sdist,) = tmp.glob("llama_cpp_python-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp, filter="data")
    (src,) = tmp.glob("llama_cpp_python-*/vendor/llama.cpp")
    return src


def torch_stand_in():
    """Enough of `torch` for the converter's imports and module-level annotations (no tensor is made)."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    # transformers decides once (cached) whether torch is there; let it see that it is not, before the
    # stand-in is in sys.modules. The converter's tokenizer code runs transformers without torch.
    import transformers.utils
    assert not transformers.utils.is_torch_available()

    class _Any:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, name):
            return _Any()

        def __call__(self, *a, **k):
            return _Any()

    mod = types.ModuleType("torch")
    mod.__path__ = []
    mod.inference_mode = lambda *a, **k: contextlib.nullcontext()
    mod.no_grad = mod.inference_mode
    mod.Tensor = type("Tensor", (), {})
    mod.__getattr__ = lambda name: type(name, (_Any,), {})
    sys.modules["torch"] = mod


def convert(lcpp: Path, model_dir: Path, out: Path):
    sys.path.insert(0, str(lcpp / "gguf-py"))
    sys.path.insert(0, str(lcpp))
    torch_stand_in()
    import conversion.base as base  # llama.cpp's converter package (next to convert_hf_to_gguf.py)

    # See the module docstring: the hash table does not know tiny vocabularies; both are Qwen2's regex.
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", "--vocab-only", "--outtype", "f32", "--outfile", str(out), str(model_dir)]
    try:
        runpy.run_path(str(lcpp / "convert_hf_to_gguf.py"), run_name="__main__")
    finally:
        sys.argv = argv


def real_vocab_model(tmp: Path) -> Path:
    d = tmp / "qwen2_vocab"
    d.mkdir()
    tiny_a = ROOT / "tests" / "fixtures" / "models" / "tiny_a"
    with gzip.open(ROOT / "tests" / "fixtures" / "tokenizer" / "qwen2_tokenizer.json.gz", "rb") as f:
        (d / "tokenizer.json").write_bytes(f.read())
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(tiny_a / name, d / name)
    cfg = json.loads((tiny_a / "config.json").read_text())
    cfg["text_config"]["vocab_size"] = REAL_VOCAB_SIZE
    cfg["image_token_id"] = REAL_IMAGE
    cfg["eos_token_id"], cfg["pad_token_id"] = REAL_EOS, REAL_PAD
    (d / "config.json").write_text(json.dumps(cfg, indent=2))
    return d


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        lcpp = llama_cpp_dir(tmp)
        convert(lcpp, ROOT / "tests" / "fixtures" / "models" / "tiny_a", OUT / "tokenizer_tiny_a.gguf")
        plain = tmp / "tokenizer_qwen2.gguf"
        convert(lcpp, real_vocab_model(tmp), plain)
        with open(plain, "rb") as src, open(OUT / "tokenizer_qwen2.gguf.gz", "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as dst:
                shutil.copyfileobj(src, dst)
        print("wrote", OUT / "tokenizer_tiny_a.gguf", OUT / "tokenizer_qwen2.gguf.gz",
              f"({plain.stat().st_size} bytes before gzip)")


if __name__ == "__main__":
    main()
