"""Endpoints and request fields: shapes, streaming framing, usage, sampling fields, stop handling."""
import json

import requests

from conftest import NAME, chat, greedy


def sse_events(resp):
    """The `data:` payloads of an SSE response, checking the framing on the way."""
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    raw = resp.content.decode()
    assert raw.endswith("\n\n")
    events = raw.split("\n\n")[:-1]
    for e in events:
        assert e.startswith("data: "), e
        assert "\n" not in e
    return [e[len("data: "):] for e in events]


def test_models_health_version(server):
    r = server.get("/v1/models").json()
    assert r["data"][0]["id"] == NAME and r["data"][0]["object"] == "model"
    assert server.get("/health").status_code == 200
    assert "version" in server.get("/version").json()


def test_request_id_is_echoed_or_generated(server):
    r = server.post("/v1/chat/completions", chat("hi", max_tokens=2), headers={"X-Request-Id": "my-id-123"})
    assert r.headers["X-Request-Id"] == "my-id-123"
    assert r.json()["id"] == "chatcmpl-my-id-123"
    r2 = server.post("/v1/chat/completions", chat("hi", max_tokens=2))
    assert len(r2.headers["X-Request-Id"]) >= 16
    assert any("id=my-id-123" in line for line in server.lines)


def test_chat_stream_framing_and_usage(server):
    body = chat("Tell me a story", stream=True, stream_options={"include_usage": True}, **greedy(max_tokens=8))
    resp = server.post("/v1/chat/completions", body)
    assert resp.status_code == 200
    data = sse_events(resp)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    final = chunks[-1]
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 8
    assert all(c["usage"] is None for c in chunks[:-1])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks[:-1]]
    assert finishes[-1] == "length" and all(f is None for f in finishes[:-1])
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1])
    whole = server.post("/v1/chat/completions", chat("Tell me a story", **greedy(max_tokens=8))).json()
    assert text == whole["choices"][0]["message"]["content"]
    assert final["usage"] == whole["usage"]


def test_stream_without_usage_has_no_usage_chunk(server):
    data = sse_events(server.post("/v1/completions", {"prompt": "abc", "stream": True, **greedy(max_tokens=3)}))
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["choices"] and "usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_usage_matches_tokenize(server):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is OCR, really?"}]
    tok = server.post("/tokenize", {"model": NAME, "messages": messages}).json()
    r = server.post("/v1/chat/completions", {"messages": messages, **greedy(max_tokens=5)}).json()
    assert r["usage"]["prompt_tokens"] == tok["count"] == len(tok["tokens"])
    assert r["usage"]["completion_tokens"] == 5
    assert r["choices"][0]["finish_reason"] == "length"
    tok2 = server.post("/tokenize", {"prompt": "hello world, again"}).json()
    r2 = server.post("/v1/completions", {"prompt": "hello world, again", **greedy(max_tokens=4)}).json()
    assert r2["usage"]["prompt_tokens"] == tok2["count"]
    # Token ids as the prompt give the same completion as the text.
    r3 = server.post("/v1/completions", {"prompt": tok2["tokens"], **greedy(max_tokens=4)}).json()
    assert r3["choices"][0]["text"] == r2["choices"][0]["text"]


def test_tokenize_detokenize_roundtrip(server):
    tok = server.post("/tokenize", {"prompt": "The quick brown fox", "return_token_strs": True}).json()
    assert tok["max_model_len"] == 1024 and len(tok["token_strs"]) == tok["count"]
    assert server.post("/detokenize", {"tokens": tok["tokens"]}).json()["prompt"] == "The quick brown fox"


def test_detokenize_embedding_rows_without_a_token(server):
    """Ids past the tokenizer but inside the embedding table (the tiny model: tokenizer ids 0..725,
    768 rows; the real one: 151669..151935) are empty pieces, as `tokenizers` decodes them."""
    tok = server.post("/tokenize", {"prompt": "The quick brown fox"}).json()["tokens"]
    r = server.post("/detokenize", {"tokens": [730] + tok[:2] + [767, 726] + tok[2:]})
    assert r.status_code == 200, r.text
    assert r.json()["prompt"] == "The quick brown fox"
    assert server.post("/detokenize", {"tokens": [767]}).json()["prompt"] == ""
    # Past the embedding table is still out of range.
    r = server.post("/detokenize", {"tokens": [768]})
    assert r.status_code == 400 and "out of range [0, 768)" in r.json()["error"]["message"]


def test_completions_list_of_prompts_and_n(server):
    r = server.post("/v1/completions", {"prompt": ["one", "two"], "n": 2, **greedy(max_tokens=3)}).json()
    assert [c["index"] for c in r["choices"]] == [0, 1, 2, 3]
    # Greedy: the n choices of one prompt agree.
    assert r["choices"][0]["text"] == r["choices"][1]["text"]
    assert r["usage"]["completion_tokens"] == 12


def test_seed_reproducible(server):
    body = chat("Write something", temperature=1.0, top_p=1.0, seed=7, max_tokens=12, ignore_eos=True)
    a = server.post("/v1/chat/completions", body).json()["choices"][0]["message"]["content"]
    b = server.post("/v1/chat/completions", body).json()["choices"][0]["message"]["content"]
    assert a == b
    others = {server.post("/v1/chat/completions", {**body, "seed": s}).json()["choices"][0]["message"]["content"]
              for s in range(8, 12)}
    assert len(others | {a}) > 1


def test_sampling_fields_accepted(server):
    body = chat("x", temperature=0.7, top_p=0.9, top_k=20, min_p=0.05, repetition_penalty=1.1,
                presence_penalty=0.5, frequency_penalty=0.5, min_tokens=3, max_completion_tokens=6,
                skip_special_tokens=False, seed=3)
    r = server.post("/v1/chat/completions", body)
    assert r.status_code == 200, r.text
    assert 3 <= r.json()["usage"]["completion_tokens"] <= 6


def test_chat_logprobs_shape(server):
    r = server.post("/v1/chat/completions", chat("hi", logprobs=True, top_logprobs=3, **greedy(max_tokens=4))).json()
    content = r["choices"][0]["logprobs"]["content"]
    assert len(content) == 4
    for entry in content:
        assert entry["logprob"] <= 0 and isinstance(entry["bytes"], list)
        assert len(entry["top_logprobs"]) == 3
        # Greedy: the chosen token is the most likely one.
        assert abs(entry["top_logprobs"][0]["logprob"] - entry["logprob"]) < 1e-5


def test_completion_logprobs_shape(server):
    r = server.post("/v1/completions", {"prompt": "abc", "logprobs": 2, **greedy(max_tokens=3)}).json()
    lp = r["choices"][0]["logprobs"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"]) == 3
    assert all(2 <= len(t) <= 3 for t in lp["top_logprobs"])


def _greedy_text(server, prompt, n=24):
    r = server.post("/v1/completions", {"prompt": prompt, **greedy(max_tokens=n)}).json()
    return r["choices"][0]["text"]


def test_stop_string_not_leaked(server):
    prompt = "Once upon a time"
    full = _greedy_text(server, prompt)
    # A stop string from the middle of the greedy text (3 characters from position 6).
    stop = full[6:9]
    expected = full[: full.index(stop)]
    r = server.post("/v1/completions", {"prompt": prompt, "stop": [stop, "never-appears"], **greedy(max_tokens=24)}).json()
    c = r["choices"][0]
    assert c["text"] == expected
    assert c["finish_reason"] == "stop" and c["stop_reason"] == stop
    # Streaming: the deltas never carry any part of the stop string.
    resp = server.post("/v1/completions", {"prompt": prompt, "stop": stop, "stream": True, **greedy(max_tokens=24)})
    chunks = [json.loads(d) for d in sse_events(resp)[:-1]]
    assert "".join(ch["choices"][0]["text"] for ch in chunks) == expected
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"][0]["stop_reason"] == stop
    # include_stop_str_in_output keeps it.
    r = server.post("/v1/completions", {"prompt": prompt, "stop": stop, "include_stop_str_in_output": True,
                                        **greedy(max_tokens=24)}).json()
    assert r["choices"][0]["text"] == expected + stop


def test_stop_token_ids(server):
    prompt = "Stop tokens test"
    ids = server.post("/v1/completions", {"prompt": prompt, "logprobs": 0, "return_tokens_as_token_ids": True,
                                          **greedy(max_tokens=6)}).json()["choices"][0]["logprobs"]["tokens"]
    ids = [int(t.split(":")[1]) for t in ids]
    target = ids[3]
    first = ids.index(target)
    r = server.post("/v1/completions", {"prompt": prompt, "stop_token_ids": [target], **greedy(max_tokens=6)}).json()
    c = r["choices"][0]
    assert c["finish_reason"] == "stop" and c["stop_reason"] == target
    assert r["usage"]["completion_tokens"] == first + 1


def test_echo(server):
    r = server.post("/v1/completions", {"prompt": "Echo me", "echo": True, **greedy(max_tokens=2)}).json()
    assert r["choices"][0]["text"].startswith("Echo me")


def test_default_max_tokens_fills_context(server):
    tok = server.post("/tokenize", {"prompt": "fill"}).json()["count"]
    r = server.post("/v1/completions", {"prompt": "fill", "temperature": 0, "ignore_eos": True}, timeout=120).json()
    assert r["usage"]["completion_tokens"] == 1024 - tok
    assert r["choices"][0]["finish_reason"] == "length"


def test_metrics_text(server):
    text = server.get("/metrics").text
    for name in ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
                 "vllm:time_to_first_token_seconds_bucket", "vllm:e2e_request_latency_seconds_count",
                 "http_requests_total", "locr:client_disconnects_total"]:
        assert name in text, name
    assert f'model_name="{NAME}"' in text
