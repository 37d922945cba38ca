#!/usr/bin/env python3
"""Builds the Qwen3.5 tokenizer goldens: ids that transformers' Qwen3_5Tokenizer gives.

transformers (5.2+) does not read the pre-tokenizer of a Qwen3.5 checkpoint's tokenizer.json:
AutoTokenizer picks Qwen3_5Tokenizer for config.json model_type "qwen3_5" whatever tokenizer_class
the hub names, and that class (models/qwen3_5/tokenization_qwen3_5.py) keeps only the vocabulary,
merges and added tokens of tokenizer.json and rebuilds the rest in code: NFC normalizer,
Split(PRETOKENIZE_REGEX, isolated) + ByteLevel(add_prefix_space=False, use_regex=False), ByteLevel
decoder, BPE without unk or byte fallback. The regex differs from Qwen2's by [\\p{L}\\p{M}]+ letter
runs and a symbol class without \\p{M}, so combining marks (Thai, Arabic harakat, Devanagari signs,
NFD accents) stay inside words.

This script reproduces that load path exactly: a model directory holding the real-vocabulary Qwen2
tokenizer.json fixture (tests/fixtures/tokenizer/qwen2_tokenizer.json.gz, written by
make_tokenizer_goldens.py from qwen.tiktoken; its pre_tokenizer is Qwen2's, as on the hub), a
tokenizer_config.json naming Qwen2Tokenizer, and a config.json with model_type "qwen3_5", loaded
with AutoTokenizer.from_pretrained. The BPE part is the same for Qwen3.5's 248k vocabulary; what
these goldens pin is the pre-tokenizer.

What it writes (into tests/fixtures/tokenizer/ by default):
  qwen35_tokenizer_patch.json   versions, the class transformers chose, and its normalizer /
                                pre_tokenizer / decoder as the backend serialises them: patched into
                                qwen2_tokenizer.json, they give a tokenizer.json that carries the
                                Qwen3.5 regex literally (checked here to give the same ids).
  qwen35_encode_goldens.jsonl.gz one line per text: text; ids (Qwen3_5Tokenizer.encode,
                                add_special_tokens=False); decoded; qwen2_ids (the same
                                tokenizer.json read literally, i.e. Qwen2/Qwen3's regex); pieces (the
                                Qwen3.5 Split alone on the raw, unnormalised text); qwen2_pieces (the
                                Qwen2 Split on it, only where it differs).

Qwen's 151k vocabulary was learned on Qwen2 pieces, so it has few tokens that cross a place where
Qwen2's regex cuts and the Qwen3.5 one does not: BPE then often gives the same ids both ways
(Devanagari, NFD accents), and the pieces show the difference the ids cannot. Thai and Arabic
still come out with other ids.

tests/unit/tokenizer_qwen35_test.cc checks the C++ tokenizer against these files.

Run with the reference virtualenv (tokenizers 0.23.3, transformers 5.24.0):
  /work/.venv-ref/bin/python tools/reference/make_qwen35_tokenizer_goldens.py [--out tests/fixtures/tokenizer]
"""

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
import unicodedata

import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, pre_tokenizers
from transformers import AutoTokenizer
from transformers.models.qwen3_5 import tokenization_qwen3_5

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer_goldens as base_goldens  # noqa: E402  (its test strings and LONG_DOC)

QWEN35_PATTERN = tokenization_qwen3_5.PRETOKENIZE_REGEX
QWEN2_PATTERN = base_goldens.QWEN2_PATTERN


def nfd(s):
    return unicodedata.normalize("NFD", s)


def qwen35_strings():
    """Texts where the Qwen3.5 and Qwen2 regexes may differ, then the base goldens' texts."""
    s = []
    add = s.append
    scripts = [
        # Thai (vowel signs and tone marks are Mn), Lao, Khmer, Myanmar.
        "สวัสดีครับ ยินดีต้อนรับสู่ประเทศไทย",
        "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ ๕ เสียง และมีตัวเลขไทย ๑๒๓๔",
        "กรุงเทพมหานคร อมรรัตนโกสินทร์ มหินทรายุธยา",
        "น้ำ ที่ ผู้ใหญ่ ไม้ไผ่ เด็กๆ",
        "ພາສາລາວ", "ភាសាខ្មែរ", "မြန်မာဘာသာ",
        # Arabic with harakat (Mn), shadda, tanwin, superscript alef, tatweel (Lm), Arabic-Indic digits.
        "بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ",
        "مَرْحَبًا بِكُمْ فِي الْعَالَمِ الْعَرَبِيِّ",
        "العربية بدون تشكيل، مع أرقام ١٢٣٤٥ و 2024.",
        "كتـــــاب", "قُرْآن", "ـَ", "(بِـ)", "«مُحَمَّدٌ»", "فارسی: می‌خواهم", "اردو: پاکستان",
        # Hebrew with niqqud.
        "שָׁלוֹם עוֹלָם", "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
        # Devanagari (virama and vowel signs are Mn / Mc), Bengali, Tamil, Telugu, Gurmukhi.
        "हिन्दी भाषा में नमस्ते, आप कैसे हैं?",
        "संस्कृतम् क्षत्रिय ज्ञान श्री", "२०२४ में ५ लाख", "ॐ नमः शिवाय",
        "বাংলা ভাষা", "தமிழ் மொழி", "తెలుగు", "ਪੰਜਾਬੀ", "ગુજરાતી", "ಕನ್ನಡ", "മലയാളം", "සිංහල",
        # Tibetan, Georgian, Armenian, Amharic, Greek (polytonic, NFC and NFD), Cyrillic with stress.
        "བོད་ཡིག", "ქართული", "Հայերեն", "አማርኛ",
        "ἀλήθεια καὶ ζωή", nfd("ἀλήθεια καὶ ζωή"), "Ελληνικά", "ударе́ние, ё, й", nfd("ударение ё й"),
        # Korean (syllables and NFD jamo), Japanese (with combining dakuten), Chinese.
        "한국어 텍스트입니다. 안녕하세요!", nfd("한국어 텍스트"), "\u1100\u1161\u11a8\u1102\u1161",
        "日本語のテキスト、カタカナ・ひらがな。", "か\u3099き\u3099く\u3099", "ｶﾞｷﾞｸﾞ ﾊﾟ", "東京・大阪・名古屋",
        "中文文本，包含标点符号。我们在2024年增长了18.4%。", "繁體中文：臺灣", "𠀀𠀁𪚥",
        # Vietnamese and other accented Latin, NFC and NFD.
        "Tiếng Việt có nhiều dấu thanh: ả, ạ, ẫ, ự, ở, người, Nguyễn.",
        nfd("Tiếng Việt có nhiều dấu thanh: ả, ạ, ẫ, ự, ở, người, Nguyễn."),
        "Café crème, naïve façade, Ångström, Øre, Žižek, Łódź, São Paulo, Ærø",
        nfd("Café crème, naïve façade, Ångström, Žižek, Łódź, São Paulo"),
        "ÉCOLE ÉLÉMENTAIRE", nfd("ÉCOLE ÉLÉMENTAIRE"), "Yorùbá: ẹ̀kọ́ ọmọ", "q\u0323 x\u0301 ə̃ ɛ̃ ŋ̊",
        "Z̷̢̛a̴l̸g̵o̶ ̷t̴e̸x̵t̶", "a\u0300\u0301\u0302\u0303\u0304b",
    ]
    for t in scripts:
        add(t)
    # Combining marks after digits, punctuation, spaces, newlines, apostrophes, marks alone.
    marks = ["\u0301", "\u0300\u0323", "\u093e", "\u0e31", "\u064e", "\u20dd", "\u20e3", "\ufe0f", "\u0897",
             "\U000113b8", "\U0001611e", "\u1ab0", "\u3099"]
    for m in marks:
        for ctx in ["1{m}", "12{m}3", "{m}5", "!{m}", "!!{m}!!", "({m})", " {m}", "  {m}", "\t{m}", "\n{m}",
                    "\r\n{m}x", "\u00a0{m}", "\u3000{m}", "'{m}", "'s{m}", "'{m}s", "a{m}b", "{m}", "{m}{m}",
                    "x {m}y", "x{m} y", ".{m}.", "a.{m}b", "-{m}-", "${m}$", "中{m}", "😀{m}", "_{m}_"]:
            add(ctx.format(m=m))
    for t in [
        # Emoji: ZWJ sequences, skin tones, variation selectors (Mn), keycaps (Me), flags, tags.
        "Emoji summary: 📈 growth, 🚀 launch, ✅ done, 👨‍👩‍👧‍👦 team, 🇫🇷🇩🇪🇯🇵 offices.",
        "👍🏽 👩🏿‍💻 🧑🏻‍🤝‍🧑🏾 ❤️ ☺️ ✌🏼 1️⃣ #️⃣ *️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏳️‍🌈 🏴‍☠️", "a❤️b", " ❤️ ", "x\u200dy", "©️®️™️",
        # Numbers of many digits, in several scripts.
        "1234567890123456789012345678901234567890", "3.14159265358979323846", "1,000,000.00 and 1 000 000",
        "٣٫١٤١٥٩", "१२३४५६७८९०", "๑๒๓๔๕", "①②③ ½ ¾ ⅓ Ⅻ", "12345abc678def", "x²+y³=z⁴", "0x1F600 0b1010 1e-9",
        # Contractions in every case.
        "It's John's book; they're here, we've gone, I'm sure, you'll see, he'd know.",
        "IT'S JOHN'S; THEY'RE; WE'VE; I'M; YOU'LL; HE'D", "It'S yOu'Ll We'Ve", "'s'S'll'LL're'RE've'VE'm'M'd'D't'T",
        "don't'", "''s", "' s", "rock'n'roll", "l'été d'août", "ſ'ſ 'ſ", "Ḿ'll",
        # CRLF runs, tabs, whitespace runs.
        "line1\r\nline2\r\n\r\nline3", "\r\n\r\n\r\n", " \r\n \r\n ", "a\r\r\n\n b", "end\r\n", "x\r\n\ty",
        "\tindented\t\ttext\t", "a \t b", "   \t\t   ", "word   \n   word", "trailing   ", "\u00a0\u00a0x\u2003y\u3000z",
        # Code, Markdown, LaTeX.
        "def f(x):\r\n\treturn x ** 2  # square\r\n",
        "for (int i = 0; i < n; ++i) {\n    s += a[i] * b[i];\n}\n",
        "const café = \"naïve\"; // commentaire accentué",
        "| Région | Qté | Prix (€) |\n|:-------|----:|---------:|\n| Île-de-France | 12 | 1 234,50 |\n| Réunion | 3 | 99,90 |\n",
        "| ภาษา | ตัวอย่าง |\n|---|---|\n| ไทย | สวัสดี |\n| العربية | مَرْحَبًا |\n",
        "## Résumé\n\n- **Élément** 1\n- _naïve_ `code`\n\n> Citation « française »\n",
        "$\\acute{e} = \\'{e}$ and $\\hat{x}_i^2$", "$$\\sum_{i=1}^{n} x_i \\cdot \\vec{v}$$",
        "\\text{café} \\; \\mathrm{d}x", "$x̂ + ẏ$",
    ]:
        add(t)
    # Random strings from pieces that stress the alternatives with marks in every position.
    rng = random.Random(20261208)
    pool = [" ", "  ", "\t", "\n", "\r", "\r\n", "a", "Z", "é", "e\u0301", "ก", "\u0e31", "\u0e48", "ب", "\u064e",
            "\u0651", "क", "\u094d", "\u093e", "中", "한", "1", "23", "٣", "\u0966", ".", ",", "!", "'", "'s",
            "'LL", "'re", "'ſ", "-", "(", ")", "\u00a0", "\u3000", "\u2028", "😀", "\u200d", "\u0301", "\u0300",
            "\u20dd", "\u20e3", "\ufe0f", "\u0897", "\U000113b8", "\U0001611e", "\u1dfa", "\u3099", "\u0345",
            "ǅ", "ß", "ﬁ", "$", "€", "<|im_end|>", "<think>"]
    for _ in range(300):
        add("".join(rng.choice(pool) for _ in range(rng.randint(1, 30))))
    # The base goldens' texts (every Qwen2 golden) and the long document in NFD.
    s.extend(base_goldens.build_strings())
    add(nfd(base_goldens.LONG_DOC))
    seen, out = set(), []
    for t in s:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def write_model_dir(path, tokenizer_json):
    """A Qwen3.5 checkpoint's tokenizer files as the hub has them: Qwen2's regex in tokenizer.json
    and a tokenizer_class transformers overrides for model_type qwen3_5."""
    with open(os.path.join(path, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tokenizer_json)
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "Qwen2Tokenizer", "model_max_length": 262144}, f)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"]}, f)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "tokenizer"))
    args = ap.parse_args()
    print(f"tokenizers {tokenizers.__version__}, transformers {transformers.__version__}", file=sys.stderr)

    with gzip.open(os.path.join(args.out, "qwen2_tokenizer.json.gz"), "rt", encoding="utf-8") as f:
        qwen2_text = f.read()
    qwen2_json = json.loads(qwen2_text)
    assert qwen2_json["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] == QWEN2_PATTERN
    qwen2 = Tokenizer.from_str(qwen2_text)

    with tempfile.TemporaryDirectory() as d:
        write_model_dir(d, qwen2_text)
        tok = AutoTokenizer.from_pretrained(d)
    assert type(tok).__name__ == "Qwen3_5Tokenizer", type(tok)
    backend = json.loads(tok.backend_tokenizer.to_str())
    split = backend["pre_tokenizer"]["pretokenizers"][0]
    assert split["type"] == "Split" and split["pattern"]["Regex"] == QWEN35_PATTERN, split
    assert split["behavior"] == "Isolated" and not split["invert"]
    bl = backend["pre_tokenizer"]["pretokenizers"][1]
    assert bl["type"] == "ByteLevel" and not bl["add_prefix_space"] and not bl["use_regex"], bl
    assert backend["normalizer"] == {"type": "NFC"}, backend["normalizer"]
    assert backend["decoder"]["type"] == "ByteLevel", backend["decoder"]
    assert backend["model"]["vocab"] == qwen2_json["model"]["vocab"]
    assert len(backend["model"]["merges"]) == len(qwen2_json["model"]["merges"])
    # The BPE options match too, so qwen2_tokenizer.json with the patch below is, apart from the
    # post-processor, what save_pretrained would write for this tokenizer.
    def bpe_options(model):
        return {k: v for k, v in model.items() if k not in ("vocab", "merges")}
    assert bpe_options(backend["model"]) == bpe_options(qwen2_json["model"]), bpe_options(backend["model"])
    assert [t["content"] for t in backend["added_tokens"]] == [t["content"] for t in qwen2_json["added_tokens"]]
    assert tok.encode("<|im_start|>user\n<|image_pad|><|im_end|>", add_special_tokens=False) == [
        151644, 872, 198, 151655, 151645]

    # tokenizer.json with the Qwen3.5 pipeline written into it: must read as the same tokenizer.
    patch = {k: backend[k] for k in ("normalizer", "pre_tokenizer", "decoder")}
    literal = Tokenizer.from_str(json.dumps({**qwen2_json, **patch}))
    q35_split = pre_tokenizers.Split(Regex(QWEN35_PATTERN), behavior="isolated", invert=False)
    q2_split = pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False)

    rows, n_differ, n_pieces_differ = [], 0, 0
    for text in qwen35_strings():
        ids = tok.encode(text, add_special_tokens=False)
        assert literal.encode(text, add_special_tokens=False).ids == ids, text
        qwen2_ids = qwen2.encode(text, add_special_tokens=False).ids
        n_differ += qwen2_ids != ids
        row = {"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
               "qwen2_ids": qwen2_ids, "pieces": [p for p, _ in q35_split.pre_tokenize_str(text)]}
        qwen2_pieces = [p for p, _ in q2_split.pre_tokenize_str(text)]
        if qwen2_pieces != row["pieces"]:
            row["qwen2_pieces"] = qwen2_pieces
            n_pieces_differ += 1
        rows.append(row)
    base_goldens.write_jsonl(os.path.join(args.out, "qwen35_encode_goldens.jsonl.gz"), rows, compress=True)
    with open(os.path.join(args.out, "qwen35_tokenizer_patch.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers": tokenizers.__version__, "transformers": transformers.__version__,
                   "tokenizer_class": type(tok).__name__, "patch": patch}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(rows)} texts; the Qwen2 regex splits {n_pieces_differ} of them differently and gives other ids "
          f"for {n_differ}", file=sys.stderr)


if __name__ == "__main__":
    main()
