"""What BF16 matmuls alone do to the Qwen3.5 fixtures, in transformers itself.

locr's cpu-bf16 backend rounds both operands of every matmul to BF16 and accumulates in f32. This
script runs the fixture models of tests/fixtures/qwen35/ in transformers with every nn.Linear doing
the same (input and weight rounded to BF16, f32 accumulation, bias in f32) and prints the prefill
logits' error against the FP32 goldens: the error a correct BF16 implementation must show, which
tests/golden/qwen35_golden_test.cc's cpu-bf16 bound and docs/numerics.md are based on.

    /work/.venv-ref/bin/python tools/reference/qwen35_bf16_emulation.py
"""
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import Qwen3_5ForConditionalGeneration

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "qwen35"


def bf16_linear(self, x):
    bias = None if self.bias is None else self.bias
    return torch.nn.functional.linear(x.to(torch.bfloat16).float(), self.weight.to(torch.bfloat16).float(), bias)


def main():
    fp32_linear = torch.nn.Linear.forward
    for mdir in sorted(p for p in ROOT.iterdir() if (p / "cases").is_dir()):
        model = Qwen3_5ForConditionalGeneration.from_pretrained(mdir, dtype=torch.float32,
                                                                attn_implementation="eager").eval()
        for case in sorted((mdir / "cases").glob("*.safetensors")):
            ref = load_file(case)
            kw = dict(input_ids=ref["input_ids"][None], mm_token_type_ids=ref["mm_token_type_ids"][None])
            if "pixel_values" in ref:
                kw.update(pixel_values=ref["pixel_values"], image_grid_thw=ref["image_grid_thw"])
            torch.nn.Linear.forward = bf16_linear
            try:
                with torch.no_grad():
                    out = model(**kw).logits[0]
            finally:
                torch.nn.Linear.forward = fp32_linear
            g = ref["logits"]
            d = out - g
            cos = torch.nn.functional.cosine_similarity(out.flatten(), g.flatten(), dim=0)
            print(f"{mdir.name} {case.stem}: max_abs {d.abs().max():.4f} rel_l2 {d.norm() / g.norm():.4f} cos {cos:.6f}")


if __name__ == "__main__":
    main()
