"""The same greedy request gives the same text through locr.LLM as through `locr serve` (the
wheel's own binary) and `locr ocr --model`: text, image and PDF page."""
import base64
import json
import subprocess

from conftest import IMAGES, MODEL, locr_bin
from locr import SamplingParams
from minimal_pdf import make_pdf

GREEDY = dict(temperature=0, max_tokens=24)


def test_completion_text_equals_serve(llm, server):
    prompts = ["Hello, my name is", "Tables: | a | b |", "数字 1 2 3"]
    outs = llm.generate(prompts, SamplingParams(**GREEDY), use_tqdm=False)
    for prompt, out in zip(prompts, outs):
        r = server.post("/v1/completions", {"model": "m", "prompt": prompt, **GREEDY})
        assert out.outputs[0].text == r["choices"][0]["text"]
        assert out.outputs[0].finish_reason == r["choices"][0]["finish_reason"]
        assert len(out.prompt_token_ids) == r["usage"]["prompt_tokens"]
        assert len(out.outputs[0].token_ids) == r["usage"]["completion_tokens"]
        assert out.prompt == prompt


def test_token_id_prompt_equals_text_prompt(llm):
    tok = llm.get_tokenizer()
    ids = tok.encode("The capital of France is")
    a, b = llm.generate(["The capital of France is", ids], SamplingParams(**GREEDY), use_tqdm=False)
    assert a.outputs[0].token_ids == b.outputs[0].token_ids
    assert b.prompt_token_ids == ids


def test_chat_text_and_image_equal_serve(llm, server):
    png = (IMAGES / "page_small.png").read_bytes()
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    conversations = [
        [{"role": "system", "content": "You are a concise assistant."},
         {"role": "user", "content": "用一句中文说明 TCP 和 UDP 的核心区别。"}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}],
        [{"role": "user", "content": [{"type": "text", "text": "Read:"},
                                      {"type": "image_url", "image_url": {"url": url}}]}],
    ]
    outs = llm.chat(conversations, SamplingParams(**GREEDY), use_tqdm=False)
    for conv, out in zip(conversations, outs):
        r = server.post("/v1/chat/completions", {"model": "m", "messages": conv, **GREEDY})
        assert out.outputs[0].text == r["choices"][0]["message"]["content"]
        assert len(out.prompt_token_ids) == r["usage"]["prompt_tokens"]
        assert out.error is None


def test_chat_prompt_is_the_template_and_tokenizer_matches_serve(llm, server):
    conv = [{"role": "user", "content": "hi there"}]
    text = llm.get_tokenizer().apply_chat_template(conv, tokenize=False)
    ids = llm.get_tokenizer().apply_chat_template(conv)
    r = server.post("/tokenize", {"model": "m", "messages": conv})
    assert ids == r["tokens"]
    out = llm.chat(conv, SamplingParams(temperature=0, max_tokens=2), use_tqdm=False)[0]
    assert out.prompt == text
    assert out.prompt_token_ids == ids
    assert llm.get_tokenizer().encode("some text") == server.post("/tokenize", {"model": "m", "prompt": "some text"})["tokens"]


def test_ocr_pdf_pages_equal_serve_and_locr_ocr(llm, server, tmp_path):
    pdf = make_pdf(2)
    pages = llm.ocr(pdf, dpi=72, sampling_params=SamplingParams(temperature=0, max_tokens=40), use_tqdm=False)
    assert [p.page for p in pages] == [1, 2]
    r = server.post("/v1/ocr", {"model": "m", "document": base64.b64encode(pdf).decode(), "dpi": 72,
                                "temperature": 0, "max_tokens": 40})
    for page, ref in zip(pages, r["pages"]):
        assert page.text == ref["text"]
        assert page.finish_reason == ref["finish_reason"]
        assert (page.width, page.height) == (ref["dimensions"]["width"], ref["dimensions"]["height"])
        assert page.confidence["score"] == ref["confidence"]["score"]
        assert len(page.token_ids) == ref["usage"]["completion_tokens"]
    # `locr ocr --model` writes the same Markdown per page.
    doc = tmp_path / "doc.pdf"
    doc.write_bytes(pdf)
    subprocess.run([locr_bin(), "ocr", str(doc), "-o", str(tmp_path / "out"), "--model", str(MODEL), "--dpi", "72",
                    "--temperature", "0", "--max-tokens", "40", "--max-model-len", "1024"], check=True,
                   capture_output=True)
    for page in pages:
        written = (tmp_path / "out" / "doc" / f"page-{page.page:04d}.md").read_text()
        assert written.strip() == page.text.strip()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["documents"][0]["pages"][0]["finish_reason"] == pages[0].finish_reason
