"""chat_template_kwargs (vLLM's request field): extra variables of the chat template, e.g.
LightOnOCR-3's {"enable_thinking": false}; never overriding messages or add_generation_prompt."""
from conftest import NAME, Server

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
            "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}")


def test_chat_template_kwargs_reach_the_template():
    s = Server("--served-model-name", NAME, "--chat-template", TEMPLATE, "--max-model-len", "512")
    try:
        conv = [{"role": "user", "content": "hi"}]
        plain = s.post("/tokenize", {"model": NAME, "messages": conv, "return_token_strs": True}).json()
        off = s.post("/tokenize", {"model": NAME, "messages": conv, "chat_template_kwargs": {"enable_thinking": False},
                                   "return_token_strs": True}).json()
        on = s.post("/tokenize", {"model": NAME, "messages": conv, "chat_template_kwargs": {"enable_thinking": True}}).json()
        assert on["tokens"] == plain["tokens"]
        assert off["tokens"][:len(plain["tokens"])] == plain["tokens"]
        assert "".join(off["token_strs"][len(plain["tokens"]):]) == "<think>\n\n</think>\n\n"
        # The variables the server sets win over kwargs of the same name.
        same = s.post("/tokenize", {"model": NAME, "messages": conv,
                                    "chat_template_kwargs": {"messages": [], "add_generation_prompt": False}}).json()
        assert same["tokens"] == plain["tokens"]
        # A generation request takes them too; a non-object is a 400 naming the field.
        r = s.post("/v1/chat/completions", {"model": NAME, "messages": conv, "max_tokens": 2, "temperature": 0,
                                            "chat_template_kwargs": {"enable_thinking": False}})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["prompt_tokens"] == len(off["tokens"])
        bad = s.post("/v1/chat/completions", {"model": NAME, "messages": conv, "chat_template_kwargs": "no"})
        assert bad.status_code == 400 and "chat_template_kwargs" in bad.text
    finally:
        s.stop()


def test_default_chat_template_kwargs_flag():
    s = Server("--served-model-name", NAME, "--chat-template", TEMPLATE, "--max-model-len", "512",
               "--default-chat-template-kwargs", '{"enable_thinking": false}')
    try:
        assert "default-chat-template-kwargs has no effect" not in s.log
        conv = [{"role": "user", "content": "hi"}]
        default = s.post("/tokenize", {"model": NAME, "messages": conv, "return_token_strs": True}).json()
        assert "".join(default["token_strs"]).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        # A request's own value wins.
        on = s.post("/tokenize", {"model": NAME, "messages": conv, "return_token_strs": True,
                                  "chat_template_kwargs": {"enable_thinking": True}}).json()
        assert "".join(on["token_strs"]).endswith("<|im_start|>assistant\n")
        assert len(on["tokens"]) < len(default["tokens"])
    finally:
        s.stop()


def test_default_chat_template_kwargs_must_be_an_object():
    import subprocess
    from conftest import MODEL, locr_bin
    r = subprocess.run([locr_bin(), "serve", str(MODEL), "--port", "0", "--default-chat-template-kwargs", "[1]"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--default-chat-template-kwargs expects a JSON object" in r.stderr
