"""The official `openai` Python package against the server."""
import openai
import pytest

from conftest import IMAGES, NAME, data_url


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def test_models_list(client):
    assert [m.id for m in client.models.list()] == [NAME]


def test_chat(client):
    r = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Hello"}], max_tokens=5,
                                       temperature=0, extra_body={"ignore_eos": True})
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 5


def test_chat_streaming_with_usage_and_image(client):
    stream = client.chat.completions.create(
        model=NAME, max_tokens=6, temperature=0, stream=True, stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
        messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": data_url(IMAGES / "page_small.png")}},
            {"type": "text", "text": "Transcribe."}]}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage.completion_tokens == 6
    whole = client.chat.completions.create(
        model=NAME, max_tokens=6, temperature=0, extra_body={"ignore_eos": True},
        messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": data_url(IMAGES / "page_small.png")}},
            {"type": "text", "text": "Transcribe."}]}])
    assert whole.choices[0].message.content == text


def test_completions(client):
    r = client.completions.create(model=NAME, prompt="The", max_tokens=4, temperature=0, logprobs=1,
                                  extra_body={"ignore_eos": True})
    assert len(r.choices[0].logprobs.tokens) == 4
    stream = client.completions.create(model=NAME, prompt="The", max_tokens=4, temperature=0, stream=True,
                                       extra_body={"ignore_eos": True})
    assert "".join(c.choices[0].text for c in stream) == r.choices[0].text


def test_errors_raise_typed_exceptions(client):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="other", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "x"}], max_tokens=100000)
    assert "maximum context length" in str(e.value)
