#!/usr/bin/env python3
"""Check that `locr make-model` output is a model transformers loads and agrees with locr on.

Runs `locr make-model --preset tiny`, loads the directory with transformers'
`LightOnOcrForConditionalGeneration.from_pretrained` (FP32, eager attention) and `AutoTokenizer`,
and compares, for a text prompt and an image prompt:
  - the prompt token ids (transformers' tokenizer + chat template vs `locr dump`'s input_ids),
  - every hidden state and the last-position logits (transformers vs `locr dump --backend ref`).

Exit status: 0 pass, 1 mismatch, 77 when torch/transformers are not importable (CTest SKIP).
Usage: check_make_model.py --locr build/bin/locr [--workdir DIR] [--image FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, LightOnOcrForConditionalGeneration
except Exception as e:  # noqa: BLE001 - any import problem means "cannot run here"
    print(f"SKIP: transformers/torch not importable ({e})")
    sys.exit(77)


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def compare(name, a, b, atol):
    a = a.double().flatten()
    b = b.double().flatten()
    err = (a - b).abs().max().item()
    cos = torch.nn.functional.cosine_similarity(a, b, dim=0).item()
    ok = err < atol and cos > 0.99999
    print(f"  {name:12s} max_abs={err:.3e} cos={cos:.8f} {'ok' if ok else 'MISMATCH'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locr", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--image", help="image for the image case (default: a fixture image)")
    ap.add_argument("--seed", default="3")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    work = args.workdir or tempfile.mkdtemp(prefix="locr-make-model-")
    model_dir = os.path.join(work, "tiny")
    run([args.locr, "make-model", "--preset", "tiny", "--seed", args.seed, "--out", model_dir, "--quiet"])

    tok = AutoTokenizer.from_pretrained(model_dir)
    assert tok.convert_tokens_to_ids("<|image_pad|>") == 151655, "image token id"
    assert tok.convert_tokens_to_ids("<|im_end|>") == 151645, "im_end id"
    assert tok.eos_token_id == 151645 and tok.pad_token_id == 151643
    model = LightOnOcrForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    assert model.config.image_token_id == 151655

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    image = args.image or os.path.join(repo, "tests", "fixtures", "images", "page_portrait.png")
    cases = [
        ("text", ["--prompt", "The future of AI is", "--system", "You are a concise assistant."],
         [{"role": "system", "content": "You are a concise assistant."},
          {"role": "user", "content": "The future of AI is"}]),
        ("image", ["--image", image, "--image-align", "14"], None),
    ]
    ok = True
    for name, flags, messages in cases:
        out = os.path.join(work, f"{name}.safetensors")
        run([args.locr, "dump", "--model", model_dir, "--backend", "ref", "--max-tokens", "4", "--out", out, *flags])
        d = load_file(out)
        ids = d["input_ids"].long()
        print(f"case {name}: {ids.numel()} tokens")
        if messages is not None:
            hf_ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
            if hasattr(hf_ids, "tolist"):
                hf_ids = hf_ids.tolist()
            if hf_ids and isinstance(hf_ids[0], list):
                hf_ids = hf_ids[0]
            same = list(hf_ids) == ids.tolist()
            print(f"  token ids {'ok' if same else 'MISMATCH'}: transformers {list(hf_ids)[:16]}... locr {ids.tolist()[:16]}...")
            ok &= same
        kwargs = {}
        if "pixel_values" in d:
            pv = d["pixel_values"].unsqueeze(0)
            kwargs = {"pixel_values": pv, "image_sizes": torch.tensor([[pv.shape[2], pv.shape[3]]])}
        with torch.no_grad():
            o = model(input_ids=ids.unsqueeze(0), output_hidden_states=True, **kwargs)
        ok &= compare("logits", o.logits[0, -1], d["logits"], 2e-3)
        for i, h in enumerate(o.hidden_states):
            key = f"hidden.{i}"
            if key in d:
                ok &= compare(key, h[0], d[key], 2e-3)
            else:
                print(f"  {key} missing in the locr dump")
                ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
