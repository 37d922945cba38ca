"""Faults in the engine stay with the requests they hit (--debug-fail-step / --debug-fail-vision
inject one): the request whose decoder step failed gets an error event in its stream (which the
openai SDK raises) and finish_reason "error"; a request waiting beside it, and every later one, is
served as usual; KV blocks are freed; a failed vision encoding ends only its page of a document."""
import base64
import json
import threading

import openai
import pytest
import requests

from conftest import FIXTURES, IMAGES, NAME, Server, chat, data_url


def sse(resp):
    events = []
    for line in resp.iter_lines(decode_unicode=True):
        if line.startswith("data: "):
            events.append(line[6:])
    return events


@pytest.fixture
def step_fault():
    s = Server("--served-model-name", NAME, "--max-num-seqs", "1", "--debug-fail-step", "300")
    yield s
    assert s.stop() == 0


def test_a_failed_step_ends_its_request_with_an_error_and_the_server_goes_on(step_fault):
    s = step_fault
    long_body = chat("Hello there", max_tokens=2000, ignore_eos=True, temperature=0, stream=True)
    resp = requests.post(s.url + "/v1/chat/completions", json=long_body, stream=True, timeout=120)
    assert resp.status_code == 200
    lines = resp.iter_lines(decode_unicode=True)
    first = next(l for l in lines if l.startswith("data: "))
    # A request sent now waits (--max-num-seqs 1): it is not in the failing step.
    waiting = {}
    t = threading.Thread(target=lambda: waiting.update(r=s.post("/v1/chat/completions", chat(
        "Bonjour", max_tokens=8, temperature=0, ignore_eos=True))))
    t.start()
    events = [first[6:]] + [l[6:] for l in lines if l.startswith("data: ")]
    assert events[-1] == "[DONE]"
    errors = [json.loads(e)["error"] for e in events[:-1] if "error" in json.loads(e)]
    assert len(errors) == 1, events[-4:]
    assert errors[0]["code"] == 500 and "injected fault (--debug-fail-step 300)" in errors[0]["message"], errors
    finals = [json.loads(e) for e in events[:-1] if "choices" in json.loads(e) and json.loads(e)["choices"][0]["finish_reason"]]
    assert [f["choices"][0]["finish_reason"] for f in finals] == ["error"]
    t.join(60)
    assert waiting["r"].status_code == 200, waiting["r"].text
    assert waiting["r"].json()["choices"][0]["finish_reason"] == "length"
    assert waiting["r"].json()["usage"]["completion_tokens"] == 8
    # Later requests too, through the official client.
    client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    r = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "again"}], max_tokens=5,
                                       extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 5
    m = s.metrics()
    assert m["vllm:num_requests_running"] == 0 and m["vllm:kv_cache_usage_perc"] == 0
    assert 'finished_reason="error"} 1.0' in requests.get(s.url + "/metrics", timeout=10).text
    assert "a step failed: injected fault" in s.log


def test_the_openai_sdk_raises_on_the_error_event():
    s = Server("--served-model-name", NAME, "--debug-fail-step", "3")
    try:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        stream = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}], max_tokens=50,
                                                stream=True, extra_body={"ignore_eos": True})
        with pytest.raises(openai.APIError) as e:
            for _ in stream:
                pass
        assert "injected fault" in str(e.value)
        # The server goes on: the next request (no fault left to hit) is served.
        s2 = client.completions.create(model=NAME, prompt="x", max_tokens=3, extra_body={"ignore_eos": True})
        assert s2.choices[0].finish_reason == "length"
    finally:
        assert s.stop() == 0


def test_a_failed_vision_encoding_ends_only_its_page():
    s = Server("--served-model-name", NAME, "--debug-fail-vision", "1", "--ocr-pages-in-flight", "1")
    try:
        tif = (FIXTURES / "documents" / "multipage.tif").read_bytes()
        r = s.post("/v1/ocr", {"document": base64.b64encode(tif).decode(), "max_tokens": 4, "temperature": 0})
        assert r.status_code == 200, r.text
        pages = r.json()["pages"]
        assert len(pages) >= 2
        assert pages[0]["finish_reason"] == "error"
        assert "vision encoder: injected fault (--debug-fail-vision 1)" in pages[0]["error"]
        assert all(p["finish_reason"] in ("stop", "length") and "error" not in p for p in pages[1:]), pages
        # A chat request with an image afterwards: its encoding is not the failing one.
        c = s.post("/v1/chat/completions", {"model": NAME, "max_tokens": 4, "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": data_url(IMAGES / "page_small.png")}}]}]})
        assert c.status_code == 200 and c.json()["choices"][0]["finish_reason"] in ("stop", "length"), c.text
        assert s.metrics()["vllm:kv_cache_usage_perc"] == 0
    finally:
        assert s.stop() == 0


def test_fault_flags_must_be_counts():
    import subprocess
    from conftest import MODEL, locr_bin
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "--debug-fail-step", "soon", "--port", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "debug-fail-step" in out.stderr
