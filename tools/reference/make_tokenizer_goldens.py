#!/usr/bin/env python3
"""Builds the real-vocabulary Qwen2 tokenizer fixture and the tokenizer golden files.

What it writes (into tests/fixtures/tokenizer/ by default):
  qwen2_tokenizer.json.gz  A Hugging Face tokenizer.json with Qwen's real byte-level BPE vocabulary,
                           built from qwen.tiktoken with the `tokenizers` library: vocab from the
                           ranks, merges recovered from the ranks by transformers' own
                           TikTokenConverter.extract_vocab_merges_from_model, Qwen2's NFC normalizer,
                           Split(Qwen2 regex) + ByteLevel(use_regex=false) pre-tokenizer, ByteLevel
                           decoder, and the 26 Qwen added tokens (ids 151643..151668). Merges are
                           stored in the legacy "a b" string form (smaller; `tokenizers` reads both).
                           That method yields every split of a token into two vocabulary tokens
                           (294,166 merges, where Qwen2's own merges.txt has 151,387); on ~120k
                           distinct words (these goldens plus random text) its BPE gave exactly
                           tiktoken's rank-order BPE ids. Either way the C++ tokenizer is compared
                           with the library on this same file.
  variants.json            Patches of that tokenizer.json (other pre-tokenizers, ignore_merges, no
                           normalizer, added tokens with lstrip/rstrip/single_word/normalized...).
  encode_goldens.jsonl     One line per test string: text, ids, decoded text (and with special tokens
                           skipped), and per variant the ids/decoded text where they differ.
  decode_goldens.jsonl     Id sequences (partial UTF-8 byte tokens, special tokens) and their decoding.
  unicode_classes.json     \\p{L}, \\p{N}, \\s, \\p{M} as ranges, as Oniguruma in `tokenizers` matches them, and
                           the \\w and \\s of the added-token flags (Rust's regex crate).
  nfc_goldens.jsonl.gz     Strings and their NFC according to `tokenizers` (every canonical composite,
                           every combining mark against marks of other classes, random mark runs).

It is not a test itself: tests/unit/tokenizer_test.cc checks the C++ tokenizer against these files.

Run with the reference virtualenv (tokenizers 0.23.3, transformers 5.24.0):
  /work/venv/ref/bin/python tools/reference/make_tokenizer_goldens.py \\
      [--tiktoken /work/shared/data/qwen.tiktoken] [--out tests/fixtures/tokenizer]
"""

import argparse
import base64
import gzip
import json
import os
import random
import sys

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers.convert_slow_tokenizer import TikTokenConverter, bytes_to_unicode

QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2_DIGITS3_PATTERN = QWEN2_PATTERN.replace(r"\p{N}|", r"\p{N}{1,3}|")

# Qwen2/Qwen3 added tokens (content, special) at ids 151643.. in order, as in Qwen3's
# tokenizer_config.json added_tokens_decoder (LightOnOCR uses the same table).
QWEN_ADDED_TOKENS = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False),
]


def load_tiktoken(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


def build_qwen2_tokenizer(tiktoken_path):
    # transformers' converter reads the file with the `tiktoken` package, which the reference
    # environment lacks; the file format is trivial, so feed it the same dict.
    TikTokenConverter.load_tiktoken_bpe = staticmethod(load_tiktoken)
    converter = TikTokenConverter(vocab_file=tiktoken_path, pattern=QWEN2_PATTERN)
    vocab, merges = converter.extract_vocab_merges_from_model(tiktoken_path)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None,
                               continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                               byte_fallback=False, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.add_tokens([AddedToken(c, special=s, normalized=False, lstrip=False, rstrip=False, single_word=False)
                    for c, s in QWEN_ADDED_TOKENS])
    return tok, len(merges)


def bytes_to_unicode_str(text):
    """The byte-level spelling of text, as vocabulary keys are written."""
    enc = bytes_to_unicode()
    return "".join(enc[b] for b in text.encode("utf-8"))


def to_legacy_merges(tokenizer_json):
    j = json.loads(tokenizer_json)
    merges = j["model"]["merges"]
    assert all(" " not in a and " " not in b for a, b in merges), "byte-level tokens never hold a space"
    j["model"]["merges"] = [a + " " + b for a, b in merges]
    return j


def apply_patch(base, patch):
    j = json.loads(json.dumps(base))
    for key, value in patch.items():
        if key == "model":
            j["model"].update(value)
        else:
            j[key] = value
    return j


def byte_level(pre_space):
    return {"type": "ByteLevel", "add_prefix_space": pre_space, "trim_offsets": False, "use_regex": True}


def split_then_byte_level(pattern, pre_space):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": pre_space, "trim_offsets": False, "use_regex": False}]}


def added_flags_tokens(base):
    """Qwen's added tokens with some flags changed, plus extra tokens for the corner cases."""
    toks = [dict(t) for t in base["added_tokens"]]
    for t in toks:
        if t["content"] == "<|im_end|>":
            t["lstrip"] = t["rstrip"] = True
        if t["content"] == "<think>":
            t["single_word"] = True
    extra = [
        dict(content="[BLOCK]", single_word=True, lstrip=False, rstrip=False, normalized=False, special=True),
        dict(content="<tag>", single_word=False, lstrip=True, rstrip=False, normalized=False, special=True),
        dict(content="</tag>", single_word=False, lstrip=False, rstrip=True, normalized=False, special=False),
        dict(content="<|im", single_word=False, lstrip=False, rstrip=False, normalized=False, special=False),
        dict(content="Cafe\u0301", single_word=False, lstrip=False, rstrip=False, normalized=True, special=False),
        dict(content="e\u0301!", single_word=False, lstrip=False, rstrip=False, normalized=False, special=True),
        dict(content="hello", single_word=False, lstrip=False, rstrip=False, normalized=False, special=False),
        dict(content=" spaced out ", single_word=False, lstrip=False, rstrip=False, normalized=False, special=False),
        dict(content="\u00e9t\u00e9", single_word=False, lstrip=False, rstrip=False, normalized=False, special=False),
        dict(content="word", single_word=True, lstrip=True, rstrip=True, normalized=True, special=False),
    ]
    next_id = max(t["id"] for t in toks) + 1
    for t in extra:
        t["id"] = next_id  # provisional; the library assigns the real ids (canonicalised below)
        next_id += 1
        toks.append(t)
    return toks


def variants(base):
    v = [
        ("ignore_merges", {"model": {"ignore_merges": True}}),
        ("no_normalizer", {"normalizer": None}),
        ("nfc_sequence", {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]}}),
        ("gpt2_byte_level", {"pre_tokenizer": byte_level(False)}),
        ("gpt2_byte_level_prefix_space", {"pre_tokenizer": byte_level(True)}),
        ("qwen2_split_prefix_space", {"pre_tokenizer": split_then_byte_level(QWEN2_PATTERN, True)}),
        ("digits3", {"pre_tokenizer": split_then_byte_level(QWEN2_DIGITS3_PATTERN, False)}),
        ("added_flags", {"added_tokens": added_flags_tokens(base)}),
    ]
    out = []
    for name, patch in v:
        j = apply_patch(base, patch)
        tok = Tokenizer.from_str(json.dumps(j))
        if "added_tokens" in patch:
            # Store the ids the library assigned, so the fixture is self-consistent.
            patch = {"added_tokens": json.loads(tok.to_str())["added_tokens"]}
            tok = Tokenizer.from_str(json.dumps(apply_patch(base, patch)))
        out.append((name, patch, tok))
    return out


# ---------------------------------------------------------------------------------------------
# Test strings

LONG_DOC = """# Rapport annuel 2023 — Annual Report

## 1. Introduction

The quarterly revenue grew by 12.5% year-over-year, reaching $4,567,890.12 in Q4. Our CEO said: "We're
proud of what we've achieved, and we'll keep going." Les résultats de l'exercice sont présentés ci-dessous ;
die Ergebnisse für das Geschäftsjahr übertreffen die Erwartungen (Größenordnung: 3–5 %).

| Region        | Q1 2023 | Q2 2023 | Q3 2023 | Q4 2023 | Δ YoY  |
|---------------|--------:|--------:|--------:|--------:|-------:|
| Europe        |  1,204  |  1,318  |  1,402  |  1,537  | +9.8%  |
| North America |  2,011  |  2,087  |  2,190  |  2,301  | +7.1%  |
| Asia-Pacific  |    845  |    912  |  1,003  |  1,120  | +18.4% |
| **Total**     | **4,060** | **4,317** | **4,595** | **4,958** | **+10.6%** |

### 1.1 Methodology

Let $f(x) = \\sum_{i=0}^{n} a_i x^i$ and consider the integral
$$\\int_0^1 f(x)\\,dx = \\sum_{i=0}^{n} \\frac{a_i}{i+1}.$$
For $n \\geq 2$ we have $\\|f\\|_2 \\leq \\sqrt{n}\\,\\max_i |a_i|$, see Eq. (3) and Table 2.

```python
def revenue_growth(prev: float, cur: float) -> float:
    \"\"\"Return the growth rate in percent.\"\"\"
    if prev == 0:
        raise ValueError("previous revenue must be non-zero")
    return 100.0 * (cur - prev) / prev
```

### 1.2 Governance

The Board met eleven times during the year (attendance: 96%). Two independent directors joined in
March; the Audit Committee reviewed the internal-control framework, the cybersecurity roadmap and the
policy on the use of generative AI. No material weakness was identified. The remuneration report, the
sustainability statement (CSRD, ESRS E1–E5) and the auditors' opinion are available on request, and the
AGM will be held on Thursday, 16 May 2024 at 10:00 CET in Paris (hybrid format, live-streamed).

## 2. 市场概况

在过去的一年中，我们在亚太地区的业务增长了18.4%。公司继续加大研发投入，推出了三款新产品，
并与多家合作伙伴建立了长期战略关系。预计2024年的营收将达到五十亿元人民币。

## 3. 日本市場

日本市場では、売上高が前年比で１２％増加しました。新しいサービス「クラウドOCR」は、
多くのお客様にご利用いただいています。東京・大阪・名古屋に拠点を持っています。

## 4. 한국 시장

한국 시장에서는 매출이 꾸준히 증가하고 있으며, 새로운 파트너십을 통해 서비스 품질을 개선했습니다.

## 5. Outlook / Perspectives

* Expand the OCR pipeline to 40+ languages (incl. العربية, עברית, हिन्दी, ไทย).
* Reduce latency from 850 ms → 320 ms per page.
* Ship v2.0 by 2024-06-30; see https://example.com/roadmap?year=2024&lang=en#q2 for details.
* Contact: investor.relations@example.com — Tel. +33 (0)1 23 45 67 89.

> « La croissance n'est pas une fin en soi, c'est un moyen. » — Directrice financière

## 6. Detailed results by segment

The document-processing segment, which includes OCR, layout analysis and table extraction, remained
the largest contributor. Customers processed 1.2 billion pages (up from 870 million), with an average
accuracy of 98.7% on printed text and 94.1% on handwriting. It's worth noting that the error rate on
scanned invoices dropped by half after we'd retrained the layout model; we're now targeting 99.5%.

Im Segment Dokumentenverarbeitung stieg der Umsatz um 14 %. Die Kundenzufriedenheit („sehr zufrieden“
oder „zufrieden“) lag bei 91 %, gegenüber 87 % im Vorjahr. Außerdem wurden zwölf neue Rechenzentren
in Betrieb genommen, davon drei in Österreich und zwei in der Schweiz.

Dans le segment « services », le chiffre d'affaires a atteint 1,35 Md€ (+6,2 %). Les équipes ont
déployé la nouvelle plateforme dans 14 pays ; l'objectif pour 2024 est d'atteindre 20 pays d'ici à la fin
de l'été. À noter : les coûts d'hébergement ont baissé de 8 % grâce à l'optimisation des modèles.

В сегменте «Облачные услуги» выручка выросла на 21 %, а число клиентов превысило 15 000.

في قطاع الخدمات السحابية، ارتفعت الإيرادات بنسبة ٢١٪ وتجاوز عدد العملاء ١٥٠٠٠ عميل.

| Segment              | Revenue (M€) | Share  | Margin |
|:---------------------|-------------:|-------:|-------:|
| Document processing  |     2,310.4  | 46.6%  | 31.2%  |
| Services             |     1,350.0  | 27.2%  | 18.9%  |
| Cloud                |     1,297.6  | 26.2%  | 24.5%  |

### 6.1 Risk factors

1. Currency fluctuations (EUR/USD, EUR/JPY) may affect reported revenue by ±3%.
2. Regulatory changes, e.g. the EU AI Act (Regulation (EU) 2024/1689), may require additional audits.
3. Supply of GPUs (H100/H200) remains constrained; lead times are 26–39 weeks.

```javascript
// Compute the weighted margin across segments.
const segments = [{ rev: 2310.4, m: 0.312 }, { rev: 1350.0, m: 0.189 }, { rev: 1297.6, m: 0.245 }];
const total = segments.reduce((s, x) => s + x.rev, 0);
console.log(`margin = ${(segments.reduce((s, x) => s + x.rev * x.m, 0) / total * 100).toFixed(1)}%`);
```

References:
- [3] Smith, J. & Müller, K. (2023). *Robust OCR for Historical Documents*. Proc. ICDAR, pp. 112–127. doi:10.1000/xyz123
- [4] 王小明，李华（2022）。《文档智能综述》。计算机学报，45(3)：501–530。
- [5] https://arxiv.org/abs/2310.01234v2

Footnotes:
[1] Figures in thousands of euros (k€), unaudited.
[2] 1 USD ≈ 0.92 EUR ≈ 149.6 JPY at 31/12/2023.

    Indented block with	tabs	and   multiple   spaces.   
Trailing spaces here   
\t\tTwo tabs then text
Emoji summary: 📈 growth, 🚀 launch, ✅ done, 👨‍👩‍👧‍👦 team, 🇫🇷🇩🇪🇯🇵 offices.
"""


def build_strings():
    s = []
    add = s.append
    # Basics and empty-ish inputs.
    for t in ["", " ", "  ", "\n", "\t", "\r", "\r\n", "a", "A", "hello", "Hello world", "Hello, world!",
              "hello world  ", "  hello world", "The quick brown fox jumps over the lazy dog.",
              "system", "user", "assistant", "\n\n", "x\ny", "x\r\ny", "!!!", "...", "?!", "a.b.c",
              "snake_case_name", "CamelCaseName", "kebab-case-name", "e-mail", "C'est la vie", "(parenthesised)",
              "[brackets] {braces} <angles>", "50% off", "#hashtag @mention", "$100", "€100", "£5.99", "¥1000",
              "a,b;c:d", "tab\tseparated\tvalues", "semi;colon", "quote\"inside", "back\\slash", "under_score_"]:
        add(t)
    # Contractions in every case.
    for t in ["don't", "DON'T", "Don'T", "I'm", "I'M", "i'm", "we'll", "WE'LL", "we'Ll", "they're", "THEY'RE",
              "you've", "YOU'VE", "he'd", "HE'D", "it's", "IT'S", "'s", "'S", "'t", "'re", "'RE", "'ve", "'m",
              "'ll", "'LL", "'d", "'D", "''s", "'s'", "a's b'S c'st", "'x", "'", "''", "'''", "rock'n'roll",
              "the 'quoted' word", "'ſ long s", "DAVID'ſ", "it’s curly", "O'Neil's", "'hello", " 's", "'\n's",
              "'1", "'é", "' s"]:
        add(t)
    # Whitespace: runs, mixes, trailing, unicode spaces.
    for t in ["a  b", "a   b", "a\t\tb", "a \n b", "a\n\nb", "a \n\n b", "a\n \n b", "a\t\n\tb", "end with space ",
              "end with spaces   ", "end with newline\n", "end with newlines\n\n\n", " \n", "\n ", " \t \n \t ",
              "\n\n\n   x", "x   \n\n\n", "x \r\n y", "x\r\r\ny", "  \t  x", "word\u00a0word", "word\u00a0\u00a0word",
              "\u00a0x", "x\u00a0", "\u3000全角スペース\u3000", "a\u3000\u3000b", "a\u2028b", "a\u2029b", "a\u0085b",
              "a\u1680b", "a\u2000\u2001\u2002b", "a\u202fb", "a\u205fb", "a\u200bb", "a\ufeffb", "a\u180eb",
              "a\u000bb\u000cc", "a\u001cb\u001fc", " " * 1000, "\n" * 500, "\t" * 300, " \t\n" * 300,
              "a" + " " * 2000 + "b", "x" + "\n \n" * 400 + "y", ("word " * 300).strip(), " " * 3 + "\n" * 3 + " " * 3,
              "\u00a0" * 50 + "x", "\r\n" * 100, "line1\nline2\n\nline4\n\n\n"]:
        add(t)
    # Numbers.
    for t in ["0", "7", "42", "123", "1234", "12345678901234567890", "3.14159265358979", "-273.15", "1,000,000",
              "1 000 000", "2024-06-30", "12:34:56", "v1.2.3", "0x1F4A9", "1e-10", "１２３４５", "٣٤٥٦", "۱۲۳",
              "१२३", "²³¹", "½ ¼ ¾", "Ⅻ Ⅳ", "①②③", "𝟙𝟚𝟛", "𐹠𐹡", "10th 21st 3rd", "a1b2c3", "99 bottles",
              "+33 (0)1 23 45 67 89", "3×4=12", "x² + y² = z²", "\U00010D40\U00010D41 Garay digits",
              "\U000116D0\U000116D1 Myanmar Pao digits"]:
        add(t)
    # Latin with accents; NFC composition.
    for t in ["café", "cafe\u0301", "CAFE\u0301", "naïve résumé", "nai\u0308ve re\u0301sume\u0301", "Ångström",
              "A\u030angstro\u0308m", "\u212b", "\u2126 ohm", "Straße", "Größe Übermaß", "Gro\u0308\u00dfe",
              "façade", "ça va ? Très bien !", "Œuvre œuf", "déjà vu", "Ærøskøbing", "Łódź", "Český Krumlov",
              "İstanbul ı", "ǅ ǈ ǋ", "ﬁ ﬂ ligatures", "e\u0301\u0301", "e\u0327\u0301", "e\u0301\u0327",
              "a\u0316\u0301", "a\u0301\u0316", "o\u031b\u0323", "\u1e69 \u0073\u0323\u0307 \u0073\u0307\u0323",
              "\u1100\u1161\u11a8", "\u1100\u1161", "한\u11a8", "Q\u0307\u0323", "\u0041\u0300\u0301",
              "x\u0301", "\u0301start", "\u0344", "\u0958\u0959", "\u0915\u093c", "Tiếng Việt", "Tie\u0302\u0301ng Vie\u0323\u0302t",
              "\U00011935\U00011930 Dives Akuru", "\U00011938", "a\u0301\u1dfa\u0316b", "a\u1dfa\u0301\u0316",
              "e\u0301\u07fd", "\u0915\u094d\u0a3c", "a\u0301\U00016ff0\u0316", "\u0ec8\u0eb8\u0eba"]:
        add(t)
    # Scripts.
    for t in ["中文测试", "我们在过去的一年中取得了很大的进步。", "你好，世界！", "繁體中文與简体中文", "日本語のテキストです。",
              "カタカナとひらがなと漢字", "ｶﾀｶﾅ半角", "한국어 텍스트입니다.", "안녕하세요, 세계!", "Привет, мир!",
              "Ελληνικά γράμματα", "مرحبا بالعالم", "العربية: ١٢٣ و 456", "שלום עולם", "हिन्दी भाषा", "नमस्ते दुनिया",
              "ภาษาไทยไม่มีช่องว่าง", "ພາສາລາວ", "ქართული ენა", "Հայերեն", "አማርኛ", "தமிழ் மொழி", "বাংলা ভাষা",
              "ꯃꯩꯇꯩ", "ᏣᎳᎩ", "ᚠᚢᚦᚨᚱᚲ", "𐌰𐌱𐌲 Gothic", "𓀀𓀁 hieroglyphs", "\U000105C0\U000105C1 Todhri",
              "\U00016D40\U00016D41 Kirat Rai", "mixed 中文 and English", "日本語English混在", "русский English"]:
        add(t)
    # Emoji and symbols.
    for t in ["😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "🇫🇷🇩🇪🇯🇵", "🇺🇸", "1️⃣", "❤️", "☺︎",
              "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "hello 😀 world", "😀hello", "emoji😀😀😀end", "→ ← ↑ ↓", "© ® ™", "✓ ✗ ★", "∀x∈ℝ: x²≥0",
              "\u200d", "a\u200db", "\u200c", "\u00ad soft hyphen", "\ufffd", "\ue000 private", "\U0010ffff",
              "\uffff", "\U000e0041\U000e0042 tags", "\x00", "a\x00b", "\x01\x02\x7f", "\u202eRTL override",
              "\u2060word joiner", "\u034f grapheme joiner"]:
        add(t)
    # Code.
    for t in [
        "def f(x):\n    return x * 2\n",
        "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
        "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }\n",
        "fn main() {\n    let s: &str = \"hi\";\n    println!(\"{s}\");\n}",
        "const x = (a, b) => a ?? b; // comment\n",
        "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
        "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
        "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
        "$ ls -la | grep '.txt' && echo \"done\" > /dev/null 2>&1",
        "if x != None:\n\t\tpass\n\telse:\n    \tprint('mixed')",
        "    indented\n        more\n    less\n",
        "x=1;y=2;z=x+y",
        "a->b; c::d; e<<=2; f>>>=1; g!==h; i===j",
        "// TODO(user): fix this\n/* block */",
        "print(f\"{value:>10.2f}\")",
        "```cpp\nauto x = 1;\n```",
        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n",
    ]:
        add(t)
    # Markdown, LaTeX, URLs.
    for t in [
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "| Name | Value |\n|:-----|------:|\n| π | 3.14 |\n| e | 2.72 |\n",
        "# Title\n\n## Subtitle\n\n- item 1\n- item 2\n  - nested\n\n1. first\n2. second",
        "**bold** _italic_ `code` ~~strike~~ [link](https://x.y)",
        "$E = mc^2$", "$$\\frac{a}{b} + \\sqrt{x^2+y^2}$$", "\\begin{align} a &= b \\\\ c &= d \\end{align}",
        "\\(\\alpha + \\beta\\)", "\\$x\\$ escaped dollars", "$\\mathbb{R}^n \\to \\mathbb{R}$",
        "https://www.example.com/path/to/page.html?query=1&b=2#anchor", "http://localhost:8080/v1/chat/completions",
        "mailto:someone@example.org", "ftp://files.example.net/pub/file.tar.gz", "C:\\Users\\name\\file.txt",
        "/usr/local/bin/locr --model ./models/x", "www.example.com", "user@example.com",
    ]:
        add(t)
    # Special tokens inside text.
    for t in ["a<|im_end|>b", "<|im_start|>user\n<|image_pad|><|image_pad|>", "<|im_start|>", "<|im_end|>",
              "<|endoftext|>", "<|im_start|><|im_end|>", "<|im_end|><|im_end|><|im_end|>", "<<|im_end|>>",
              "<|im_start", "im_start|>", "<|im_start |>", "<|IM_START|>", " <|im_end|> ", "x <|im_end|>  y",
              "<|image_pad|>" * 5, "<|vision_start|><|image_pad|><|vision_end|>", "<think>\nreasoning\n</think>\n\nanswer",
              "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|fim_prefix|>def<|fim_suffix|>\n<|fim_middle|>",
              "<|box_start|>(10,20),(30,40)<|box_end|>", "text<|endoftext|>more text", "e\u0301<|im_end|>\u0301",
              "café<|im_end|>cafe\u0301", "<|im_end|>\n", "\n<|im_start|>", "<|object_ref_start|>cat<|object_ref_end|>",
              "<|quad_start|><|quad_end|>", "<|video_pad|>", "<|repo_name|>locr<|file_sep|>main.cc", "<think></think>",
              "<tool_response>ok</tool_response>", "<|im_end|>" + " " * 5 + "<|im_end|>", "<|im<|im_end|>",
              "[BLOCK] a[BLOCK]b [BLOCK]", "<tag>  x  </tag>  y", "  <tag>x</tag>", "Cafe\u0301 and Café",
              "e\u0301! and é!", "hello world hello", "xhellox", "a spaced out b", "été à l'été", "word words sword word",
              " word ", "<|imx", "<|im_start|x", "think <think> think<think>", "<think>word</think>"]:
        add(t)
    # Chat template renderings of the OCR prompt (docs: model-spec §5).
    add("<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n")
    add("<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|>Extract the text.\n<|im_end|>\n<|im_start|>assistant\n")
    add("<|im_start|>system<|im_end|>\n<|im_start|>user\n" + "<|image_pad|>" * 289 + "<|im_end|>\n<|im_start|>assistant\n")
    add("<|im_start|>system<|im_end|>\n<|im_start|>user\n" + "<|image_pad|>" * 4 + "<|im_end|>\n<|im_start|>assistant\n")
    add("<|im_start|>system\nYou are an OCR engine. Convert the page to Markdown.<|im_end|>\n<|im_start|>user\n"
        "<|image_pad|>Convert this page to markdown.\n<|im_end|>\n<|im_start|>assistant\n")
    add("<|im_start|>user\nPicture 1:\n<|image_pad|>Describe.\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
    add("<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n"
        "# Title\n\nSome OCR output with a table:\n\n| a | b |\n|---|---|\n<|im_end|>\n")
    # The long document and pieces of it.
    add(LONG_DOC)
    add(LONG_DOC.upper())
    add(LONG_DOC[:1000])
    add(LONG_DOC.replace(" ", "\t"))
    # Random strings from pieces that stress the regex alternatives and their order.
    rng = random.Random(20240630)
    pool = [" ", "  ", "\t", "\n", "\r", "\r\n", "a", "B", "z", "é", "e\u0301", "中", "ア", "한", "1", "23", "٣",
            "½", ".", ",", "!", "'", "'s", "'S", "'ll", "'LL", "'re", "'ſ", "-", "_", "(", ")", "\u00a0", "\u3000",
            "\u2028", "😀", "\u200d", "\u0301", "<|im_end|>", "<|image_pad|>", "<think>", "\u1dfa", "x\u0316\u0301",
            "ǅ", "ß", "ﬁ", "\x0b", "\x1c", "$", "€", "<", "|", ">"]
    for _ in range(150):
        n = rng.randint(1, 30)
        add("".join(rng.choice(pool) for _ in range(n)))
    # Random whitespace-heavy strings.
    ws = [" ", "\t", "\n", "\r", "\u00a0", "\u3000", "x", "'", "."]
    for _ in range(40):
        n = rng.randint(1, 60)
        add("".join(rng.choice(ws) for _ in range(n)))
    return s


def decode_cases(tok):
    """(name, ids, skip_special) cases whose decoding is interesting on its own."""
    byte_encoder = bytes_to_unicode()

    def byte_id(b):
        return tok.token_to_id(byte_encoder[b])

    def bytes_ids(bs):
        return [byte_id(b) for b in bs]

    emoji = tok.encode("👨‍👩‍👧‍👦", add_special_tokens=False).ids
    cjk = tok.encode("我们在过去的一年中", add_special_tokens=False).ids
    hello = tok.encode("hello world", add_special_tokens=False).ids
    cases = [
        ("lone_lead_byte_2", bytes_ids(b"\xc3"), False),
        ("lone_lead_byte_3", bytes_ids(b"\xe4\xb8"), False),
        ("partial_4_then_ascii", bytes_ids(b"\xf0\x9f\x98") + hello, False),
        ("ascii_then_partial", hello + bytes_ids(b"\xe4"), False),
        ("lone_continuation", bytes_ids(b"\x80\x80a"), False),
        ("invalid_c0_c1", bytes_ids(b"\xc0\xaf\xc1\xbf"), False),
        ("invalid_f5_ff", bytes_ids(b"\xf5\xfe\xff"), False),
        ("surrogate_encoded", bytes_ids(b"\xed\xa0\x80"), False),
        ("overlong_e0", bytes_ids(b"\xe0\x80\x80"), False),
        ("above_max_f4", bytes_ids(b"\xf4\x90\x80\x80"), False),
        ("truncated_then_valid", bytes_ids(b"\xe4\xb8\xe4\xb8\xad"), False),
        ("f0_then_valid_2", bytes_ids(b"\xf0\xc3\xa9"), False),
        ("valid_split_bytes", bytes_ids("é中😀".encode()), False),
        ("every_byte", bytes_ids(bytes(range(256))), False),
        ("emoji_prefix_1", emoji[:1], False),
        ("emoji_prefix_2", emoji[:2], False),
        ("emoji_prefix_3", emoji[:3], False),
        ("emoji_all", emoji, False),
        ("cjk_prefix", cjk[:max(1, len(cjk) // 2)], False),
        ("specials_kept", [151644, 872, 198, 151655, 151655, 151645, 198], False),
        ("specials_skipped", [151644, 872, 198, 151655, 151655, 151645, 198], True),
        ("non_special_added_kept_when_skipping", [151667, 198, 151668, 151657, 151658], True),
        ("all_added_skipped", list(range(151643, 151669)), True),
        ("all_added_kept", list(range(151643, 151669)), False),
        ("specials_around_partial", [151644] + bytes_ids(b"\xe4\xb8") + [151645] + bytes_ids(b"\xad"), False),
        ("specials_around_partial_skipped", [151644] + bytes_ids(b"\xe4\xb8") + [151645] + bytes_ids(b"\xad"), True),
        ("empty", [], False),
    ]
    return cases


def to_ranges(code_points):
    ranges = []
    for c in code_points:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ranges


def unicode_classes(base):
    """Code point ranges of the classes the library uses:
    L, N, S, M: \\p{L}, \\p{N}, \\s, \\p{M} in the pre-tokenizer regexes (Oniguruma; \\p{M} is in Qwen3.5's);
    W, WS: \\w and \\s of Rust's regex crate behind the added-token single_word / rstrip flags,
    probed through those flags."""
    cps = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]
    text = "".join(chr(c) for c in cps)
    out = {}
    for name, pattern in [("L", r"\p{L}"), ("N", r"\p{N}"), ("S", r"\s"), ("M", r"\p{M}")]:
        split = pre_tokenizers.Split(Regex(pattern), behavior="removed")
        kept = set("".join(piece for piece, _ in split.pre_tokenize_str(text)))
        out[name] = to_ranges(c for c in cps if chr(c) not in kept)
    j = json.loads(json.dumps(base))
    j["normalizer"] = None
    probe_id = 151669
    j["added_tokens"] = j["added_tokens"] + [
        dict(id=probe_id, content="[W]", single_word=True, lstrip=False, rstrip=False, normalized=False, special=True),
        dict(id=probe_id + 1, content="[R]", single_word=False, lstrip=False, rstrip=True, normalized=False, special=True)]
    tok = Tokenizer.from_str(json.dumps(j))
    # "[W]c" keeps [W] unless c is a word character; "[R]c" swallows c if it is whitespace.
    encs = tok.encode_batch(["[W]" + chr(c) for c in cps], add_special_tokens=False)
    out["W"] = to_ranges(c for c, e in zip(cps, encs) if e.ids[0] != probe_id)
    encs = tok.encode_batch(["[R]" + chr(c) for c in cps], add_special_tokens=False)
    out["WS"] = to_ranges(c for c, e in zip(cps, encs) if e.ids == [probe_id + 1])
    return out


def nfc_cases():
    import unicodedata
    rng = random.Random(7)
    cases = []
    # Canonical decompositions of every code point that has one (NFD by the library), recomposed.
    nfd = normalizers.NFD()
    cps = [c for c in range(1, 0x110000) if not (0xD800 <= c <= 0xDFFF)]
    sep = "\x00"
    decomposed = nfd.normalize_str(sep.join(chr(c) for c in cps)).split(sep)
    marks = []
    for c, d in zip(cps, decomposed):
        if d != chr(c):
            cases.append(d)
            cases.append(chr(c))
        if unicodedata.combining(chr(c)) or 0x0300 <= c <= 0x036F:
            marks.append(chr(c))
    # Combining marks (by this Python's Unicode data, plus the newer ones utf8proc knows) against
    # marks of every class, in both orders.
    extra = [0x7FD, 0x898, 0x8CA, 0x9FE, 0xC3C, 0xD3B, 0xEBA, 0x1715, 0x1ABF, 0x1AC5, 0x1DF6, 0x1DFA, 0xA82C,
             0x10D24, 0x10EAB, 0x10EFD, 0x10F46, 0x10F82, 0x11070, 0x1133B, 0x1145E, 0x11839, 0x1193D, 0x11943,
             0x119E0, 0x11A34, 0x11A47, 0x11A99, 0x11D42, 0x11D44, 0x11D97, 0x11F41, 0x16FF0, 0x1E08F, 0x1E130,
             0x1E2AE, 0x1E2EC, 0x1E4EC, 0x1E4EF]
    marks += [chr(c) for c in extra]
    refs = {}
    for m in marks:
        refs.setdefault(unicodedata.combining(m), m)
    for m in marks:
        for r in refs.values():
            cases.append("a" + m + r)
            cases.append("e" + r + m)
    # Random runs of letters and marks.
    letters = ["a", "e", "o", "s", "A", "ᄀ", "ᅡ", "ᆨ", "\u0915", "\U00011935", "\U00011930", "\U00011938"]
    for _ in range(3000):
        cases.append("".join(rng.choice(letters if rng.random() < 0.3 else marks) for _ in range(rng.randint(1, 8))))
    out = normalizers.NFC().normalize_str(sep.join(cases)).split(sep)
    assert len(out) == len(cases)
    return list(zip(cases, out))


def write_jsonl(path, rows, compress=False):
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    if compress:
        with open(path, "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as g:
                g.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiktoken", default="/work/shared/data/qwen.tiktoken")
    ap.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "tokenizer"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print(f"tokenizers {tokenizers.__version__}", file=sys.stderr)

    built, n_merges = build_qwen2_tokenizer(args.tiktoken)
    base = to_legacy_merges(built.to_str())
    tok = Tokenizer.from_str(json.dumps(base))
    # Sanity: the ids everyone knows, and the image-only OCR prompt of model-spec §5.
    for text, want in [("system", 8948), ("user", 872), ("assistant", 77091), ("\n", 198)]:
        got = tok.token_to_id(bytes_to_unicode_str(text))
        assert got == want, (text, got, want)
        assert tok.encode(text, add_special_tokens=False).ids == [want], text
    prompt = "<|im_start|>system<|im_end|>\n<|im_start|>user\n<|image_pad|><|im_end|>\n<|im_start|>assistant\n"
    assert tok.encode(prompt, add_special_tokens=False).ids == [
        151644, 8948, 151645, 198, 151644, 872, 198, 151655, 151645, 198, 151644, 77091, 198]
    assert tok.get_vocab_size(with_added_tokens=True) == 151669
    print(f"vocab {tok.get_vocab_size(with_added_tokens=False)}, merges {n_merges}", file=sys.stderr)

    raw = json.dumps(base, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with open(os.path.join(args.out, "qwen2_tokenizer.json.gz"), "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="", compresslevel=9) as g:
            g.write(raw)

    vars_ = variants(base)
    with open(os.path.join(args.out, "variants.json"), "w", encoding="utf-8") as f:
        json.dump([{"name": n, "patch": p} for n, p, _ in vars_], f, ensure_ascii=False, indent=1)
        f.write("\n")

    rows = []
    for text in build_strings():
        ids = tok.encode(text, add_special_tokens=False).ids
        row = {"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)}
        skipped = tok.decode(ids, skip_special_tokens=True)
        if skipped != row["decoded"]:
            row["decoded_skip"] = skipped
        for name, _, vt in vars_:
            vids = vt.encode(text, add_special_tokens=False).ids
            if vids != ids:
                row.setdefault("variant_ids", {})[name] = vids
            vdec = vt.decode(vids, skip_special_tokens=False)
            if vdec != row["decoded"]:
                row.setdefault("variant_decoded", {})[name] = vdec
        rows.append(row)
    write_jsonl(os.path.join(args.out, "encode_goldens.jsonl"), rows)
    n_var = sum(len(r.get("variant_ids", {})) for r in rows)
    print(f"{len(rows)} encode goldens ({n_var} variant encodings differ from the base)", file=sys.stderr)

    drows = [{"name": n, "ids": ids, "skip_special": skip, "text": tok.decode(ids, skip_special_tokens=skip)}
             for n, ids, skip in decode_cases(tok)]
    write_jsonl(os.path.join(args.out, "decode_goldens.jsonl"), drows)

    with open(os.path.join(args.out, "unicode_classes.json"), "w") as f:
        json.dump(unicode_classes(base), f, separators=(",", ":"))
        f.write("\n")
    write_jsonl(os.path.join(args.out, "nfc_goldens.jsonl.gz"), nfc_cases(), compress=True)
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
