"""/metrics as gateways and dashboards read it: parsed with prometheus_client's own text parser,
every family with HELP and TYPE, the series the Kubernetes Gateway API Inference Extension / llm-d
endpoint picker scrapes (vllm:num_requests_waiting, vllm:num_requests_running,
vllm:kv_cache_usage_perc, vllm:cache_config_info) moving with load, and vLLM's per-request
histograms counting the requests sent. Also /v1/models field by field against vLLM's ModelCard."""
import os
import re
import threading
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import NAME, Server, chat, greedy

BLOCK_SIZE = 8


def scrape(s):
    """{family name: Metric} of one /metrics scrape (counters named without _total, as the parser does)."""
    r = s.get("/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def value(families, family, sample=None, **labels):
    """The value of the one sample of `family` named `sample` (default: the family name) whose labels
    include `labels`."""
    sample = sample or family
    found = [s.value for s in families[family].samples
             if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (family, sample, labels, families[family].samples)
    return found[0]


def hist_count(families, name):
    return value(families, name, name + "_count", model_name=NAME)


def hist_sum(families, name):
    return value(families, name, name + "_sum", model_name=NAME)


@pytest.fixture(scope="module")
def srv():
    # One sequence at a time, so a second request waits while the first runs.
    s = Server("--served-model-name", NAME, "--max-model-len", "4096", "--block-size", str(BLOCK_SIZE),
               "--max-num-seqs", "1")
    yield s
    s.stop()


def wait_for(cond, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_every_family_has_help_and_type(srv):
    srv.post("/v1/chat/completions", chat("hello", **greedy(max_tokens=3)))
    text = srv.get("/metrics").text
    families = list(text_string_to_metric_families(text))
    assert len(families) >= 30
    for f in families:
        # A sample with no "# TYPE" before it comes back as its own "untyped" family with no help.
        assert f.type in ("counter", "gauge", "histogram"), (f.name, f.type)
        assert f.documentation, f.name
        assert f.samples, f.name
    names = {f.name for f in families}
    for n in ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
              "vllm:cache_config_info", "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:request_success",
              "vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
              "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
              "vllm:request_inference_time_seconds", "vllm:iteration_tokens_total", "vllm:request_params_n",
              "vllm:request_params_max_tokens", "vllm:request_max_num_generation_tokens", "http_requests"]:
        assert n in names, n
    # Bucket bounds as Prometheus clients print them.
    les = set(re.findall(r'le="([^"]*)"', text))
    assert {"0.005", "0.3", "1.0", "7680.0", "16384.0", "+Inf"} <= les, les
    assert not [le for le in les if len(le) > 12], les
    # The types the gateway and autoscalers rely on.
    by_name = {f.name: f for f in families}
    assert by_name["vllm:num_requests_waiting"].type == "gauge"
    assert by_name["vllm:num_requests_running"].type == "gauge"
    assert by_name["vllm:kv_cache_usage_perc"].type == "gauge"
    assert by_name["vllm:prompt_tokens"].type == "counter"
    assert by_name["vllm:request_prefill_time_seconds"].type == "histogram"


def test_cache_config_info_matches_the_kv_pool(srv):
    m = scrape(srv)
    info = m["vllm:cache_config_info"]
    assert info.type == "gauge" and len(info.samples) == 1
    s = info.samples[0]
    assert s.value == 1
    assert s.labels["block_size"] == str(BLOCK_SIZE)
    # The pool the engine reports at start-up: "engine: cpu executor, N KV blocks of B tokens".
    blocks = re.search(r"(\d+) KV blocks of (\d+) tokens", srv.log)
    assert blocks, srv.log
    assert s.labels["num_gpu_blocks"] == blocks.group(1) and blocks.group(2) == str(BLOCK_SIZE)
    assert s.labels["enable_prefix_caching"] == "True"
    assert s.labels["cache_dtype"] == "auto" and s.labels["engine"] == "0"


def test_gateway_series_move_with_load(srv):
    idle = scrape(srv)
    assert value(idle, "vllm:num_requests_running", model_name=NAME) == 0
    assert value(idle, "vllm:num_requests_waiting", model_name=NAME) == 0
    assert 0 <= value(idle, "vllm:kv_cache_usage_perc", model_name=NAME) <= 1
    results = []

    def client(tokens):
        r = requests.post(srv.url + "/v1/chat/completions", timeout=300,
                          json=chat("long", **greedy(max_tokens=tokens)))
        results.append(r.status_code)

    # Long enough to be seen running with a second request waiting (fewer under a sanitizer, slower).
    long = threading.Thread(target=client, args=(1500 if os.environ.get("LOCR_SANITIZER") else 3500,))
    long.start()
    assert wait_for(lambda: value(scrape(srv), "vllm:num_requests_running", model_name=NAME) >= 1)
    # A second request waits: --max-num-seqs 1.
    short = threading.Thread(target=client, args=(2,))
    short.start()
    seen_waiting = seen_kv = False
    deadline = time.time() + 20
    while time.time() < deadline and not (seen_waiting and seen_kv) and long.is_alive():
        m = scrape(srv)
        kv = value(m, "vllm:kv_cache_usage_perc", model_name=NAME)
        assert 0 <= kv <= 1, kv
        if value(m, "vllm:num_requests_running", model_name=NAME) >= 1 and kv > 0:
            seen_kv = True
        if value(m, "vllm:num_requests_waiting", model_name=NAME) >= 1:
            assert value(m, "vllm:num_requests_running", model_name=NAME) == 1
            seen_waiting = True
        time.sleep(0.01)
    assert seen_kv, "no scrape showed a running request holding KV"
    assert seen_waiting, "no scrape showed the second request waiting"
    long.join(300)
    short.join(60)
    assert results == [200, 200]
    assert wait_for(lambda: value(scrape(srv), "vllm:num_requests_running", model_name=NAME) == 0)
    done = scrape(srv)
    assert value(done, "vllm:num_requests_waiting", model_name=NAME) == 0


def test_request_histograms_count_the_requests_sent(srv):
    before = scrape(srv)
    bodies = [chat("one", **greedy(max_tokens=5)), chat("two", **greedy(max_tokens=7)),
              chat("three", n=2, **greedy(max_tokens=4)),
              {"model": NAME, "prompt": ["p one", "p two"], **greedy(max_tokens=3)}]
    for b in bodies:
        path = "/v1/completions" if "prompt" in b else "/v1/chat/completions"
        r = srv.post(path, b)
        assert r.status_code == 200, r.text
    assert wait_for(lambda: value(scrape(srv), "vllm:num_requests_running", model_name=NAME) == 0)
    after = scrape(srv)
    d_count = lambda n: hist_count(after, n) - hist_count(before, n)
    d_sum = lambda n: hist_sum(after, n) - hist_sum(before, n)
    # Engine requests: 1 + 1 + 2 (n=2) + 2 (two prompts).
    for n in ["vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
              "vllm:request_inference_time_seconds", "vllm:e2e_request_latency_seconds",
              "vllm:request_params_max_tokens", "vllm:request_generation_tokens"]:
        assert d_count(n) == 6, n
    assert d_sum("vllm:request_params_max_tokens") == 5 + 7 + 4 * 2 + 3 * 2
    assert d_sum("vllm:request_generation_tokens") == 5 + 7 + 4 * 2 + 3 * 2
    # A prompt's decode phase is at most its whole inference time.
    assert 0 <= d_sum("vllm:request_decode_time_seconds") <= d_sum("vllm:request_inference_time_seconds")
    assert 0 < d_sum("vllm:request_prefill_time_seconds") <= d_sum("vllm:request_inference_time_seconds")
    # n and the longest choice once per prompt: 1 + 1 + 1 (n=2) + 2 prompts.
    assert d_count("vllm:request_params_n") == 5
    assert d_sum("vllm:request_params_n") == 1 + 1 + 2 + 1 + 1
    assert d_sum("vllm:request_max_num_generation_tokens") == 5 + 7 + 4 + 3 + 3
    bucket = lambda m, le: value(m, "vllm:request_params_n", "vllm:request_params_n_bucket", model_name=NAME, le=le)
    assert bucket(after, "1.0") - bucket(before, "1.0") == 4
    assert bucket(after, "2.0") - bucket(before, "2.0") == 5
    # Tokens per engine step add up to the prompt tokens computed plus the tokens generated.
    prompt = value(after, "vllm:prompt_tokens", "vllm:prompt_tokens_total") - \
        value(before, "vllm:prompt_tokens", "vllm:prompt_tokens_total")
    gen = value(after, "vllm:generation_tokens", "vllm:generation_tokens_total") - \
        value(before, "vllm:generation_tokens", "vllm:generation_tokens_total")
    assert gen == 5 + 7 + 4 * 2 + 3 * 2
    assert d_count("vllm:iteration_tokens_total") > 0
    assert d_sum("vllm:iteration_tokens_total") == prompt + gen
    assert value(after, "vllm:request_success", "vllm:request_success_total", model_name=NAME,
                 finished_reason="length") - value(before, "vllm:request_success", "vllm:request_success_total",
                                                   model_name=NAME, finished_reason="length") == 6


def test_models_card_as_vllm(srv):
    r = srv.get("/v1/models")
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list"
    card = body["data"][0]
    # vLLM's ModelCard fields, and nothing it lacks.
    assert set(card) == {"id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission"}
    assert card["id"] == NAME and card["object"] == "model"
    assert isinstance(card["created"], int) and card["created"] > 1_600_000_000
    assert card["max_model_len"] == 4096
    assert card["root"].endswith("tiny_a") and card["parent"] is None
    assert len(card["permission"]) == 1
    p = card["permission"][0]
    assert set(p) == {"id", "object", "created", "allow_create_engine", "allow_sampling", "allow_logprobs",
                      "allow_search_indices", "allow_view", "allow_fine_tuning", "organization", "group",
                      "is_blocking"}
    assert p["id"].startswith("modelperm-") and p["object"] == "model_permission"
    assert isinstance(p["created"], int)
    assert (p["allow_create_engine"], p["allow_sampling"], p["allow_logprobs"], p["allow_search_indices"],
            p["allow_view"], p["allow_fine_tuning"], p["is_blocking"]) == (False, True, True, False, True, False,
                                                                          False)
    assert p["organization"] == "*" and p["group"] is None
