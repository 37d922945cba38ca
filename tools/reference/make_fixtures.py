#!/usr/bin/env python3
"""Golden fixtures for locr, computed with Hugging Face transformers (FP32, eager attention).

Builds tiny random LightOnOCR models with `LightOnOcrForConditionalGeneration`, a small byte-level
BPE tokenizer carrying the real Qwen3 added tokens, synthetic page images, and records what
transformers computes for a set of prompts. Nothing here comes from the C++ code.

Outputs (relative to the repository root):
  tests/fixtures/images/*                        synthetic input images
  tests/fixtures/models/<model>/                 complete HF model directories
  tests/fixtures/models/<model>/cases/<case>.json + .safetensors
  tests/fixtures/models/MANIFEST.json

Usage: python tools/reference/make_fixtures.py [--only MODEL ...]   (see tools/reference/README.md)
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import math
import os
import shutil
import sys
from pathlib import Path

# Determinism first: one intra-op thread (reduction order), no TF32, deterministic algorithms.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers  # noqa: E402

import transformers  # noqa: E402
from transformers import (  # noqa: E402
    LightOnOcrConfig,
    LightOnOcrForConditionalGeneration,
    LightOnOcrProcessor,
    PixtralImageProcessor,
    TokenizersBackend,
)
from transformers.models.pixtral.image_processing_pixtral import (  # noqa: E402
    get_resize_output_image_size,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
IMAGES_DIR = FIXTURES / "images"
MODELS_DIR = FIXTURES / "models"

# --------------------------------------------------------------------------------------------
# Real LightOnOCR / Qwen3 constants
# --------------------------------------------------------------------------------------------

# Qwen2/Qwen3 pre-tokenizer regex (the `Split` step of every Qwen2-family tokenizer.json).
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# Added tokens of the Qwen3 / LightOnOCR tokenizer, in id order (151643..151668 in the real model),
# with their `special` flag as in the hub tokenizer_config.json `added_tokens_decoder`.
QWEN3_ADDED_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
]

# The LightOnOCR-2 chat template (hub `chat_template.jinja`; identical to the inline
# `chat_template` of the LightOnOCR-2 tokenizer_config.json). Model data, reproduced verbatim.
LIGHTONOCR_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}\n"
    "{% for message in messages %}\n"
    "{% if loop.first and message['role'] != 'system' %}\n"
    "<|im_start|>system<|im_end|>\n"
    "{% endif %}\n"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}\n"
    "{{ message['content'] }}<|im_end|>\n"
    "{% else %}\n"
    "{% for content in message['content'] %}\n"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}\n"
    "{% set image_count.value = image_count.value + 1 %}\n"
    "{% if add_vision_id %}\n"
    "Picture {{ image_count.value }}:\n"
    "{% endif -%}\n"
    "<|image_pad|>\n"
    "{%- elif 'text' in content %}\n"
    "{{ content['text'] }}\n"
    "{% endif %}\n"
    "{% endfor %}\n"
    "<|im_end|>\n"
    "{% endif %}\n"
    "{% endfor %}\n"
    "{% if add_generation_prompt %}\n"
    "<|im_start|>assistant\n"
    "{% endif %}"
)

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
LONGEST_EDGE = 1540
PATCH = 14
MERGE = 2

# --------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------

N_REGULAR_TOKENS = 700

TOKENIZER_CORPUS = [
    # English prose
    "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.",
    "Optical character recognition converts images of typed, handwritten or printed text into "
    "machine-encoded text, whether from a scanned document, a photo of a document, or a scene photo.",
    "This report summarises the results of the third quarter. Revenue increased by 12% compared "
    "with the previous year, while operating costs remained stable.",
    "Please convert this page to markdown. Keep the tables, the headings and the reading order.",
    "Invoice number: 2024-0117. Date: 25/12/2018. Total amount due: $1,234.56 (including VAT).",
    "You are a concise assistant. Answer the question in one sentence.",
    "Hello, world! How are you today? I'm fine, thanks. We'll see; they've gone; it's done.",
    "Chapter 1. Introduction\n\nIn the beginning there was the document, and the document was a "
    "scanned PDF with two columns, footnotes, and a table of contents.",
    "Compare the two pages and describe the differences between the first and the second image.",
    "The transmission control protocol provides reliable, ordered delivery of a stream of bytes; "
    "the user datagram protocol sends independent datagrams without connection setup.",
    # French
    "Bonjour le monde ! Ceci est un document de test pour la reconnaissance optique de caractères.",
    "La société a réalisé un chiffre d'affaires de 3,5 millions d'euros en 2023, en hausse de 8 %.",
    "Veuillez trouver ci-joint la facture n° 4521. Le paiement est dû à réception. Merci beaucoup.",
    "Où est la bibliothèque ? Elle se trouve à côté de l'église, près de la gare. Ça va très bien.",
    "Résumé : les élèves ont étudié l'histoire de France, la géographie et les mathématiques.",
    # Chinese
    "用一句中文说明 TCP 和 UDP 的核心区别。",
    "TCP 是面向连接的可靠传输协议，UDP 是无连接的不可靠传输协议。",
    "光学字符识别是将图像中的文字转换为可编辑文本的技术。本文档包含表格、标题和公式。",
    "你是一个简洁的助手。请用中文回答问题。今天天气很好，我们去公园散步吧。",
    "第一章 引言：在现代办公中，扫描文件和图片的文字识别非常重要。第二章 方法与结果。",
    "北京、上海、广州和深圳是中国的大城市。人口、经济、交通、教育都很发达。",
    # Code
    "def resize(image, longest_edge=1540, patch_size=14):\n"
    "    height, width = image.shape[:2]\n"
    "    ratio = max(height / longest_edge, width / longest_edge)\n"
    "    if ratio > 1:\n"
    "        height = int(height // ratio)\n"
    "    return ((height - 1) // patch_size + 1) * patch_size\n",
    "#include <vector>\n#include <cstdint>\n\nint main(int argc, char** argv) {\n"
    "    std::vector<float> x(1024, 0.0f);\n    for (size_t i = 0; i < x.size(); ++i) {\n"
    "        x[i] = static_cast<float>(i) * 0.5f;\n    }\n    return 0;\n}\n",
    "for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }\nif (x != nullptr && y == 0) return -1;",
    "import torch\nimport numpy as np\n\nclass Model(torch.nn.Module):\n"
    "    def forward(self, x):\n        return torch.relu(self.linear(x))\n",
    '{"name": "LightOnOCR", "version": 2, "layers": [1, 2, 3], "enabled": true, "scale": 0.125}',
    # Markdown, tables, math
    "# Title\n\n## Section 1.2\n\n- first item\n- second item\n  1. nested\n\n**Bold** and *italic* text.",
    "| Name | Quantity | Price |\n|------|---------:|------:|\n| Apple | 3 | 1.20 |\n"
    "| Banana | 12 | 0.50 |\n| Total | 15 | 9.60 |",
    "| Année | Ventes | Bénéfice |\n|---|---|---|\n| 2022 | 1 200 | 300 |\n| 2023 | 1 450 | 410 |",
    "| 项目 | 数量 | 单价 |\n|---|---|---|\n| 苹果 | 3 | 5.00 |\n| 香蕉 | 12 | 2.50 |",
    "The formula is $E = mc^2$ and $$\\int_0^1 x^2 \\, dx = \\frac{1}{3}.$$",
    "Equation (3): $\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$, see Table 2 and Figure 4.",
    "![image](image_1.png) 120,45,880,600\n\n> Note: coordinates are normalised to [0, 1000].",
    "0123456789 3.14159 2.71828 1e-6 10000 1000000 1540 14 28 2145 -42 +7 100% 50/50",
    "Tab\tseparated\tvalues\nand  multiple   spaces,   trailing spaces   \n\n\nblank lines.",
    # chat roles at line starts, as the chat template renders them after <|im_start|>
    "system\nYou are a helpful assistant.\nuser\nHello!\nassistant\nHi, how can I help?\n",
    "system\nuser\nassistant\nsystem\nuser\nassistant\nuser\nassistant\nuser\nassistant\n",
    "The system prompt, the user message and the assistant answer form one conversation turn.",
]


def build_tokenizer() -> Tokenizer:
    """Train a small Qwen2-style byte-level BPE and append the Qwen3 added tokens in order."""
    split = pre_tokenizers.Split(pattern=Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False)
    trainer_tok = Tokenizer(models.BPE(unk_token=None))
    trainer_tok.normalizer = normalizers.NFC()
    trainer_tok.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=N_REGULAR_TOKENS,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    trainer_tok.train_from_iterator(TOKENIZER_CORPUS, trainer=trainer)
    trained = json.loads(trainer_tok.to_str())
    vocab = trained["model"]["vocab"]
    merges = trained["model"]["merges"]
    assert len(vocab) == N_REGULAR_TOKENS, f"corpus too small: {len(vocab)} regular tokens"

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tok_json = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": N_REGULAR_TOKENS + i,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": special,
            }
            for i, (content, special) in enumerate(QWEN3_ADDED_TOKENS)
        ],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": QWEN2_PRETOKENIZE_REGEX},
                    "behavior": "Isolated",
                    "invert": False,
                },
                byte_level,
            ],
        },
        "post_processor": dict(byte_level),
        "decoder": dict(byte_level),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    tok = Tokenizer.from_str(json.dumps(tok_json, ensure_ascii=False))
    for i, (content, _special) in enumerate(QWEN3_ADDED_TOKENS):
        assert tok.token_to_id(content) == N_REGULAR_TOKENS + i
    return tok


def make_hf_tokenizer(tok: Tokenizer) -> TokenizersBackend:
    hf = TokenizersBackend(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        add_prefix_space=False,
        clean_up_tokenization_spaces=False,
        errors="replace",
        split_special_tokens=False,
        model_max_length=131072,
        extra_special_tokens={
            "image_token": "<|image_pad|>",
            "image_break_token": "<|vision_pad|>",
            "image_end_token": "<|vision_end|>",
        },
    )
    hf.chat_template = LIGHTONOCR_CHAT_TEMPLATE
    return hf


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------


def _page_array(width: int, height: int, seed: int, dark_bg: bool = False) -> np.ndarray:
    """Page-like RGB float array: light paper, gradient, text-like strokes in lines, noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    base = 238.0 - 18.0 * (xx / max(width - 1, 1)) - 10.0 * (yy / max(height - 1, 1))
    img = np.stack([base, base - 4.0, base - 12.0], axis=-1)
    if dark_bg:
        img = 255.0 - img
    ink = np.array([25.0, 30.0, 60.0]) if not dark_bg else np.array([235.0, 230.0, 200.0])
    line_h = max(6, height // 12)
    y = max(3, line_h // 2)
    while y + line_h <= height - 2:
        x = 4 + int(rng.integers(0, 8))
        glyph_h = max(3, int(line_h * 0.6))
        while x < width - 8:
            word = int(rng.integers(2, 9))
            for _ in range(word):
                gw = int(rng.integers(2, 6))
                if x + gw >= width - 4:
                    break
                kind = int(rng.integers(0, 4))
                gy = y + int(rng.integers(0, 2))
                if kind == 0:  # vertical stroke
                    img[gy : gy + glyph_h, x : x + 1] = ink
                elif kind == 1:  # box-ish glyph
                    img[gy : gy + glyph_h, x : x + gw] = ink * 0.6 + img[gy : gy + glyph_h, x : x + gw] * 0.4
                elif kind == 2:  # horizontal bar
                    img[gy + glyph_h // 2, x : x + gw] = ink
                else:  # dots
                    img[gy + glyph_h - 1, x : x + gw : 2] = ink
                x += gw + 1
            x += int(rng.integers(3, 7))
        y += line_h
    # a coloured block (figure / table header)
    bx, by = int(width * 0.6), int(height * 0.1)
    img[by : by + max(2, height // 8), bx : bx + max(2, width // 5)] = [180.0, 90.0, 40.0]
    img += rng.normal(0.0, 6.0, size=img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


IMAGE_SPECS = {
    # name: (width, height, mode, seed)
    # (sizes are W x H; grids given as patches W x H after the resize)
    "page_small.png": (109, 91, "RGB", 11),  # landscape; @14 -> 112x98 = 8x7 patches (odd rows)
    "page_portrait.png": (78, 109, "RGB", 12),  # portrait; -> 84x112 under both alignments
    "gray.png": (95, 68, "L", 13),  # grayscale; @14 -> 98x70 = 7x5 patches (both odd)
    "rgba.png": (115, 80, "RGBA", 14),  # transparent: composited onto white by the processor
    "photo.jpg": (97, 71, "RGB", 15),  # JPEG quality 90; @14 -> 98x84 = 7x6 patches
    "exact.png": (112, 84, "RGB", 16),  # already a multiple of 28: resized to the same size
    "wide.png": (1610, 29, "RGB", 17),  # wider than 1540: downscaled (floor) then aligned
}


def render_images() -> dict[str, bytes]:
    """The synthetic input images, as file bytes by name."""
    out = {}
    for name, (w, h, mode, seed) in IMAGE_SPECS.items():
        arr = _page_array(w, h, seed, dark_bg=(name == "photo.jpg"))
        if mode == "L":
            img = Image.fromarray(arr).convert("L")
        elif mode == "RGBA":
            rng = np.random.default_rng(seed + 100)
            yy, xx = np.mgrid[0:h, 0:w]
            alpha = (255 - (xx * 200) // max(w - 1, 1)).astype(np.int32)
            alpha = np.clip(alpha + rng.integers(-10, 11, size=alpha.shape), 0, 255).astype(np.uint8)
            img = Image.fromarray(np.concatenate([arr, alpha[..., None]], axis=-1), mode="RGBA")
        else:
            img = Image.fromarray(arr)
        buf = io.BytesIO()
        if name.endswith(".jpg"):
            img.save(buf, format="JPEG", quality=90)
        else:
            # no ancillary chunks / timestamps -> byte-identical across runs
            img.save(buf, format="PNG", optimize=False, compress_level=9)
        out[name] = buf.getvalue()
    return out


def make_images() -> None:
    IMAGES_DIR.mkdir(parents=True, exist_ok=True)
    for name, data in render_images().items():
        (IMAGES_DIR / name).write_bytes(data)


def check_images() -> None:
    """--only: the images are inputs already on disk and are not rewritten. Say if this environment
    would have drawn different bytes (the new references are computed from the files on disk)."""
    for name, data in render_images().items():
        path = IMAGES_DIR / name
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run the script without --only first")
        if path.read_bytes() != data:
            print(f"warning: {path.relative_to(REPO)} differs from what this environment draws; "
                  "the references use the file on disk")


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------

MODEL_SPECS = [
    {
        "name": "tiny_a",
        "desc": "hub-form config (model_type mistral3, image_token_id), tied LM head, F32 single file; "
        "text 64 wide 4q/2kv head_dim 32 x2 layers; vision 32 wide 2 heads x2 layers",
        "config_form": "hub",
        "dtype": "float32",
        "shards": 1,
        "tied": True,
        "text": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=32),
        "vision": dict(hidden_size=32, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2),
        "seed": 1001,
    },
    {
        "name": "tiny_b",
        "desc": "transformers-form config (model_type lighton_ocr), UNTIED lm_head.weight, F32 sharded (2 shards); "
        "text 64 wide 8q/2kv head_dim 16 x3 layers; vision 64 wide 4 heads x1 layer",
        "config_form": "transformers",
        "dtype": "float32",
        "shards": 2,
        "tied": False,
        "eos_boost": 1.6,
        "text": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=8,
                     num_key_value_heads=2, head_dim=16),
        "vision": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=1, num_attention_heads=4),
        "seed": 1002,
    },
    {
        "name": "tiny_c",
        "desc": "transformers-form config, tied, BF16 single file (reference = FP32 run on the upcast bf16 "
        "weights); text 64 wide 4q/4kv (MHA) head_dim 16 x1 layer; vision 48 wide 3 heads x2 layers",
        "config_form": "transformers",
        "dtype": "bfloat16",
        "shards": 1,
        "tied": True,
        "text": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                     num_key_value_heads=4, head_dim=16),
        "vision": dict(hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=3),
        "seed": 1003,
    },
    {
        "name": "tiny_d",
        "desc": "ONNX-export-style config (model_type lighton_ocr with image_token_index instead of "
        "image_token_id, tie_word_embeddings top-level and in text_config), tied, F32; "
        "text 48 wide 4q/1kv head_dim 24 x2 layers; vision 32 wide 2 heads x1 layer",
        "config_form": "onnx",
        "dtype": "float32",
        "shards": 1,
        "tied": True,
        "text": dict(hidden_size=48, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=1, head_dim=24),
        "vision": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2),
        "seed": 1004,
    },
    {
        # The head sizes of the real LightOnOCR-2-1B (text 128, vision 64), the only ones the CUDA
        # attention kernels take; hub-form config and BF16 weights like the real checkpoint. Text
        # q width 2x128 = 2x hidden and kv width 1x128 = hidden, as in the real model (2048 / 1024).
        "name": "tiny_e",
        "desc": "real head sizes: text head_dim 128, vision head_dim 64; hub-form config, tied, BF16 single "
        "file (reference = FP32 run on the upcast bf16 weights); text 128 wide 2q/1kv head_dim 128 x2 "
        "layers; vision 128 wide 2 heads (head_dim 64) x2 layers",
        "config_form": "hub",
        "dtype": "bfloat16",
        "shards": 1,
        "tied": True,
        "text": dict(hidden_size=128, intermediate_size=320, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=1, head_dim=128),
        "vision": dict(hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=2),
        "seed": 1005,
    },
]

SMOKE_SYSTEM = "You are a concise assistant."
SMOKE_USER = "用一句中文说明 TCP 和 UDP 的核心区别。"

IMG = "tests/fixtures/images/"

TINY_E_LONG_PROMPT = (  # 91 prompt tokens with the template
    "Invoice number: 2024-0117. Date: 25/12/2018. Total amount due: $1,234.56 (including VAT).\n"
    "Please convert this page to markdown."
)

# case: (name, description, system, prompt, images, align)
CASES = {
    "tiny_a": [
        ("text_only", "text only, no system (template emits the empty system turn)", None,
         "Hello, world! Bonjour le monde.", [], 14),
        ("system_text", "system + Chinese user text (seeds' smoke test)", SMOKE_SYSTEM, SMOKE_USER, [], 14),
        ("image_a14", "image only (recommended OCR request), 109x91 -> 112x98 (align 14), 8x7 patches (odd rows)", None, None,
         [IMG + "page_small.png"], 14),
        ("image_a28", "same image, align 28 (PixtralProcessor/vLLM sizing): 112x112, 8x8 patches", None, None,
         [IMG + "page_small.png"], 28),
        ("image_text_portrait", "image + text, portrait page 78x109 -> 84x112, 6x8 patches", None,
         "Convert this page to markdown.", [IMG + "page_portrait.png"], 14),
        ("two_images_text", "two images of different sizes + text (padded batch, block-diagonal vision "
         "attention), align 14", None, "Compare the two pages.", [IMG + "page_small.png", IMG + "gray.png"], 14),
        ("two_images_a28", "two images, no text, align 28 (JPEG then RGBA)", None, None,
         [IMG + "photo.jpg", IMG + "rgba.png"], 28),
        ("wide_downscaled", "1610x29 image downscaled (floor) to 1540x27 -> 1540x28, 110x2 patches, 55 tokens", None, None,
         [IMG + "wide.png"], 14),
        ("gray_a14", "grayscale PNG converted to RGB, 95x68 -> 98x70, 7x5 patches (both odd)", None, None,
         [IMG + "gray.png"], 14),
        ("rgba_a14", "RGBA PNG, composited onto white by the processor, 115x80 -> 126x84, 9x6 patches", None, None, [IMG + "rgba.png"], 14),
        ("jpeg_a14", "JPEG quality 90, 97x71 -> 98x84, 7x6 patches (odd cols)", None, None, [IMG + "photo.jpg"], 14),
    ],
    "tiny_b": [
        ("text_only", "text only, no system", None, "Please convert this page to markdown.", [], 14),
        ("system_text", "system + Chinese user text (seeds' smoke test)", SMOKE_SYSTEM, SMOKE_USER, [], 14),
        ("image_a14", "grayscale image only, align 14", None, None, [IMG + "gray.png"], 14),
        ("image_text_a28", "RGBA image + text, align 28", None, "Extract the table.", [IMG + "rgba.png"], 28),
    ],
    "tiny_c": [
        ("text_only", "text only, no system", None, "| Name | Price |\n|---|---|\n| Apple | 1.20 |", [], 14),
        ("image_a14", "JPEG image only, align 14", None, None, [IMG + "photo.jpg"], 14),
        ("image_text_a28", "grayscale image + French text, align 28", None, "Résumé en français :",
         [IMG + "gray.png"], 28),
    ],
    "tiny_d": [
        ("text_only", "text only, no system", None, "def f(x):\n    return x + 1", [], 14),
        ("image_a28", "RGBA image only, align 28", None, None, [IMG + "rgba.png"], 28),
        ("system_image_text", "system + image + text, align 14; the 112x84 image is already a multiple "
         "of 28 (same-size resize)", SMOKE_SYSTEM, "What is the total?", [IMG + "exact.png"], 14),
    ],
    "tiny_e": [
        ("text_only", "text only, no system, 91 prompt tokens (more than one 64-row query tile of the "
         "CUDA prefill attention)", None, TINY_E_LONG_PROMPT, [], 14),
        ("system_text", "system + Chinese user text (seeds' smoke test)", SMOKE_SYSTEM, SMOKE_USER, [], 14),
        ("image_a14", "image only, 109x91 (not a multiple of the patch) -> 112x98 (align 14), 8x7 patches "
         "(odd rows)", None, None, [IMG + "page_small.png"], 14),
        ("image_text_a28", "RGBA image + text, align 28: 115x80 -> 140x84, 10x6 patches", None,
         "Extract the table.", [IMG + "rgba.png"], 28),
        ("two_images_text", "two images of different sizes + text (padded batch, block-diagonal vision "
         "attention), align 14: 84x112 (6x8 patches) then 98x70 (7x5)", None, "Compare the two pages.",
         [IMG + "page_portrait.png", IMG + "gray.png"], 14),
    ],
}

MAX_TOKENS = 32


def vocab_size_for(n_tokens: int) -> int:
    return ((n_tokens + 63) // 64) * 64


def build_config(spec: dict, tok: Tokenizer) -> LightOnOcrConfig:
    n_tok = tok.get_vocab_size(with_added_tokens=True)
    t = spec["text"]
    v = spec["vision"]
    text_config = dict(
        model_type="qwen3",
        vocab_size=vocab_size_for(n_tok),
        hidden_size=t["hidden_size"],
        intermediate_size=t["intermediate_size"],
        num_hidden_layers=t["num_hidden_layers"],
        num_attention_heads=t["num_attention_heads"],
        num_key_value_heads=t["num_key_value_heads"],
        head_dim=t["head_dim"],
        hidden_act="silu",
        max_position_embeddings=16384,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        attention_bias=False,
        attention_dropout=0.0,
        sliding_window=None,
        use_sliding_window=False,
        tie_word_embeddings=spec["tied"],
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    vision_config = dict(
        model_type="pixtral",
        hidden_size=v["hidden_size"],
        intermediate_size=v["intermediate_size"],
        num_hidden_layers=v["num_hidden_layers"],
        num_attention_heads=v["num_attention_heads"],
        num_channels=3,
        image_size=LONGEST_EDGE,
        patch_size=PATCH,
        hidden_act="silu",
        attention_dropout=0.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    cfg = LightOnOcrConfig(
        text_config=text_config,
        vision_config=vision_config,
        spatial_merge_size=MERGE,
        image_token_id=tok.token_to_id("<|image_pad|>"),
        tie_word_embeddings=spec["tied"],
        eos_token_id=tok.token_to_id("<|im_end|>"),
        pad_token_id=tok.token_to_id("<|endoftext|>"),
    )
    return cfg


# Weight init. Linear weights use std = LINEAR_GAIN / sqrt(fan_in) (0.16..0.35 for these widths):
# with the smaller stds typical of real checkpoints (0.02..0.1) the residual stream of a tiny
# tied model is dominated by the input embedding and greedy decoding collapses into repeating
# the last token, which would make the generation fixtures useless.
EMBED_STD = 0.5
LM_HEAD_STD = 0.3  # untied models only
LINEAR_GAIN = 2.0
PATCH_CONV_STD = 0.05
NORM_NOISE = 0.15  # norm weights ~ 1 + N(0, NORM_NOISE^2)


def init_weights(model: torch.nn.Module, seed: int) -> None:
    """Non-trivial deterministic init, in sorted parameter-name order, independent of HF's init."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if p.dim() == 1:  # every 1-D parameter of this model is an RMSNorm weight (no biases)
                assert "norm" in name or "ln_pre" in name, name
                val = 1.0 + NORM_NOISE * torch.randn(p.shape, generator=gen)
            elif "embed_tokens" in name:
                val = EMBED_STD * torch.randn(p.shape, generator=gen)
            elif "patch_conv" in name:
                val = PATCH_CONV_STD * torch.randn(p.shape, generator=gen)
            elif name == "lm_head.weight":
                val = LM_HEAD_STD * torch.randn(p.shape, generator=gen)
            else:
                assert p.dim() == 2, name
                val = (LINEAR_GAIN / math.sqrt(p.shape[1])) * torch.randn(p.shape, generator=gen)
            p.copy_(val.to(p.dtype))


def generation_config_dict(tok: Tokenizer) -> dict:
    eot = tok.token_to_id("<|endoftext|>")
    im_end = tok.token_to_id("<|im_end|>")
    return {
        "bos_token_id": eot,
        "do_sample": True,
        "eos_token_id": [im_end, eot],
        "pad_token_id": eot,
        "temperature": 0.2,
        "top_k": 0,
        "top_p": 0.9,
        "transformers_version": transformers.__version__,
    }


def processor_config_dict() -> dict:
    # Same content as the hub's LightOnOCR-2 processor_config.json (model-spec section 6).
    return {
        "image_break_token": "<|vision_pad|>",
        "image_end_token": "<|vision_end|>",
        "image_processor": {
            "crop_size": None,
            "data_format": "channels_first",
            "default_to_square": True,
            "device": None,
            "disable_grouping": None,
            "do_center_crop": None,
            "do_convert_rgb": True,
            "do_normalize": True,
            "do_pad": None,
            "do_rescale": True,
            "do_resize": True,
            "image_mean": CLIP_MEAN,
            "image_processor_type": "PixtralImageProcessorFast",
            "image_seq_length": None,
            "image_std": CLIP_STD,
            "input_data_format": None,
            "pad_size": None,
            "patch_size": PATCH,
            "processor_class": "PixtralProcessor",
            "resample": 3,
            "rescale_factor": 0.00392156862745098,
            "return_tensors": None,
            "size": {"longest_edge": LONGEST_EDGE},
        },
        "image_token": "<|image_pad|>",
        "patch_size": PATCH,
        "processor_class": "PixtralProcessor",
        "spatial_merge_size": MERGE,
    }


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def rewrite_config(model_dir: Path, form: str, tied: bool) -> None:
    """Rewrite the config.json written by transformers into the hub or ONNX-export form."""
    path = model_dir / "config.json"
    cfg = json.loads(path.read_text())
    if form == "transformers":
        return
    out = {}
    if form == "hub":
        # As the real LightOnOCR-2-1B config.json: vLLM-style model_type, image_token_id,
        # tie_word_embeddings only inside text_config, legacy flat rope_theta next to rope_parameters.
        out["architectures"] = ["LightOnOCRForConditionalGeneration"]
        out["dtype"] = cfg.get("dtype", "float32")
        out["eos_token_id"] = cfg["eos_token_id"]
        out["image_token_id"] = cfg["image_token_id"]
        out["model_type"] = "mistral3"
        out["multimodal_projector_bias"] = False
        out["pad_token_id"] = cfg["pad_token_id"]
        out["projector_hidden_act"] = "gelu"
        out["spatial_merge_size"] = cfg["spatial_merge_size"]
        text = copy.deepcopy(cfg["text_config"])
        text["architectures"] = ["Qwen3ForCausalLM"]
        text["rope_theta"] = text["rope_parameters"]["rope_theta"]
        text["tie_word_embeddings"] = tied
        text["use_qk_norm"] = True
        out["text_config"] = text
        out["transformers_version"] = cfg.get("transformers_version")
        out["use_cache"] = False
        vision = copy.deepcopy(cfg["vision_config"])
        # the hub file says "default"; transformers 5 rewrites the Pixtral rope_type to "axial"
        vision["rope_parameters"]["rope_type"] = "default"
        vision["rope_theta"] = vision["rope_parameters"]["rope_theta"]
        out["vision_config"] = vision
        out["vision_feature_layer"] = -1
    elif form == "onnx":
        # As the ONNX-community style export (talmago fixture): model_type lighton_ocr but the
        # image token under `image_token_index`, tie flag both top-level and in text_config.
        out = copy.deepcopy(cfg)
        out["architectures"] = ["LightOnOcrForConditionalGeneration"]
        out["image_token_index"] = out.pop("image_token_id")
        out["multimodal_projector_bias"] = False
        out["projector_hidden_act"] = "gelu"
        out["vision_feature_layer"] = -1
        out["tie_word_embeddings"] = tied
        out["text_config"]["tie_word_embeddings"] = tied
        out["text_config"]["architectures"] = ["Qwen3ForCausalLM"]
        out["text_config"]["use_qk_norm"] = True
        out = dict(sorted(out.items()))
    else:
        raise ValueError(form)
    write_json(path, out)


def safetensors_names(model_dir: Path) -> dict:
    """{file: {tensor: [dtype, shape]}} for every safetensors file of the checkpoint."""
    out = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as sf:
            entries = {}
            for k in sorted(sf.keys()):
                sl = sf.get_slice(k)
                entries[k] = [sl.get_dtype(), list(sl.get_shape())]
            out[f.name] = entries
    return out


# --------------------------------------------------------------------------------------------
# Prompt construction and preprocessing (what locr mirrors)
# --------------------------------------------------------------------------------------------


def build_messages(system, prompt, n_images):
    messages = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    if n_images == 0:
        messages.append({"role": "user", "content": prompt})
    else:
        content = [{"type": "image"} for _ in range(n_images)]
        if prompt is not None:
            content.append({"type": "text", "text": prompt})
        messages.append({"role": "user", "content": content})
    return messages


def make_image_processor() -> PixtralImageProcessor:
    proc = PixtralImageProcessor(
        do_convert_rgb=True,
        do_resize=True,
        do_rescale=True,
        do_normalize=True,
        do_pad=True,
        size={"longest_edge": LONGEST_EDGE},
        patch_size=PATCH,
        resample=3,
        rescale_factor=1 / 255,
        image_mean=CLIP_MEAN,
        image_std=CLIP_STD,
    )
    return proc


def load_image(rel: str) -> Image.Image:
    # Hand the processor the image as opened, in its own mode: transformers' convert_to_rgb then
    # does the RGB conversion itself (and composites transparent images onto white, as vLLM's
    # rgba_to_rgb does too).
    img = Image.open(REPO / rel)
    img.load()
    return img


def expected_size(h: int, w: int, align: int) -> tuple[int, int]:
    return get_resize_output_image_size(
        np.zeros((h, w, 3), dtype=np.uint8), size=(LONGEST_EDGE, LONGEST_EDGE), patch_size=(align, align)
    )


def build_inputs(hf_tok, image_proc, system, prompt, images, align):
    messages = build_messages(system, prompt, len(images))
    text = hf_tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    pixel_values = image_sizes = None
    counts = []
    if images:
        pil = [load_image(p) for p in images]
        feats = image_proc(pil, patch_size=align, return_tensors="pt")
        pixel_values = feats["pixel_values"]
        image_sizes = [tuple(int(x) for x in s) for s in feats["image_sizes"]]
        for im, (hh, ww) in zip(pil, image_sizes):
            assert (hh, ww) == tuple(expected_size(im.height, im.width, align))
            assert hh % align == 0 and ww % align == 0
            counts.append((hh // (PATCH * MERGE)) * (ww // (PATCH * MERGE)))
        pieces = text.split("<|image_pad|>")
        assert len(pieces) == len(images) + 1
        text = pieces[0]
        for n, piece in zip(counts, pieces[1:]):
            text += "<|image_pad|>" * n + piece
    ids = hf_tok(text, add_special_tokens=False)["input_ids"]
    return text, torch.tensor([ids], dtype=torch.long), pixel_values, image_sizes, counts


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def sanity_checks() -> None:
    # A4 portrait at longest edge 1540 -> 1092x1540, 2145 tokens (both alignments).
    for align in (14, 28):
        h, w = expected_size(1540, 1089, align)
        assert (h, w) == (1540, 1092), (h, w)
        assert (h // 28) * (w // 28) == 2145
        assert expected_size(1540, 1092, align) == (1540, 1092)
    # Letter @200 DPI differs between alignments.
    assert expected_size(2200, 1700, 14) == (1540, 1190)
    assert expected_size(2200, 1700, 28) == (1540, 1204)


def run_case(model, hf_tok, image_proc, tok, spec_case):
    name, desc, system, prompt, images, align = spec_case
    text, input_ids, pixel_values, image_sizes, counts = build_inputs(
        hf_tok, image_proc, system, prompt, images, align
    )
    image_token_id = model.config.image_token_id
    n_img_tok = int((input_ids == image_token_id).sum())
    assert n_img_tok == sum(counts)

    kwargs = {}
    if pixel_values is not None:
        kwargs = dict(pixel_values=pixel_values, image_sizes=torch.tensor(image_sizes))

    tensors = {"input_ids": input_ids[0].clone()}
    lm = model.model.language_model
    captured = {}
    hooks = [layer.register_forward_hook(lambda m, i, o, k=f"layer{j}": captured.__setitem__(k, o))
             for j, layer in enumerate(lm.layers)]
    hooks.append(lm.norm.register_forward_hook(lambda m, i, o: captured.__setitem__("norm", o)))
    with torch.no_grad():
        out = model(input_ids=input_ids, output_hidden_states=True, use_cache=False, **kwargs)
        for h in hooks:
            h.remove()
        hs = out.hidden_states
        n_layers = model.config.text_config.num_hidden_layers
        # What `hidden_states` holds in this transformers version: [embeddings (after the image
        # scatter), output of layer 1, ..., output of layer L-1, final RMSNorm output]. The raw
        # output of the last layer is NOT in the tuple (replaced by last_hidden_state).
        assert len(hs) == n_layers + 1
        for j in range(n_layers - 1):
            assert torch.equal(hs[j + 1], captured[f"layer{j}"])
        assert torch.equal(hs[n_layers], captured["norm"])
        assert not torch.equal(hs[n_layers], captured[f"layer{n_layers - 1}"])
        assert torch.allclose(out.logits[0, -1], hs[n_layers][0, -1] @ model.lm_head.weight.T,
                              atol=1e-5, rtol=1e-5)
        for i, h in enumerate(hs):
            tensors[f"hidden.{i}"] = h[0].float().contiguous()
        tensors["logits"] = out.logits[0, -1].float().contiguous()

        if pixel_values is not None:
            io_ = out.image_outputs
            vis = io_.last_hidden_state
            assert vis.shape[0] == 1
            vis = vis[0]
            n_patches = sum((h // PATCH) * (w // PATCH) for h, w in image_sizes)
            assert vis.shape[0] == n_patches
            emb = torch.cat(io_.pooler_output, dim=0)
            assert emb.shape[0] == n_img_tok, (emb.shape, n_img_tok)
            h0, w0 = image_sizes[0]
            tensors["pixel_values"] = pixel_values[0, :, :h0, :w0].float().contiguous()
            tensors["vision_hidden"] = vis.float().contiguous()
            tensors["image_embeds"] = emb.float().contiguous()
            # hidden.0 rows at image positions are the projector output
            mask = input_ids[0] == image_token_id
            assert torch.equal(tensors["hidden.0"][mask], tensors["image_embeds"])

        gen = model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            do_sample=False,
            max_new_tokens=MAX_TOKENS,
            temperature=None,
            top_p=None,
            top_k=None,
            output_logits=True,
            return_dict_in_generate=True,
            **kwargs,
        )
    new_ids = gen.sequences[0, input_ids.shape[1] :].clone()
    eos_ids = set(generation_config_dict(tok)["eos_token_id"])
    for j, t in enumerate(new_ids.tolist()):
        if t in eos_ids:
            assert j == len(new_ids) - 1, "tokens after EOS"
    tensors["generated_ids"] = new_ids.to(torch.int64)
    # greedy margin (top1 - top2 raw logit) at every generated step: lets the C++ tests see how
    # robust each argmax is
    margins = []
    for step_logits in gen.logits:
        top2 = torch.topk(step_logits[0].float(), 2).values
        margins.append(float(top2[0] - top2[1]))
    tensors["generated_margin"] = torch.tensor(margins, dtype=torch.float32)
    # the plain forward's last-position logits must match generate's prefill step
    assert torch.allclose(gen.logits[0][0].float(), tensors["logits"], atol=1e-4, rtol=1e-4)

    case_json = {
        "prompt": prompt,
        "system": system,
        "images": list(images),
        "image_align": align,
        "max_tokens": MAX_TOKENS,
    }
    decoded = hf_tok.decode(new_ids.tolist(), skip_special_tokens=False)
    info = {
        "case": name,
        "description": desc,
        "prompt_tokens": int(input_ids.shape[1]),
        "image_tokens": n_img_tok,
        "image_sizes": [list(s) for s in image_sizes] if image_sizes else [],
        "generated_tokens": int(new_ids.numel()),
        "stopped_on_eos": bool(new_ids.numel() and int(new_ids[-1]) in eos_ids),
        "min_greedy_margin": round(min(margins), 4),
        "text": text if not images else None,
        "generated_text": decoded,
    }
    return name, case_json, tensors, info


def check_processor_equivalence(hf_tok, image_proc) -> None:
    """The HF LightOnOcrProcessor (align 14) must produce the same ids / pixels as our path."""
    proc = LightOnOcrProcessor(image_processor=image_proc, tokenizer=hf_tok, patch_size=PATCH,
                               spatial_merge_size=MERGE, chat_template=LIGHTONOCR_CHAT_TEMPLATE)
    for images, prompt in (([IMG + "page_small.png"], None), ([IMG + "gray.png", IMG + "photo.jpg"], "Hi")):
        _, ids, pv, sizes, _ = build_inputs(hf_tok, image_proc, None, prompt, images, 14)
        messages = build_messages(None, prompt, len(images))
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        got = proc(text=text, images=[load_image(p) for p in images], return_tensors="pt")
        assert torch.equal(got["input_ids"], ids), "LightOnOcrProcessor disagrees on input_ids"
        assert torch.equal(got["pixel_values"], pv), "LightOnOcrProcessor disagrees on pixel_values"
        assert [tuple(int(x) for x in s) for s in got["image_sizes"]] == sizes


MIN_MARGIN = 0.005  # smallest accepted top1-top2 logit gap at any greedy step (logit std ~3)
MAX_ATTEMPTS = 64


def build_model_dir(spec: dict, tok: Tokenizer, hf_tok, seed: int, mdir: Path):
    """Create, init and save one model directory; return the FP32 eager reference reloaded from it."""
    if mdir.exists():
        shutil.rmtree(mdir)
    torch.manual_seed(seed)
    cfg = build_config(spec, tok)
    model = LightOnOcrForConditionalGeneration(cfg)
    init_weights(model, seed)
    lm_w = model.lm_head.weight
    emb_w = model.model.language_model.embed_tokens.weight
    assert (lm_w.data_ptr() == emb_w.data_ptr()) == spec["tied"]
    if spec.get("eos_boost"):
        # make <|im_end|> a more likely greedy choice so that some case stops on EOS
        with torch.no_grad():
            lm_w[tok.token_to_id("<|im_end|>")] *= spec["eos_boost"]
    save_dtype = getattr(torch, spec["dtype"])
    model = model.to(save_dtype)
    if spec["shards"] == 1:
        model.save_pretrained(mdir)
    else:
        total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
        model.save_pretrained(mdir, max_shard_size=int(total * 0.55))
        assert len(list(mdir.glob("model-*-of-*.safetensors"))) == spec["shards"]
        assert (mdir / "model.safetensors.index.json").exists()
    hf_tok.save_pretrained(mdir)
    write_json(mdir / "generation_config.json", generation_config_dict(tok))
    write_json(mdir / "processor_config.json", processor_config_dict())
    assert (mdir / "chat_template.jinja").read_text() == LIGHTONOCR_CHAT_TEMPLATE

    # Reload what was saved, in FP32 with eager attention: this is the reference model
    # (for the bf16 checkpoint: the bf16 weights upcast to fp32).
    ref = LightOnOcrForConditionalGeneration.from_pretrained(
        mdir, dtype=torch.float32, attn_implementation="eager"
    )
    ref.eval()
    assert ref.lm_head.weight.dtype == torch.float32
    assert ref.config.text_config._attn_implementation == "eager"
    assert ref.config.vision_config._attn_implementation == "eager"
    tied_now = ref.lm_head.weight.data_ptr() == ref.model.language_model.embed_tokens.weight.data_ptr()
    assert tied_now == spec["tied"]
    return ref


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = [s["name"] for s in MODEL_SPECS]
    ap.add_argument("--only", nargs="+", metavar="MODEL", choices=names,
                    help="write only these models (their directories are replaced) and merge their entries "
                    "into the existing MANIFEST.json; the other models' files and the images are left "
                    f"untouched. One or more of: {', '.join(names)}")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    sanity_checks()
    if args.only:
        check_images()
    else:
        make_images()
    tok = build_tokenizer()
    hf_tok = make_hf_tokenizer(tok)
    image_proc = make_image_processor()
    assert "TorchvisionBackend" in [c.__name__ for c in type(image_proc).__mro__], type(image_proc).__mro__

    specs = [s for s in MODEL_SPECS if not args.only or s["name"] in args.only]
    old_manifest = None
    if args.only:
        # Only the named model directories are replaced (build_model_dir removes each first).
        old_manifest = json.loads((MODELS_DIR / "MANIFEST.json").read_text(encoding="utf-8"))
    else:
        if MODELS_DIR.exists():
            shutil.rmtree(MODELS_DIR)
        MODELS_DIR.mkdir(parents=True)

    manifest = {
        "generator": "tools/reference/make_fixtures.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "notes": "All reference tensors computed in FP32 with eager attention. See tools/reference/README.md.",
        "min_greedy_margin_accepted": MIN_MARGIN,
        "tokenizer": {
            "regular_tokens": N_REGULAR_TOKENS,
            "added_tokens": {c: tok.token_to_id(c) for c, _ in QWEN3_ADDED_TOKENS},
        },
        "models": [],
    }
    if old_manifest is not None:
        # One MANIFEST describes every model: the header must still be true for the kept ones.
        for key in ("generator", "transformers_version", "torch_version", "min_greedy_margin_accepted",
                    "tokenizer"):
            if old_manifest.get(key) != manifest[key]:
                raise RuntimeError(f"--only: MANIFEST.json has {key} = {old_manifest.get(key)!r}, this run "
                                   f"{manifest[key]!r}; regenerate every model instead")
        manifest = old_manifest
    for spec in specs:
        name = spec["name"]
        mdir = MODELS_DIR / name
        for attempt in range(MAX_ATTEMPTS):
            seed = spec["seed"] + 7919 * attempt
            ref = build_model_dir(spec, tok, hf_tok, seed, mdir)
            results = [run_case(ref, hf_tok, image_proc, tok, case) for case in CASES[name]]
            worst = min(r[3]["min_greedy_margin"] for r in results)
            n_eos = sum(r[3]["stopped_on_eos"] and r[3]["generated_tokens"] >= 3 for r in results)
            ok = worst >= MIN_MARGIN and (not spec.get("eos_boost") or n_eos >= 1)
            print(f"== {name} seed {seed}: min margin {worst:.4f}, eos-stopped cases {n_eos} "
                  f"-> {'accepted' if ok else 'rejected'}")
            if ok:
                break
        else:
            raise RuntimeError(f"no acceptable seed for {name}")

        names = safetensors_names(mdir)
        all_names = sorted(k for entries in names.values() for k in entries)
        assert ("lm_head.weight" in all_names) == (not spec["tied"])
        (mdir / "cases").mkdir()
        cases = []
        for case_name, case_json, tensors, info in results:
            write_json(mdir / "cases" / f"{case_name}.json", case_json)
            save_file(tensors, str(mdir / "cases" / f"{case_name}.safetensors"), metadata={"format": "pt"})
            print(f"   {case_name}: T={info['prompt_tokens']} img={info['image_tokens']} "
                  f"sizes={info['image_sizes']} gen={info['generated_tokens']} eos={info['stopped_on_eos']} "
                  f"margin={info['min_greedy_margin']}")
            cases.append(info)
        if name == "tiny_a":
            check_processor_equivalence(hf_tok, image_proc)

        rewrite_config(mdir, spec["config_form"], spec["tied"])
        entry = {
            "name": name,
            "description": spec["desc"],
            "seed": seed,
            "config_form": spec["config_form"],
            "saved_dtype": spec["dtype"],
            "tied_lm_head": spec["tied"],
            "eos_boost": spec.get("eos_boost"),
            "files": sorted(p.name for p in mdir.iterdir() if p.is_file()),
            "tensors": names,
            "cases": cases,
        }
        # replace the model's entry, or insert it in MODEL_SPECS order
        order = [s["name"] for s in MODEL_SPECS]
        models = [m for m in manifest["models"] if m["name"] != name] + [entry]
        manifest["models"] = sorted(models, key=lambda m: order.index(m["name"]) if m["name"] in order else len(order))

    write_json(MODELS_DIR / "MANIFEST.json", manifest)
    total = sum(p.stat().st_size for d in (MODELS_DIR, IMAGES_DIR) for p in d.rglob("*") if p.is_file())
    print(f"total fixture size: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
