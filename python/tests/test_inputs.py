"""Images in every form LLM.chat and LLM.generate accept give the same tokens."""
import base64
from pathlib import Path

import pytest
from PIL import Image

from conftest import IMAGES
from locr import SamplingParams

GREEDY = SamplingParams(temperature=0, max_tokens=16)


def chat_with(part):
    return [{"role": "user", "content": [part, {"type": "text", "text": "OCR"}]}]


@pytest.mark.parametrize("name", ["page_small.png", "photo.jpg", "rgba.png"])
def test_every_image_form_gives_the_same_tokens(llm, name):
    path = IMAGES / name
    data = path.read_bytes()
    mime = "image/jpeg" if name.endswith(".jpg") else "image/png"
    forms = {
        "path str": {"type": "image_url", "image_url": {"url": str(path)}},
        "pathlib": {"type": "image", "image": Path(path)},
        "url string": {"type": "image_url", "image_url": str(path)},
        "file url": {"type": "image_url", "image_url": {"url": path.as_uri()}},
        "data url": {"type": "image_url", "image_url": {"url": f"data:{mime};base64," + base64.b64encode(data).decode()}},
        "bytes": {"type": "image", "image": data},
        "PIL": {"type": "image_pil", "image_pil": Image.open(path)},
        "file object": {"type": "image", "image": open(path, "rb")},
    }
    outs = llm.chat([chat_with(p) for p in forms.values()], GREEDY, use_tqdm=False)
    reference = outs[0]
    assert reference.error is None and len(reference.outputs[0].token_ids) > 0
    for form, out in zip(forms, outs):
        assert out.error is None, form
        assert out.prompt_token_ids == reference.prompt_token_ids, form
        assert out.outputs[0].token_ids == reference.outputs[0].token_ids, form


def test_pil_image_in_multi_modal_data_equals_path(llm):
    tok = llm.get_tokenizer()
    prompt = f"<|im_start|>user\n{tok.image_token}<|im_end|>\n<|im_start|>assistant\n"
    path = IMAGES / "page_small.png"
    a, b, c = llm.generate([{"prompt": prompt, "multi_modal_data": {"image": str(path)}},
                            {"prompt": prompt, "multi_modal_data": {"image": Image.open(path)}},
                            {"prompt": prompt, "multi_modal_data": {"image": [path.read_bytes()]}}],
                           GREEDY, use_tqdm=False)
    assert a.error is None
    assert a.outputs[0].token_ids == b.outputs[0].token_ids == c.outputs[0].token_ids
    # The image placeholder was expanded to the image's tokens.
    assert a.prompt_token_ids.count(llm.info["image_token_id"]) > 1


def test_chat_and_raw_prompt_with_the_template_agree(llm):
    path = IMAGES / "page_small.png"
    conv = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": str(path)}}]}]
    text = llm.get_tokenizer().apply_chat_template(conv, tokenize=False)
    chat = llm.chat(conv, GREEDY, use_tqdm=False)[0]
    raw = llm.generate({"prompt": text, "multi_modal_data": {"image": str(path)}}, GREEDY, use_tqdm=False)[0]
    assert chat.prompt_token_ids == raw.prompt_token_ids
    assert chat.outputs[0].token_ids == raw.outputs[0].token_ids


def test_chat_template_kwargs(tmp_path):
    from conftest import MODEL
    from locr import LLM
    template = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
                "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}")
    with LLM(str(MODEL), max_model_len=256, chat_template=template) as engine:
        conv = [{"role": "user", "content": "hi"}]
        tok = engine.get_tokenizer()
        assert tok.apply_chat_template(conv, tokenize=False) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        off = tok.apply_chat_template(conv, tokenize=False, chat_template_kwargs={"enable_thinking": False})
        assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        assert tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=False) == "<|im_start|>user\nhi<|im_end|>\n"
        out = engine.chat(conv, GREEDY, chat_template_kwargs={"enable_thinking": False}, use_tqdm=False)[0]
        assert out.prompt == off
