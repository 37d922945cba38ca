"""One request path: `locr generate` and `locr serve` start a request from the same defaults and
apply the same penalties (runtime/request_defaults.h), so the same greedy request gives the same
text on both."""
import subprocess

import pytest

from conftest import MODEL, NAME, Server, chat, locr_bin

PROMPT = "Write the word banana many times: banana banana banana"
MAX_TOKENS = 24


@pytest.fixture(scope="module")
def srv():
    s = Server("--served-model-name", NAME, "--max-model-len", "512")
    yield s
    s.stop()


def generate(*flags):
    r = subprocess.run([locr_bin(), "generate", "--model", str(MODEL), "--prompt", PROMPT, "--temperature", "0",
                        "--max-tokens", str(MAX_TOKENS), "--no-loop-guard", "--threads", "1", *flags],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("\n")
    return r.stdout[:-1]


def served(srv, **kw):
    r = srv.post("/v1/chat/completions", chat(PROMPT, temperature=0, max_tokens=MAX_TOKENS, loop_guard=False, **kw))
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("flag,field,value", [
    ("--repetition-penalty", "repetition_penalty", 1.8),
    ("--presence-penalty", "presence_penalty", 1.5),
    ("--frequency-penalty", "frequency_penalty", 1.5),
])
def test_generate_applies_the_servers_penalties(srv, flag, field, value):
    plain = served(srv)
    assert generate() == plain
    penalized = served(srv, **{field: value})
    assert penalized != plain, f"{field}={value} does not change the tiny model's greedy text; pick another value"
    assert generate(flag, str(value)) == penalized


def test_generate_refuses_a_bad_penalty():
    r = subprocess.run([locr_bin(), "generate", "--model", str(MODEL), "--prompt", "x", "--repetition-penalty", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "--repetition-penalty must be > 0" in r.stderr


def test_generate_stop_strings_match_the_servers(srv):
    plain = served(srv)
    stop = plain[10:13]
    assert stop.strip() and len(plain) > 16, plain
    stopped = served(srv, stop=[stop])
    assert stopped == plain[:plain.index(stop)]
    assert generate("--stop", stop) == stopped
    # A stop string the output never contains changes nothing.
    assert generate("--stop", "\u2603never\u2603") == plain
