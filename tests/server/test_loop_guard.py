"""The loop guard: a greedy generation of the random tiny model that settles into a cycle is
stopped early with finish_reason "stop" and stop_reason "repetition", counted in /metrics; it can be
switched off per request and per server, and ignore_eos (fixed-length) requests default to off."""
from conftest import NAME, Server, chat


def loop_request(**kw):
    """Greedy, with EOS held back (min_tokens) so that the generation cannot end before it cycles,
    whatever the random model's numerics on this machine make of the prompt."""
    body = chat("Hello, how are you?", temperature=0, max_tokens=4000)
    body.update(kw)
    body["min_tokens"] = body["max_tokens"]
    return body


def test_loop_is_stopped_and_counted():
    s = Server("--served-model-name", NAME, "--max-model-len", "8192")
    try:
        before = s.metrics().get("locr:repetition_stops_total", 0)
        r = s.post("/v1/chat/completions", loop_request(), timeout=300).json()
        choice = r["choices"][0]
        assert choice["finish_reason"] == "stop"
        assert choice["stop_reason"] == "repetition"
        assert r["usage"]["completion_tokens"] < 4000
        assert s.metrics()["locr:repetition_stops_total"] == before + 1
        # Per request off: the same generation runs to its length.
        r = s.post("/v1/chat/completions", loop_request(max_tokens=1500, loop_guard=False), timeout=300).json()
        assert r["choices"][0]["finish_reason"] == "length"
        assert r["usage"]["completion_tokens"] == 1500
    finally:
        s.stop()


def test_server_flag_turns_it_off():
    s = Server("--served-model-name", NAME, "--max-model-len", "8192", "--no-loop-guard")
    try:
        r = s.post("/v1/chat/completions", loop_request(max_tokens=1500), timeout=300).json()
        assert r["choices"][0]["finish_reason"] == "length"
    finally:
        s.stop()
