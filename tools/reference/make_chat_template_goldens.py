#!/usr/bin/env python3
"""Writes golden renderings of chat templates, made with transformers' own Jinja environment.

Two fixture files under tests/fixtures/chat_templates/:

  goldens.jsonl          real model templates (LightOnOCR-2, Qwen3, Qwen2-VL, Qwen2.5, and
                         Qwen3-Coder for its macros) on many
                         conversations, rendered exactly as `apply_chat_template(tokenize=False)`
                         does it: `_normalize_chat_messages` then `render_jinja_template`.
                         One JSON object a line: {name, template, messages, add_generation_prompt,
                         extra, expected}. `extra` holds every other template variable (tools,
                         enable_thinking, special tokens, ...).
  feature_goldens.jsonl  small templates that exercise one Jinja feature each, rendered with the
                         same environment (`_compile_jinja_template`): {name, source, vars,
                         expected} or {name, source, vars, error} when Jinja raises.

This is not the C++ test: tests/unit/chat_template_test.cc reads these files and checks the
interpreter in src/model/ renders every case byte for byte.

Run with the reference venv:  /work/venv/ref/bin/python tools/reference/make_chat_template_goldens.py
"""

import json
import os
import sys

import jinja2
import transformers
from transformers.utils.chat_template_utils import (
    _compile_jinja_template,
    _normalize_chat_messages,
    render_jinja_template,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "chat_templates")


def load_template(name):
    with open(os.path.join(FIXTURES, name + ".jinja"), encoding="utf-8") as f:
        return f.read()


def render_like_apply_chat_template(source, messages, add_generation_prompt, extra):
    extra = dict(extra)
    tools = extra.pop("tools", None)
    documents = extra.pop("documents", None)
    conversation = _normalize_chat_messages(messages)
    rendered, _ = render_jinja_template(
        conversations=[conversation],
        tools=tools,
        documents=documents,
        chat_template=source,
        add_generation_prompt=add_generation_prompt,
        **extra,
    )
    return rendered[0]


IMG = {"type": "image"}
IMG_URL = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
IMG_HF_URL = {"type": "image", "url": "https://example.com/page.png"}
VIDEO = {"type": "video"}


def text(t):
    return {"type": "text", "text": t}


def lightonocr_cases():
    zh_system = {"role": "system", "content": "You are a concise assistant."}
    zh_user = {"role": "user", "content": "用一句中文说明 TCP 和 UDP 的核心区别。"}
    cases = {
        "image_only": [{"role": "user", "content": [IMG]}],
        "image_then_text": [{"role": "user", "content": [IMG, text("T")]}],
        "text_then_image": [{"role": "user", "content": [text("Convert this page to markdown."), IMG]}],
        "image_url_part": [{"role": "user", "content": [IMG_URL]}],
        "image_with_url_key": [{"role": "user", "content": [IMG_HF_URL]}],
        "image_key_without_type": [{"role": "user", "content": [{"image": "page.png"}]}],
        "two_images": [{"role": "user", "content": [IMG, IMG]}],
        "two_images_and_text": [{"role": "user", "content": [IMG, text("Compare."), IMG, text("Answer briefly.")]}],
        "system_and_user_text": [zh_system, zh_user],
        "user_text_only_string": [zh_user],
        "user_text_as_list": [{"role": "user", "content": [text("Hello there")]}],
        "multi_turn": [
            {"role": "user", "content": [IMG, text("What is the title?")]},
            {"role": "assistant", "content": "The title is **Results**."},
            {"role": "user", "content": "And the first table?"},
        ],
        "multi_turn_with_system": [
            zh_system,
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [text("Hello! How can I help?")]},
            {"role": "user", "content": [IMG]},
        ],
        "empty_text_part": [{"role": "user", "content": [text(""), IMG]}],
        "unknown_part_type": [{"role": "user", "content": [{"type": "audio"}, IMG]}],
        "system_as_list": [{"role": "system", "content": [text("Be brief.")]}, {"role": "user", "content": [IMG]}],
        "content_none_dropped": [{"role": "user", "content": [IMG]}, {"role": "assistant", "content": "x", "tool_calls": None}],
        "multiline_text": [{"role": "user", "content": [IMG, text("Line one\n\nLine  two\t tab\n")]}],
        "special_characters": [{"role": "user", "content": "{{ not a tag }} {% neither %} <|im_end|> \\n \u00e9\u4e2d\U0001F600"}],
    }
    out = []
    for name, msgs in cases.items():
        for agp in (True, False):
            out.append((f"lightonocr2/{name}/gen={int(agp)}", msgs, agp, {}))
    vision = {"add_vision_id": True}
    out.append(("lightonocr2/two_images/add_vision_id", cases["two_images_and_text"], True, vision))
    out.append(("lightonocr2/image_only/add_vision_id", cases["image_only"], True, vision))
    special = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None}
    out.append(("lightonocr2/image_only/special_tokens", cases["image_only"], True, special))
    return out


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 巴黎"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1},
                "ratio": {"type": "number", "default": 0.5},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web. Quotes \"like this\" and back\\slashes survive.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
}


def qwen3_cases():
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    user = {"role": "user", "content": "What's the weather in Paris?"}
    call_dict = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
        ],
    }
    call_str = {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
            {"name": "search", "arguments": {"q": "Paris weather", "n": 3, "exact": True, "lang": None}},
        ],
    }
    tool_resp = {"role": "tool", "content": "{\"temperature\": 18, \"sky\": \"cloudy\"}"}
    tool_resp2 = {"role": "tool", "content": "Sunny, 20°C"}
    answer = {"role": "assistant", "content": "It is 18 °C and cloudy in Paris."}
    out = []

    def add(name, msgs, agp=True, extra=None):
        out.append((f"qwen3/{name}", msgs, agp, extra or {}))

    add("single_user", [user])
    add("single_user/no_gen", [user], agp=False)
    add("thinking_off", [user], extra={"enable_thinking": False})
    add("thinking_on", [user], extra={"enable_thinking": True})
    add("system_user", [sys_msg, user])
    add("system_user/thinking_off", [sys_msg, user], extra={"enable_thinking": False})
    add("multi_turn_reasoning_content", [
        user,
        {"role": "assistant", "content": "Paris is cloudy.", "reasoning_content": "I should recall the forecast."},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "\nTomorrow looks clear.\n"},
    ], agp=False)
    add("multi_turn_reasoning_then_question", [
        user,
        {"role": "assistant", "content": "Paris is cloudy.", "reasoning_content": "Recall."},
        {"role": "user", "content": "And tomorrow?"},
    ])
    add("think_tags_in_content", [
        user,
        {"role": "assistant", "content": "<think>\nLet me think.\n</think>\n\nIt is cloudy."},
    ], agp=False)
    add("think_tags_last_turn", [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>short</think>Hello!"},
        {"role": "user", "content": "Bye"},
        {"role": "assistant", "content": "<think>\n\n</think>\n\nGoodbye."},
    ], agp=False)
    add("reasoning_alias_thinking_key", [
        user, {"role": "assistant", "content": "Cloudy.", "thinking": "Aliased from thinking."},
    ], agp=False)
    add("tools_no_system", [user], extra={"tools": [WEATHER_TOOL]})
    add("tools_with_system", [sys_msg, user], extra={"tools": [WEATHER_TOOL, SEARCH_TOOL]})
    add("tool_call_dict_args", [sys_msg, user, call_dict, tool_resp], extra={"tools": [WEATHER_TOOL]})
    add("tool_call_string_args_and_parallel", [user, call_str, tool_resp, tool_resp2],
        extra={"tools": [WEATHER_TOOL, SEARCH_TOOL]})
    add("tool_round_trip_answer", [user, call_dict, tool_resp, answer, {"role": "user", "content": "Thanks"}],
        extra={"tools": [WEATHER_TOOL]})
    add("tool_round_trip/thinking_off", [user, call_dict, tool_resp], extra={"tools": [WEATHER_TOOL], "enable_thinking": False})
    add("user_tool_response_text", [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "search", "arguments": {"q": "x"}}}]},
        {"role": "user", "content": "<tool_response>\nresult\n</tool_response>"},
    ])
    add("list_content_user", [{"role": "user", "content": [text("list content is dropped by this template")]}])
    add("system_not_first", [user, {"role": "system", "content": "Late system."}, {"role": "user", "content": "ok"}])
    add("unicode_and_escapes", [{"role": "user", "content": "中文 \"quotes\" \\ back \t tab 😀"}],
        extra={"tools": [{"type": "function", "function": {"name": "t", "description": "中文 ✓ \u0007 bell", "parameters": {}}}]})
    return out


def qwen2_vl_cases():
    out = []

    def add(name, msgs, agp=True, extra=None):
        out.append((f"qwen2_vl/{name}", msgs, agp, extra or {}))

    add("image_and_text", [{"role": "user", "content": [IMG, text("Describe this image.")]}])
    add("video_and_text", [{"role": "user", "content": [VIDEO, text("What happens?")]}])
    add("add_vision_id", [
        {"role": "user", "content": [IMG, IMG, VIDEO, text("Compare.")]},
        {"role": "assistant", "content": "They differ."},
        {"role": "user", "content": [IMG, VIDEO]},
    ], extra={"add_vision_id": True})
    add("system_string_content", [{"role": "system", "content": "Custom."}, {"role": "user", "content": "Hi"}], agp=False)
    add("image_url", [{"role": "user", "content": [IMG_URL, text("OCR")]}])
    add("video_key_only", [{"role": "user", "content": [{"video": "clip.mp4"}, text("?")]}])
    return out


def qwen3_coder_cases():
    tool = {
        "type": "function",
        "function": {
            "name": "run_sql",
            "description": "  Run a read-only SQL query.  ",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "SQL text"},
                    "limit": {"type": "integer", "default": 100, "minimum": 1},
                    "columns": {"type": "array", "items": {"type": "string"}},
                    "strict": {"type": "boolean", "default": False, "nullable": True},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    user = {"role": "user", "content": "Count the users."}
    call = {
        "role": "assistant",
        "content": "  I will query.  ",
        "tool_calls": [{"type": "function", "function": {"name": "run_sql", "arguments": {
            "query": "SELECT COUNT(*) FROM users", "limit": 5, "columns": ["n"], "opts": {"a": 1}, "strict": True, "x": None}}}],
    }
    out = []

    def add(name, msgs, agp=True, extra=None):
        out.append((f"qwen3_coder/{name}", msgs, agp, extra or {}))

    add("no_tools", [user])
    add("tools_no_system", [user], extra={"tools": [tool]})
    add("tools_with_system", [{"role": "system", "content": "Be terse."}, user], extra={"tools": [tool]})
    add("tool_call_and_responses", [user, call, {"role": "tool", "content": "42"}, {"role": "tool", "content": "ok"},
                                    {"role": "assistant", "content": "There are 42 users."}], agp=False,
        extra={"tools": [tool]})
    add("tool_call_no_content", [user, {"role": "assistant", "content": None, "tool_calls": call["tool_calls"]},
                                 {"role": "tool", "content": "42"}], extra={"tools": [tool]})
    add("other_role", [{"role": "developer", "content": "dev"}, user])
    return out


def qwen2_5_cases():
    user = {"role": "user", "content": "What's the weather in Paris?"}
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
    }
    out = []
    out.append(("qwen2_5/default_system", [user], True, {}))
    out.append(("qwen2_5/tools", [user], True, {"tools": [WEATHER_TOOL]}))
    out.append(("qwen2_5/tool_calls", [user, call, {"role": "tool", "content": "18C"}], True, {"tools": [WEATHER_TOOL]}))
    return out


# Feature templates: (name, source, vars). Each exercises one corner of the language.
FEATURES = [
    ("literals", "{{ 'a\\'b' }}|{{ \"q\\\"\\n\\t\\\\\" }}|{{ 42 }}|{{ -7 }}|{{ 3.5 }}|{{ 1e3 }}|{{ 0x1F }}|{{ 1_000 }}|{{ true }}|{{ True }}|{{ none }}|{{ None }}|{{ false }}", {}),
    ("string_escapes", "{{ '\\u00e9\\x41\\101\\q' }}|{{ 'a' 'b' \"c\" }}", {}),
    ("list_dict_repr", "{{ [1, 'a', none, true, 1.5, {'k': \"it's\", 'q': 'say \"hi\"'}] }}|{{ (1,) }}|{{ (1, 2) }}|{{ () }}|{{ {} }}|{{ [] }}", {}),
    ("float_repr", "{{ 1.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1/3 }} {{ 10/2 }} {{ 1e-5 }} {{ 0.0001 }} {{ -0.0 }} {{ 2.5e-10 }} {{ 123456789.125 }}", {}),
    ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ true + 1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 5.5 % 2 }}", {}),
    ("concat", "{{ 1 ~ 'a' ~ none ~ undefined_var ~ [1] ~ 2.0 }}", {}),
    ("comparisons", "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' != 'b' }} {{ none == none }} {{ [1] == [1] }} {{ {'a': 1} == {'a': 1} }} {{ x == y }} {{ x == none }} {{ 'é' > 'z' }}", {}),
    ("in_operator", "{{ 'a' in 'cat' }} {{ 'b' in ['a', 'b'] }} {{ 'k' in {'k': 1} }} {{ 'z' not in {'k': 1} }} {{ 1 in [1.0] }} {{ 'x' in undefined_thing }} {{ '' in 'abc' }}", {}),
    ("logic", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ not [] }}|{{ none or [] }}|{{ not 1 == 2 }}|{{ 1 if 0 else 2 }}|{{ 'y' if 'x' }}|{{ ('q' if false) is defined }}", {}),
    ("undefined_behaviour", "[{{ nothing }}]{{ nothing is defined }}{{ nothing is undefined }}{{ nothing | length }}{% for x in nothing %}x{% endfor %}{{ nothing | default('dflt') }}{{ nothing | d('d2') }}{{ '' | default('e', true) }}{{ nothing == nothing }}{{ none.attr is defined }}", {}),
    ("attribute_and_item", "{{ m.role }} {{ m['role'] }} {{ m.missing is defined }} {{ l[0] }} {{ l[-1] }} {{ l.1 }} {{ l[10] is defined }} {{ s[0] }} {{ s[-2] }}", {"m": {"role": "user"}, "l": [1, 2, 3], "s": "héllo"}),
    ("dict_item_method_precedence", "{{ d['items'] }} {{ d.get('items') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}", {"d": {"items": 5, "b": [1]}}),
    ("slices", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[5:] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[:] }} {{ ('a', 'b')[1:] }} {{ l[3:0:-1] }}", {"l": [1, 2, 3, 4], "s": "añbc😀"}),
    ("for_loop_vars", "{% for x in items %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}/{{ loop.previtem }}/{{ loop.nextitem }}/{{ loop.depth }}/{{ loop.cycle('odd', 'even') }};{% endfor %}", {"items": ["a", "b", "c"]}),
    ("for_else_filter_unpack", "{% for x in [] %}x{% else %}empty{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}|{% for x in l if x % 2 %}{{ x }}{{ loop.index }}{{ loop.length }},{% else %}none{% endfor %}|{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}", {"d": {"z": 1, "a": 2}, "l": [1, 2, 3, 4, 5]}),
    ("for_over_dict_and_string", "{% for k in d %}{{ k }}{% endfor %}|{% for c in 'hé' %}[{{ c }}]{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("nested_loops", "{% for row in rows %}{% for c in row %}{{ loop.index }}{{ c }}{% endfor %}{{ loop.index }};{% endfor %}", {"rows": [["a", "b"], ["c"]]}),
    ("break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("scoping", "{% set x = 5 %}{% for i in [1, 2] %}[{{ x }}]{% set x = i %}({{ x }}){% endfor %}{{ x }}|{% for i in [1, 2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}|{% if true %}{% set z = 3 %}{% endif %}{{ z }}", {}),
    ("namespace", "{% set ns = namespace(count=0, items=[]) %}{% for i in [1, 2, 3] %}{% set ns.count = ns.count + i %}{% endfor %}{{ ns.count }} {{ ns.items }} {{ ns.missing is defined }}{% set ns2 = namespace({'a': 1}, b=2) %} {{ ns2.a }}{{ ns2.b }}", {}),
    ("set_block_and_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set blk %}X{{ a }}Y{% endset %}[{{ blk }}]{% set up | upper %}shout{% endset %}{{ up }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }} {{ greet() }}", {}),
    ("macro_varargs_kwargs_closure", "{% set outer = 'O' %}{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{{ outer }}{% endmacro %}{{ f(1, 2, 3, k='v') }}{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}|{{ rec(3) }}", {}),
    ("whitespace_control", "a  {{- ' b ' -}}  c\n  {%- if true -%}  d  {%- endif -%}\n  e {# comment #} f {#- trimmed -#} g", {}),
    ("trim_lstrip_blocks", "<ul>\n  {% for i in [1, 2] %}\n    <li>{{ i }}</li>\n  {% endfor %}\n</ul>\n  {# note #}\nend {% if true %}  kept\n{% endif %}\n", {}),
    ("plus_disables_lstrip", "x\n    {%+ if true %}y{% endif %}\n    {% if true +%}\nz{% endif %}", {}),
    ("raw_block", "{% raw %}{{ not rendered }} {% if %}{% endraw %}|\n  {% raw -%}  spaced  {%- endraw %}", {}),
    ("trailing_newline_dropped", "line\n", {}),
    ("crlf_newlines", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", {}),
    ("filters_text", "{{ '  x y  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'Hello' | upper }}|{{ 'Hello' | lower }}|{{ 'hELLO wORLD' | capitalize }}|{{ \"they're bill's-friend (ok)\" | title }}|{{ 'a-b-a' | replace('a', 'X') }}|{{ 'aaa' | replace('a', 'b', 2) }}|{{ 'abc' | reverse }}|{{ 'é' | upper }}|{{ 'x' | safe }}", {}),
    ("filters_sequences", "{{ l | length }} {{ l | count }} {{ l | first }} {{ l | last }} {{ l | join(', ') }} {{ l | join }} {{ l | reverse | list }} {{ 'ab' | list }} {{ l | sort }} {{ l | sort(reverse=true) }} {{ [3, 1, 3] | unique | list }} {{ l | min }} {{ l | max }} {{ l | sum }} {{ d | length }} {{ 'héllo' | length }}", {"l": [3, 1, 2], "d": {"a": 1, "b": 2}}),
    ("filters_attr", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|{{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }}|{{ msgs | selectattr('flag') | list | length }}|{{ msgs | map(attribute='missing', default='-') | join }}|{{ [1, 2, 3] | select('odd') | list }}|{{ [1, 2, 3] | reject('odd') | list }}|{{ ['a', 'B'] | map('upper') | list }}|{{ msgs | map(attribute='meta.k') | list }}", {"msgs": [{"role": "user", "content": "u1", "flag": True, "meta": {"k": 1}}, {"role": "assistant", "content": "a1", "meta": {"k": 2}}, {"role": "user", "content": "u2", "meta": {}}]}),
    ("filters_convert", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '0x1A' | int(0, 16) }} {{ '2.5' | float }} {{ 3 | float }} {{ 5 | string }} {{ [1, 'a'] | string }} {{ none | string }} {{ true | int }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round(0, 'floor') }}", {}),
    ("filters_items_dict", "{% for k, v in d | items %}{{ k }}:{{ v }};{% endfor %}|{{ d | dictsort }}|{{ d | list }}|{{ d | first }}", {"d": {"b": 1, "a": 2}}),
    ("filter_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}),
    ("tojson", "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ l | tojson(separators=(',', ':')) }}|{{ s | tojson }}|{{ d | tojson(sort_keys=true) }}|{{ 'é' | tojson(ensure_ascii=true) }}|{{ {} | tojson(indent=2) }}|{{ [] | tojson }}|{{ none | tojson }}|{{ 1.0 | tojson }}|{{ [true, false] | tojson(indent='\\t') }}", {"d": {"z": [1, 2.5, None], "a": {"n": "中"}, "e": []}, "l": [1, "a"], "s": "q\"\\/\n\r\t\b\f\u0001\u007f<>&'é😀"}),
    ("tests", "{{ 1 is number }}{{ true is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}{{ true is boolean }}{{ 1 is boolean }}{{ 'a' is string }}{{ d is mapping }}{{ l is sequence }}{{ d is sequence }}{{ 's' is iterable }}{{ 1 is iterable }}{{ none is none }}{{ false is false }}{{ 0 is false }}{{ true is true }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 1 is equalto 1 }}{{ 1 is eq(2) }}{{ 2 is ne 1 }}{{ 2 is gt 1 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'a' is in 'abc' }}{{ false is sameas false }}{{ range is callable }}{{ l is not string }}", {"d": {"a": 1}, "l": [1]}),
    ("string_methods", "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a-b-c'.rsplit('-', 1) }}|{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}|{{ 'hello world'.title() }}|{{ 'hello'.capitalize() }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}|{{ 'aXbX'.replace('X', '-') }}|{{ 'abcabc'.find('c') }}{{ 'abcabc'.rfind('c') }}{{ 'abc'.find('z') }}|{{ 'abcabc'.count('bc') }}|{{ '-'.join(['a', 'b']) }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ '42'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}|{{ '7'.zfill(3) }}|{{ 'a b'.partition(' ') }}", {"s": "  padded \n"}),
    ("dict_and_list_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %} {{ l.index(2) }} {{ l.count(1) }}", {"d": {"a": 1, "b": 2}, "l": [1, 2, 1]}),
    ("globals", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", {}),
    ("strftime_now_type", "{{ strftime_now('%Y') | length }}", {}),
    ("loop_nested_access", "{% for m in msgs %}{% set outer = loop %}{% for p in m.parts %}{{ outer.index }}.{{ loop.index }}{{ p }} {% endfor %}{% endfor %}", {"msgs": [{"parts": ["a", "b"]}, {"parts": ["c"]}]}),
    ("messages_patterns", "{% for message in messages %}{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}{{ c['type'] }}{% endfor %}{% endif %}{% if not loop.last %},{% endif %}{% endfor %}{{ messages[0]['role'] if messages else 'none' }}{{ (messages | length) - 1 }}{{ messages | selectattr('role', 'equalto', 'system') | list | length }}", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "x"}]}]}),
    ("with_block", "{% with a = 1, b = a %}{{ a }}{{ b }}{% endwith %}[{{ a }}]", {}),
    ("generation_block", "{% generation %}assistant text{% endgeneration %}", {}),
    ("comments_multiline", "a{# line1\nline2 #}b\n{# standalone #}\nc", {}),
    ("int_overflow_free", "{{ 2 ** 40 }} {{ 9223372036854775807 }} {{ 123456789 * 1000 }}", {}),
    ("whitespace_edges", "  {% if true %}x{% endif %}\n  {#c#}\ny\n\t{%- if true -%}\n\tz\n{% endif %}{{ 'a' }}  \n  {{- 'b' }}\n   {% if true %}b{% endif %}   \n{% for x in [1] %}  {{ x }}\n{% endfor %}", {}),
    ("trim_after_comment", "{# c #}\nA{# d -#}   \n  B\n{#- e #}\nC", {}),
    ("raw_whitespace", "  {% raw %}  x  {% endraw %}  \n  {%- raw -%}  y  {%- endraw -%}  z", {}),
    ("unicode_whitespace_strip", "a\u3000\u00a0 {{- 'b' -}} \u2003\nc|{{ '\u3000x\u00a0' | trim }}|{{ ' x\u2028'.strip() }}", {}),
    ("string_methods_more", "{{ 'a b'.split(' ') }} {{ ''.split() }} {{ ' '.split(' ') }} {{ 'aXbXc'.split('X', -1) }} {{ '  a  b  '.split(none, 1) }} {{ '  a  b  '.rsplit(none, 1) }} {{ 'aaa'.count('a') }} {{ 'abc'.count('') }} {{ 'é'.upper() }} {{ 'abc'.index('c') }} {{ '  x'.isspace() }} {{ 'AbC'.islower() }} {{ 'ABC1'.isupper() }} {{ 'abc'.removeprefix('ab') }} {{ 'x.y.z'.rpartition('.') }} {{ '-5'.zfill(4) }} {{ 'ab'.ljust(4, '*') }}|{{ 'ab'.rjust(4) }} {{ 'ab-cd ef'.title() }} {{ \"o'neil\".title() }} {{ 'a1b'.isalnum() }} {{ ''.isdigit() }} {{ 'x'.replace('', '-') }} {{ 'aaaa'.replace('a', 'b', 2) }} {{ 'abcabc'.rfind('b') }} {{ 'a\\tb'.split() }}", {}),
    ("filters_more", "{{ [{'n': 'b', 'v': 2}, {'n': 'A', 'v': 1}] | sort(attribute='n') | map(attribute='v') | list }} {{ ['b', 'A', 'a'] | sort }} {{ ['b', 'A', 'a'] | sort(case_sensitive=true) }} {{ ['a', 'A', 'b'] | unique | list }} {{ ['a', 'A', 'b'] | unique(case_sensitive=true) | list }} {{ [{'v': 3}, {'v': 1}] | min(attribute='v') }} {{ [{'v': 3}, {'v': 1}] | max(attribute='v') }} {{ ['b', 'C', 'a'] | max }} {{ {'b': 1, 'A': 2} | dictsort(reverse=true) }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }} {{ [1, 2] | sum(start=10) }} {{ [[1], [2]] | sum(start=[]) }} {{ [{'p': 1.5}, {'p': 2}] | sum(attribute='p') }} {{ 'abc' | center(9) }}|{{ 'ab' | center(5) }}| {{ 'hello world, foo_bar 42' | wordcount }} {{ '<a href=\"x\">&\\'' | e }} {{ [] | max is defined }}", {}),
    ("round_variants", "{{ 3 | round }} {{ 2.675 | round(2) }} {{ -2.5 | round }} {{ 0.5 | round }} {{ 1.5 | round }} {{ 1234.5 | round(-2) }} {{ 2.5 | round(0, 'ceil') }} {{ -2.5 | round(0, 'floor') }} {{ 2.345 | round(1, 'floor') }} {{ 1e20 | round(2) }}", {}),
    ("int_float_parsing", "{{ ' 12 ' | int }} {{ '1_000' | int }} {{ '-7' | int }} {{ '+7' | int }} {{ '0b101' | int(0, 2) }} {{ '0o17' | int(base=8) }} {{ 'ff' | int(base=16) }} {{ '0x1f' | int(base=0) }} {{ '1e3' | int }} {{ none | int }} {{ [1] | int(5) }} {{ '1e3' | float }} {{ 'inf' | float }} {{ '-Infinity' | float }} {{ ' -2.5 ' | float }} {{ 'abc' | float(1.5) }} {{ true | float }} {{ '12abc' | int }} {{ '3.99' | int }} {{ -3.99 | int }} {{ '1_0.5' | float }}", {}),
    ("tojson_more", "{{ {'a': {}, 'b': [[], {}], 'c': [1e20, -0.0, 1e-7, 1234567890123456789, 3.0]} | tojson(indent=1) }}|{{ '😀é\\u0000' | tojson(ensure_ascii=true) }}|{{ [1, 2] | tojson(indent=2, separators=(', ', ': ')) }}|{{ {'k': 'v'} | tojson(separators=(',', '=')) }}|{{ 'x' | tojson(indent=0) }}|{{ [1] | tojson(indent=0) }}|{{ (1, 2) | tojson }}", {}),
    ("loop_more", "{% for x in 'ab' %}{{ loop.revindex0 }}{{ loop.changed(x) }}{{ loop.changed(x) }}{% endfor %}|{% for k, v in {'a': 1}.items() %}{{ k }}{{ v }}{% endfor %}|{% for i in range(3) %}{% for j in range(3) %}{% if j > i %}{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %}|{% for x in [1, 2, 3] %}{% if loop.first %}{% continue %}{% endif %}{{ x }}{% else %}never{% endfor %}|{% for x in [] if x %}{% else %}{{ loop is defined }}{% endfor %}", {}),
    ("scoping_macros", "{% set ns = namespace(x=[]) %}{% for i in [1, 2] %}{% set ns.x = ns.x + [i] %}{% endfor %}{{ ns.x }}|{% set a = 1 %}{% macro m() %}{{ a }}{% set a = 2 %}{{ a }}{% endmacro %}{{ m() }}{{ a }}|{% macro outer() %}{% macro inner() %}I{% endmacro %}{{ inner() }}O{% endmacro %}{{ outer() }}|{% for i in [1] %}{% set a = 5 %}{{ a }}{% endfor %}{{ a }}", {}),
    ("undefined_chains", "{{ (x | default({})).get('a', 'dflt') }} {{ none is none }} {{ x is not defined and y is not defined }} {{ [] | first is defined }} {{ (messages | last).role if messages else 'none' }} {{ x | default(none) is none }} {{ m.content is string }} {{ m.tool_calls | length }} {{ m.get('tool_calls') is none }}", {"messages": [{"role": "user"}], "m": {"content": "c"}}),
    ("unicode_text", "{{ '日本語' | length }} {{ '日本語'[1] }} {{ '日本語' | reverse }} {{ 'ÀÉ' | lower }} {{ 'àé' | upper }} {{ 'éa' | title }} {{ 'ǅ' | lower }} {{ '日本語'.find('語') }} {{ 'x😀y'[1] }} {{ 'x😀y' | list }}", {}),
    ("arith_more", "{{ 1 < 2.5 }} {{ (1, 2) == (1, 2) }} {{ [1, 2] == (1, 2) }} {{ 'a' * 0 }} {{ -3 // 2 }} {{ -3 % 2 }} {{ 3 % -2 }} {{ 7.0 // 2 }} {{ -7.5 % 2 }} {{ 1e308 * 10 }} {{ -(1e308 * 10) }} {{ 2 ** 62 }} {{ 1 / 4 }} {{ 0.1 * 3 }} {{ 100.0 }} {{ 1e22 }} {{ 1.5e-7 }} {{ 123456789012345678 }} {{ 2 ** 0.5 }} {{ -5 // 3.0 }} {{ true * 3 }} {{ 3 - true }}", {}),
    ("macro_defaults", "{% macro f(a, b=a ~ '!', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ f('x') }}|{{ f('x', c=1) }}|{% macro g() %}{{ varargs | length }}{% endmacro %}{{ g(1, 2) }}|{% macro h(x) -%}\n  [{{ x }}]\n{%- endmacro %}{{ h(1) }}", {}),
    ("macro_escapes_its_loop", "{% set ns = namespace() %}{% for i in [7] %}{% macro m(x) %}M{{ x }}{% endmacro %}{% set ns.m = m %}{% endfor %}{{ ns.m(1) }}", {}),
    ("if_elif_chain", "{% for v in [0, 1, 2, 3] %}{% if v == 0 %}zero{% elif v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
    ("print_and_tuples", "{% print 'p' %}{{ 1, 2 }}{{ (1, 2)[0] }}{{ [1, 2][0:1] }}{{ () | length }}{{ (1,) + (2,) }}", {}),
    ("test_arg_forms", "{{ 3 is divisibleby(3) }}{{ 'a' is in(['a']) }}{{ 2 is gt(1) }}{{ x is sameas none }}{{ 5 is lt 6 }}{{ none is sameas none }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ 'nope' is filter }}{{ 3.0 is odd }}{{ 4.0 is even }}", {}),
    ("filter_chains", "{{ ['a', 'b'] | join('-') | upper | replace('-', '+') }} {{ 'x' | default('y') | length }} {{ (('a' ~ 'b') | upper)[0] }} {{ -3 | abs }} {{ 'abc' | first }}{{ 'abc' | last }} {{ [3, 1] | sort | first }}", {}),
    ("qwen_reverse_index", "{%- set ns = namespace(last=-1) %}{%- for message in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}{{ index }}{{ message.role[0] }}{%- if ns.last == -1 and message.role == 'user' %}{%- set ns.last = index %}{%- endif %}{%- endfor %}={{ ns.last }}", {"messages": [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "user"}, {"role": "tool"}]}),
    ("nested_access", "{% set d = {'a': {'b': [1, {'c': 'deep'}]}} %}{{ d.a.b[1].c }} {{ d['a']['b'][0] }} {{ d.a.b.1.c }} {{ d | length }} {{ d.a | list }} {{ d.a.b[-1]['c'][1:3] }}", {}),
    ("slice_steps", "{{ 'abcdef'[1:5:2] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[:-10] }} {{ 'abcdef'[10:] }} {{ 'abcdef'[::-2] }} {{ [1, 2, 3, 4, 5][-1:-4:-1] }} {{ [1, 2, 3][-10:10] }} {{ [1, 2, 3][2:0] }} {{ 'abc'[true:] }}", {}),
    ("items_of_undefined_and_select", "{% for k, v in nothing | items %}x{% endfor %}done {{ users | selectattr('age', 'gt', 18) | map(attribute='name') | join(',') }} {{ users | selectattr('email', 'defined') | list | length }} {{ users | rejectattr('email') | map(attribute='name') | first }} {{ [{'k': 1, 'i': 'a'}, {'k': 1, 'i': 'b'}, {'k': 0, 'i': 'c'}] | sort(attribute='k', reverse=true) | map(attribute='i') | join }} {{ users | map(attribute='name') | map('upper') | join }}", {"users": [{"name": "ann", "age": 30, "email": "a@x"}, {"name": "bob", "age": 12}]}),
    ("string_literal_escapes_more", "{{ \"line\\nbreak\" }}|{{ 'tab\\there' }}|{{ '\\\\' }}|{{ 'snow \\u2603 \\U0001F600' }}|{{ '\\101\\7' | length }}|{{ 'a\\\nb' }}", {}),
    ("namespace_repr_dict_global", "{% set ns = namespace(a=1) %}{{ ns }} {{ dict(x=1) }} {{ dict([('k', 2)]) }} {{ dict({'a': 1}, b=2) }} {{ namespace(ns2=1).ns2 }}", {}),
    ("str_format_basic", "{{ '{} and {}'.format('a', 1) }}|{{ '{0}{1}{0}'.format('x', 'y') }}|{{ '{name}={v}'.format(name='k', v=[1]) }}|{{ '{{literal}} {}'.format(none) }}", {}),
    ("concat_and_string_filter", "{{ 1 ~ 1.5 ~ true ~ none }} {{ [1, 'a', none] | string }} {{ {'a': [1]} | string }} {{ ('a', 1) ~ '' }}", {}),
]

# Templates that Jinja refuses: only the fact that rendering fails is checked, not the wording.
FEATURE_ERRORS = [
    ("error_raise_exception", "{{ raise_exception('Conversation roles must alternate user/assistant') }}", {}),
    ("error_unknown_filter", "{{ 'a' | no_such_filter }}", {}),
    ("error_unknown_test", "{{ 'a' is no_such_test }}", {}),
    ("error_undefined_attr", "{{ missing.attr }}", {}),
    ("error_undefined_arith", "{{ missing + 1 }}", {}),
    ("error_type_compare", "{{ 'a' < 1 }}", {}),
    ("error_unterminated_block", "{% if true %}x", {}),
    ("error_unclosed_tag", "{{ 'a' ", {}),
    ("error_unknown_tag", "{% frobnicate %}", {}),
    ("error_bad_end_tag", "{% for x in y %}{% endif %}", {}),
    ("error_macro_too_many_args", "{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", {}),
    ("error_unsafe_method", "{{ [1].append(2) }}", {}),
    ("error_tojson_undefined", "{{ missing | tojson }}", {}),
    ("error_set_attr_on_dict", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("error_break_outside_loop", "{% break %}", {}),
    ("error_zero_division", "{{ 1 / 0 }}", {}),
    ("error_unpack_mismatch", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("error_namespace_underscore", "{% set ns = namespace(_x=1) %}", {}),
    ("error_do_not_enabled", "{% do x %}", {}),
    ("error_dict_attr_undefined_call", "{{ {}.nope() }}", {}),
    ("error_int_of_undefined", "{{ x | int }}", {}),
    ("error_string_plus_int", "{{ 'a' + 1 }}", {}),
    ("error_iterate_int", "{% for x in 5 %}{% endfor %}", {}),
    ("error_unknown_str_method", "{{ 'a'.nope() }}", {}),
    ("error_missing_endif_in_macro", "{% macro f() %}{% if x %}{% endmacro %}", {}),
    ("error_slice_step_zero", "{{ [1][::0] }}", {}),
    ("error_call_non_callable", "{{ 'a'() }}", {}),
    ("error_undefined_item", "{{ missing['k'] }}", {}),
    ("error_unterminated_string", "{{ 'abc }}", {}),
    ("error_bad_char", "{{ a $ b }}", {}),
    ("error_unbalanced_paren", "{{ (1 }}", {}),
    ("error_chained_is", "{{ 1 is odd is even }}", {}),
    ("error_continue_in_macro_in_loop", "{% for x in [1] %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", {}),
    ("error_format_missing_arg", "{{ '{} {}'.format(1) }}", {}),
    ("error_none_in_string", "{{ none in 'abc' }}", {}),
    ("error_sort_mixed", "{{ [1, 'a'] | sort }}", {}),
]


def main():
    out_main = []
    templates = {
        "lightonocr2": lightonocr_cases(),
        "qwen3": qwen3_cases(),
        "qwen2_vl": qwen2_vl_cases(),
        "qwen2_5": qwen2_5_cases(),
        "qwen3_coder": qwen3_coder_cases(),
    }
    for template, cases in templates.items():
        source = load_template(template)
        for name, messages, agp, extra in cases:
            expected = render_like_apply_chat_template(source, messages, agp, extra)
            out_main.append({
                "name": name,
                "template": template,
                "messages": messages,
                "add_generation_prompt": agp,
                "extra": extra,
                "expected": expected,
            })

    lo_image_only = next(g for g in out_main if g["name"] == "lightonocr2/image_only/gen=1")["expected"]
    want = "<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n"
    assert lo_image_only == want, repr(lo_image_only)

    out_features = []
    for name, source, variables in FEATURES:
        expected = _compile_jinja_template(source).render(**variables)
        out_features.append({"name": name, "source": source, "vars": variables, "expected": expected})
    for name, source, variables in FEATURE_ERRORS:
        try:
            _compile_jinja_template(source).render(**variables)
        except Exception as e:  # noqa: BLE001 - any Jinja failure is the expected outcome
            out_features.append({"name": name, "source": source, "vars": variables,
                                 "error": f"{type(e).__name__}: {e}"})
        else:
            raise SystemExit(f"feature {name} was expected to fail but rendered")

    def write(path, rows):
        with open(path, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")

    write(os.path.join(FIXTURES, "goldens.jsonl"), out_main)
    write(os.path.join(FIXTURES, "feature_goldens.jsonl"), out_features)
    print(f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}: "
          f"{len(out_main)} template goldens, {len(out_features)} feature goldens", file=sys.stderr)


if __name__ == "__main__":
    main()
