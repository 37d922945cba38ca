"""Speculative decoding through the server: --speculative-config (vLLM's JSON), a request's own
speculative_config and draft_text (also inside vllm_xargs), /v1/ocr drafting from a PDF page's text
layer by itself. Greedy output is the same with and without drafts; the spec_decode metrics count
them; a /v1/ocr page says what was drafted and accepted; sampled requests speculate too."""
import base64
import sys
from pathlib import Path

import pytest

from conftest import NAME, Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from minimal_pdf import make_text_pdf  # noqa: E402

GREEDY = {"temperature": 0, "max_tokens": 40}
PROMPTS = ["Hello, my name is", "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 |", "Once upon a time, once upon a time"]


def spec_counts(s):
    m = s.metrics()
    return (m.get("vllm:spec_decode_num_draft_tokens_total", 0), m.get("vllm:spec_decode_num_accepted_tokens_total", 0))


@pytest.fixture(scope="module")
def plain():
    s = Server("--served-model-name", NAME, "--max-model-len", "1024")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def ngram():
    s = Server("--served-model-name", NAME, "--max-model-len", "1024", "--speculative-config",
               '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1}')
    yield s
    s.stop()


def completion(s, prompt, **extra):
    r = s.post("/v1/completions", {"model": NAME, "prompt": prompt, **GREEDY, **extra})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def test_ngram_server_gives_the_same_greedy_text(plain, ngram):
    assert "speculative decoding: ngram, up to 4 draft tokens per step" in ngram.log
    assert "--speculative-config has no effect" not in ngram.log
    for p in PROMPTS:
        a, b = completion(plain, p), completion(ngram, p)
        assert a["text"] == b["text"] and a["finish_reason"] == b["finish_reason"], p
    drafted, accepted = spec_counts(ngram)
    assert drafted > 0 and 0 <= accepted <= drafted
    m = ngram.get("/metrics").text
    assert "vllm:spec_decode_num_drafts_total" in m
    assert 'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="%s",position="0"}' % NAME in m
    # Sampled requests speculate too (the speculative sampling rule; its distribution is tested in
    # tests/unit/speculative_test.cc).
    before = spec_counts(ngram)
    r = ngram.post("/v1/completions", {"model": NAME, "prompt": PROMPTS[1], "temperature": 1.0, "seed": 5,
                                       "top_k": 3, "max_tokens": 30})
    assert r.status_code == 200
    assert r.json()["usage"]["completion_tokens"] > 0


def test_a_request_turns_speculation_off_or_on(plain, ngram):
    before = spec_counts(ngram)
    off = completion(ngram, PROMPTS[1], speculative_config=False)
    assert spec_counts(ngram) == before
    assert off["text"] == completion(plain, PROMPTS[1])["text"]
    before = spec_counts(plain)
    on = completion(plain, PROMPTS[1], vllm_xargs={"speculative_config": {"method": "ngram", "num_speculative_tokens": 3,
                                                                           "prompt_lookup_min": 1}})
    assert on["text"] == off["text"]
    assert spec_counts(plain)[0] > before[0]


def test_draft_text_drafts_from_a_given_text(plain):
    ref = completion(plain, PROMPTS[2])
    before = spec_counts(plain)
    again = completion(plain, PROMPTS[2], draft_text=ref["text"])
    assert again["text"] == ref["text"]
    drafted, accepted = spec_counts(plain)
    assert drafted > before[0] and accepted > before[1], "drafts of the exact output must be accepted"
    chat = plain.post("/v1/chat/completions", {"model": NAME, "messages": [{"role": "user", "content": "hi"}], **GREEDY,
                                               "vllm_xargs": {"draft_text": "anything at all"}})
    assert chat.status_code == 200


def test_bad_speculative_config_is_a_clear_error(plain):
    r = plain.post("/v1/completions", {"model": NAME, "prompt": "x", "speculative_config": {"method": "eagle",
                                                                                          "num_speculative_tokens": 2}})
    assert r.status_code == 400 and "not supported" in r.json()["error"]["message"]
    assert r.json()["error"]["param"] == "speculative_config"


def test_bad_speculative_config_flag_stops_start_up():
    import subprocess
    from conftest import MODEL, locr_bin
    r = subprocess.run([locr_bin(), "serve", str(MODEL), "--port", "0", "--speculative-config",
                        '{"method": "ngram"}'], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "num_speculative_tokens' is required" in r.stderr


def test_ocr_drafts_from_the_pdf_text_layer(plain):
    pdf = make_text_pdf([["Invoice 2026-001", "Total: 42.00 EUR", "Thank you."], ["Page two text", "More lines"]])
    body = {"model": NAME, "document": base64.b64encode(pdf).decode(), "dpi": 72, **GREEDY}
    r = plain.post("/v1/ocr", body)
    if r.status_code == 400 and "Poppler" in r.text:
        pytest.skip("built without Poppler")
    assert r.status_code == 200, r.text
    off = plain.post("/v1/ocr", {**body, "speculative_config": False}).json()
    on = r.json()
    for a, b in zip(on["pages"], off["pages"]):
        assert a["text"] == b["text"] and a["finish_reason"] == b["finish_reason"]
        assert "speculative" not in b
        assert a["speculative"]["drafted"] > 0 and 0 <= a["speculative"]["accepted"] <= a["speculative"]["drafted"]
    # A PDF without a text layer does not speculate.
    from minimal_pdf import make_pdf
    scan = plain.post("/v1/ocr", {**body, "document": base64.b64encode(make_pdf(1)).decode()}).json()
    assert "speculative" not in scan["pages"][0]
