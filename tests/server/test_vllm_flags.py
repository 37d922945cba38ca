"""Every `vllm serve` flag: tests/server/vllm_serve_flags.txt (vLLM's list), the table in docs/api.md
and the binary agree. One server starts with every accepted flag at once (each no-effect flag then
logs its notice); every refused value stops start-up with a message naming the flag."""
import re
import subprocess

import pytest

from conftest import IMAGES, MODEL, ROOT, Server, locr_bin

FLAGS_FILE = ROOT / "tests" / "server" / "vllm_serve_flags.txt"
API_MD = ROOT / "docs" / "api.md"

# Accepted flags left out of the all-at-once start, and the test that covers each.
COVERED_ELSEWHERE = {
    "--host": "conftest.Server (every server test)",
    "--port": "conftest.Server (every server test)",
    "--ssl-keyfile": "test_tls.py", "--ssl-certfile": "test_tls.py", "--ssl-ca-certs": "test_tls.py",
    "--ssl-cert-reqs": "test_tls.py", "--ssl-ciphers": "test_tls.py",
    "--api-key": "test_errors.py (authentication)", "--model": "test_dropin.py::test_model_flag",
    "--uvicorn-log-level": "test_dropin.py::test_uvicorn_log_level_debug_and_max_log_len",
    "--disable-log-requests": "test_dropin.py::test_access_log_flags",
    "--disable-uvicorn-access-log": "test_dropin.py::test_access_log_flags",
    # vLLM's sample value, fp8, quantizes the weights at load (Q8_0): no no-effect notice.
    "--quantization": "test_vllm_flags.py::test_quantization_* (fp8, q8_0, q4_k, q4_k_m, and awq's notice)",
}

# A value each refused-unless flag cannot take (flags: given bare).
BAD_VALUES = {
    "--tensor-parallel-size": "2", "--pipeline-parallel-size": "2", "--data-parallel-size": "4",
    "--decode-context-parallel-size": "2", "--data-parallel-size-local": "2", "--data-parallel-rank": "1",
    "--data-parallel-start-rank": "1", "--task": "embed", "--runner": "pooling", "--convert": "embed",
    "--load-format": "gguf",
}


def vllm_flags():
    """[(flag, aliases, sample)] in file order."""
    out = []
    for line in FLAGS_FILE.read_text().splitlines():
        if not line.startswith("--"):
            continue
        m = re.match(r"(--[\w-]+)(?: \(([^)]*)\))?(?: (.*))?$", line)
        assert m, line
        sample = (m.group(3) or "").replace("{model}", str(MODEL)).replace("{images}", str(IMAGES))
        out.append((m.group(1), m.group(2).split(", ") if m.group(2) else [], sample if m.group(3) else None))
    return out


def doc_table():
    """{flag: status} from the 'Every vllm serve flag' table of docs/api.md."""
    text = API_MD.read_text()
    section = text[text.index("### Every `vllm serve` flag"):]
    section = section[:section.index("\n## ")]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(--[\w-]+)`(?: \(`([^`]*)`\))? \| ([^|]+) \|", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} twice in docs/api.md"
            rows[m.group(1)] = m.group(3).strip()
    return rows


def allowed_values(status):
    m = re.fullmatch(r"refused unless `([^`]*)`", status)
    return m.group(1).split(",") if m else None


def test_the_doc_table_lists_exactly_vllms_flags_with_a_known_status():
    flags = [f for f, _, _ in vllm_flags()]
    assert len(flags) == len(set(flags))
    table = doc_table()
    assert sorted(table) == sorted(flags)
    for flag, status in table.items():
        assert status in ("implemented", "no effect", "refused") or allowed_values(status), (flag, status)


def test_the_doc_table_names_the_aliases():
    text = API_MD.read_text()
    for flag, aliases, _ in vllm_flags():
        for a in aliases:
            assert f"| `{flag}` (`{a}`) |" in text, (flag, a)


def test_every_flag_is_declared_by_the_binary():
    out = subprocess.run([locr_bin(), "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for flag, _, _ in vllm_flags():
        assert re.search(rf"^  {re.escape(flag.replace('_', '-'))}\b", out.stdout, re.M), flag


@pytest.fixture(scope="module")
def everything_server():
    table = doc_table()
    args = []
    for flag, aliases, sample in vllm_flags():
        status = table[flag]
        if flag in COVERED_ELSEWHERE or status == "refused":
            continue
        allowed = allowed_values(status)
        if allowed == ["false"]:
            args.append("--no-" + flag[2:])
            continue
        value = allowed[-1] if allowed else sample
        # Short aliases where vLLM has them, so they are exercised too.
        name = "-" + aliases[0][1:] if aliases else flag
        args += [name] if value is None else [name, value]
    s = Server(*args)
    yield s
    assert s.stop() == 0


def test_every_accepted_flag_starts_the_server_with_its_notice(everything_server):
    log = everything_server.log
    for flag, status in doc_table().items():
        if status == "no effect" and flag not in COVERED_ELSEWHERE:
            assert f"note: {flag.replace('_', '-')} has no effect in locr: " in log, flag
    # The notice is printed once per flag.
    assert log.count("note: --trust-remote-code has no effect") == 1
    # And the server serves (its implemented flags included: --served-model-name, --root-path).
    r = everything_server.get("/ocr/v1/models")
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]][0] == "lightonocr-2-1b"


@pytest.mark.parametrize("flag", [f for f, s in doc_table().items() if s.startswith("refused")])
def test_refused_flags_stop_start_up_with_a_clear_message(flag):
    status = doc_table()[flag]
    sample = {f: s for f, _, s in vllm_flags()}[flag]
    if allowed_values(status) == ["false"] or sample is None:
        args = [flag]
    else:
        args = [flag, BAD_VALUES.get(flag, sample)]
    out = subprocess.run([locr_bin(), "serve", str(MODEL), *args, "--port", "0"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert re.search(rf"{re.escape(flag)}( .+)? is not possible: ", out.stderr), out.stderr


def test_quantization_q8_0_quantizes_at_load_and_serves():
    s = Server("-q", "Q8_0")
    try:
        assert "weight matrices quantized to Q8_0 at load" in s.log
        assert "--quantization has no effect" not in s.log
        r = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


def test_quantization_fp8_is_vllm_spelling_for_q8_0():
    # vLLM's online FP8 weights: 8-bit weights at load, locr's Q8_0, and the log says so.
    s = Server("--quantization", "fp8")
    try:
        assert "--quantization fp8: the weights are quantized to 8 bits as GGUF Q8_0" in s.log
        assert "weight matrices quantized to Q8_0 at load" in s.log
        assert "--quantization has no effect" not in s.log
        r = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


def test_quantization_help_says_what_it_does():
    # The flag sits in the no-effect table for vLLM's other methods; its help must not say "no effect" alone.
    out = subprocess.run([locr_bin(), "serve", "--help"], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    i = text.index("--quantization")
    assert "q8_0, q4_k or q4_k_m: quantize the weights at load" in text[i:i + 300], text[i:i + 300]


def test_quantization_q4_k_quantizes_at_load_and_serves():
    # tiny_a's widths (64, 128) are no whole Q4_K super-blocks: its weights fall back to Q8_0, said so.
    s = Server("--quantization", "q4_k")
    try:
        assert "quantization q4_k: 0 weight matrices quantized to Q4_K at load, 32 to Q8_0" in s.log
        assert "--quantization has no effect" not in s.log
        r = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


def test_quantization_q4_k_m_quantizes_at_load_and_serves():
    # tiny_a: every text and vision weight falls back to Q8_0 (rows of 64 / 128 / 32), the log says so.
    s = Server("--quantization", "q4_k_m")
    try:
        assert "quantization q4_k_m: 0 weight matrices quantized to Q4_K at load, 0 to Q6_K, 32 to Q8_0" in s.log
        assert "--quantization has no effect" not in s.log
        r = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1
    finally:
        assert s.stop() == 0


def test_short_aliases_and_underscores():
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "-tp", "2", "--port", "0"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and "--tensor-parallel-size 2 is not possible" in out.stderr
    out = subprocess.run([locr_bin(), "serve", str(MODEL), "--tensor_parallel_size=2", "--port", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--tensor-parallel-size 2 is not possible" in out.stderr
    s = Server("-O3", "-q", "awq", "--max_model_len", "512", "--served-model-name", "a", "b")
    try:
        assert "--compilation-config has no effect" in s.log
        assert "--quantization has no effect" in s.log
        names = [m["id"] for m in s.get("/v1/models").json()["data"]]
        assert names[:2] == ["a", "b"]
        for name in ("a", "b"):  # each served name is accepted in "model"
            r = s.post("/v1/completions", {"model": name, "prompt": "hi", "max_tokens": 1})
            assert r.status_code == 200 and r.json()["model"] == name
        assert s.post("/v1/completions", {"model": "c", "prompt": "hi", "max_tokens": 1}).status_code == 404
    finally:
        assert s.stop() == 0
