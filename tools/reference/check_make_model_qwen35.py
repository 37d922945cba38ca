#!/usr/bin/env python3
"""Check that `locr make-model`'s Qwen3.5 presets (LightOnOCR-3) write directories transformers loads.

Runs `locr make-model --preset tiny-qwen35` (or checks an existing directory, e.g. the output of
`--preset lightonocr-3-0.8b`, with --dir) and, with transformers 5.24:
  - config.json: Qwen3_5Config.from_pretrained + save_pretrained writes the same text back;
  - the tensors: Qwen3_5ForConditionalGeneration.from_pretrained reports no missing, unexpected or
    mismatched keys, the head is tied as the config says, and the parameter count equals the file's;
  - the tokenizer: AutoTokenizer gives Qwen3_5Tokenizer, the special tokens sit at the ids of
    config.json / generation_config.json, and it tokenises like the `tokenizers` library reading
    tokenizer.json literally (both pre-tokenizer regexes agree);
  - the processor: AutoProcessor gives Qwen3VLProcessor with Qwen2-VL image processing (patch 16,
    merge 2, mean = std = 0.5) and renders LightOnOCR-3's request (enable_thinking false);
  - a forward pass on that request (image + text) and 4 greedy steps: finite, logits of O(1) spread.

Exit status: 0 pass, 1 mismatch, 77 when torch/transformers are not importable (CTest SKIP).
Usage: check_make_model_qwen35.py --locr build/bin/locr [--workdir DIR] [--dir MODEL_DIR] [--image FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import torch
    from PIL import Image
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from transformers import AutoProcessor, AutoTokenizer, Qwen3_5Config, Qwen3_5ForConditionalGeneration
    from transformers.models.qwen3_5 import tokenization_qwen3_5
except Exception as e:  # noqa: BLE001 - any import problem means "cannot run here"
    print(f"SKIP: transformers/torch not importable ({e})")
    sys.exit(77)

OK = True


def check(cond, what):
    global OK
    print(f"  {'ok' if cond else 'MISMATCH'}: {what}", flush=True)
    OK &= bool(cond)


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locr", help="locr binary (makes the tiny-qwen35 preset)")
    ap.add_argument("--dir", help="check this existing directory instead")
    ap.add_argument("--workdir")
    ap.add_argument("--image", help="page image (default: a fixture image)")
    ap.add_argument("--seed", default="3")
    args = ap.parse_args()
    torch.manual_seed(0)
    work = args.workdir or tempfile.mkdtemp(prefix="locr-make-model-qwen35-")
    os.makedirs(work, exist_ok=True)
    if args.dir:
        model_dir = args.dir
    else:
        if not args.locr:
            ap.error("--locr or --dir is required")
        model_dir = os.path.join(work, "tiny-qwen35")
        run([args.locr, "make-model", "--preset", "tiny-qwen35", "--seed", args.seed, "--out", model_dir, "--quiet"])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    image_path = args.image or os.path.join(repo, "tests", "fixtures", "images", "page_small.png")

    print("config.json")
    ours = open(os.path.join(model_dir, "config.json"), encoding="utf-8").read()
    cfg = Qwen3_5Config.from_pretrained(model_dir)
    resaved = os.path.join(work, "resaved")
    cfg.save_pretrained(resaved)
    theirs = open(os.path.join(resaved, "config.json"), encoding="utf-8").read()
    check(ours == theirs, "Qwen3_5Config.from_pretrained + save_pretrained writes config.json back byte for byte")
    if ours != theirs:
        import difflib

        print("".join(difflib.unified_diff(ours.splitlines(True), theirs.splitlines(True), "ours", "transformers")))
    tc = cfg.text_config
    check(tc.layer_types == [("full_attention" if (i + 1) % 4 == 0 else "linear_attention") for i in range(tc.num_hidden_layers)],
          "layer_types [L, L, L, F] x n")
    check(tc.rope_parameters == {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                                 "mrope_section": [11, 11, 10], "mrope_interleaved": True},
          f"rope_parameters {tc.rope_parameters}")

    print("weights")
    model, info = Qwen3_5ForConditionalGeneration.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    model.eval()
    for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        check(not info.get(k), f"{k}: {list(info.get(k) or [])[:5]}")
    tied = model.lm_head.weight.data_ptr() == model.model.language_model.embed_tokens.weight.data_ptr()
    check(tied == bool(cfg.tie_word_embeddings), f"lm_head tied = {tied}")
    file_params = 0
    with safe_open(os.path.join(model_dir, "model.safetensors"), framework="pt") as f:
        names = set(f.keys())
        for k in names:
            n = 1
            for d in f.get_slice(k).get_shape():
                n *= d
            file_params += n
    model_params = sum(p.numel() for p in model.parameters())
    check(file_params == model_params, f"parameters: file {file_params:,} = model {model_params:,}")
    vis = sum(p.numel() for n, p in model.named_parameters() if n.startswith("model.visual."))
    print(f"  text {model_params - vis:,} + vision {vis:,}")
    a_log = [p.detach() for n, p in model.named_parameters() if n.endswith("A_log")]
    check(all(float(p.min()) >= 0 and float(p.max()) <= 2.7726 for p in a_log), "A_log in [0, log 16]")

    print("tokenizer")
    tok = AutoTokenizer.from_pretrained(model_dir)
    check(type(tok).__name__ == "Qwen3_5Tokenizer", f"AutoTokenizer -> {type(tok).__name__}")
    base = cfg.image_token_id - 12
    for i, name in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]):
        check(tok.convert_tokens_to_ids(name) == base + i, f"{name} = {base + i}")
    check(tok.convert_tokens_to_ids("<|image_pad|>") == cfg.image_token_id, "<|image_pad|> = image_token_id")
    check(tok.convert_tokens_to_ids("<|video_pad|>") == cfg.video_token_id, "<|video_pad|> = video_token_id")
    check(tok.convert_tokens_to_ids("<|vision_start|>") == cfg.vision_start_token_id, "<|vision_start|>")
    check(tok.convert_tokens_to_ids("<|vision_end|>") == cfg.vision_end_token_id, "<|vision_end|>")
    check(tok.convert_tokens_to_ids("</think>") == base + 25, "</think>")
    check(tok.eos_token_id == base + 2 and tok.pad_token_id == base, "eos <|im_end|>, pad <|endoftext|>")
    gen = json.load(open(os.path.join(model_dir, "generation_config.json")))
    check(gen["eos_token_id"] == [base + 2, base], f"generation eos {gen['eos_token_id']}")
    raw = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    regex = json.load(open(os.path.join(model_dir, "tokenizer.json")))["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    check(regex == tokenization_qwen3_5.PRETOKENIZE_REGEX, "tokenizer.json split regex = Qwen3_5Tokenizer's")
    texts = ["Hello, world! I'm fine; they've gone.", "Ceci est un café : 3,5 millions d'euros.",
             "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์", "اَلْعَرَبِيَّةُ لُغَةٌ", "def f(x):\n    return x + 1\n\n\nend",
             "| a | b |\n|---|---|\n| 1 | 2 |", "<|im_start|>user\nHi<|im_end|>"]
    for t in texts:
        a = tok.encode(t, add_special_tokens=False)
        b = raw.encode(t, add_special_tokens=False).ids
        check(a == b and tok.decode(a) == t, f"ids and round trip of {t[:24]!r} ({len(a)} tokens)")

    print("processor")
    proc = AutoProcessor.from_pretrained(model_dir)
    ip = proc.image_processor
    check(type(proc).__name__ == "Qwen3VLProcessor", f"AutoProcessor -> {type(proc).__name__}")
    check("Qwen2VLImageProcessor" in type(ip).__name__, f"image processor {type(ip).__name__}")
    check((ip.patch_size, ip.merge_size, ip.temporal_patch_size) == (16, 2, 2), "patch 16, merge 2, temporal 2")
    check(list(ip.image_mean) == [0.5] * 3 and list(ip.image_std) == [0.5] * 3, "mean = std = 0.5")
    check(ip.size == {"shortest_edge": 65536, "longest_edge": 16777216}, f"size {ip.size}")
    messages = [{"role": "user", "content": [{"type": "image"}]}]
    prompt = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, enable_thinking=False)
    want = ("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\n")
    check(prompt == want, f"LightOnOCR-3 prompt {prompt!r}")
    image = Image.open(image_path).convert("RGB")
    inputs = proc(text=[prompt], images=[image], return_tensors="pt")
    thw = inputs["image_grid_thw"][0].tolist()
    n_img = int((inputs["input_ids"] == cfg.image_token_id).sum())
    check(n_img == thw[1] * thw[2] // 4, f"grid {thw}: {n_img} image tokens")

    print("forward")
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
        logits = out.logits[0, -1]
        rms = float(logits.pow(2).mean().sqrt())
        check(bool(torch.isfinite(out.logits).all()), "logits finite")
        check(0.1 < rms < 20, f"last logits rms {rms:.3f}")
        hs = [float(h.pow(2).mean().sqrt()) for h in out.hidden_states]
        check(all(0.01 < h < 50 for h in hs), "hidden rms " + " ".join(f"{h:.2f}" for h in hs))
        g = model.generate(**inputs, max_new_tokens=4, do_sample=False)
        check(g.shape[1] == inputs["input_ids"].shape[1] + 4 or int(g[0, -1]) in gen["eos_token_id"],
              f"greedy {g[0, inputs['input_ids'].shape[1]:].tolist()}")
    print("PASS" if OK else "FAIL")
    return 0 if OK else 1


if __name__ == "__main__":
    sys.exit(main())
