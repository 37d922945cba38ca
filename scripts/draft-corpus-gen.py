#!/usr/bin/env python3
"""Writes the draft-sim corpus: 36 Markdown documents of six kinds (prose, tables, lists, code,
math, mixed), deterministic for a given Python version (no network, no third-party package).

Real text where it counts: the prose and list items are sentences of the Python standard library's
own docstrings (module and function documentation, plain English written by people), the code
blocks are real standard-library functions (inspect.getsource); tables hold generated records;
math is LaTeX built from a fixed set of formula templates. Only ASCII paragraphs are used, so that
pdfLaTeX renders every document. Usage: draft-corpus-gen.py OUTDIR (writes OUTDIR/NN-kind.md).
"""
import inspect
import random
import re
import sys
import textwrap

MODULES = ["argparse", "json", "textwrap", "csv", "collections", "functools", "itertools", "heapq",
           "bisect", "shutil", "tempfile", "logging", "unittest", "difflib", "string", "base64",
           "calendar", "fractions", "decimal", "statistics", "pathlib", "zipfile", "tarfile", "email",
           "http.client", "urllib.parse", "sqlite3", "threading", "queue", "subprocess", "gzip",
           "random", "datetime", "pprint", "contextlib", "dataclasses", "enum", "typing", "ipaddress"]


def load(name):
    mod = __import__(name)
    for part in name.split(".")[1:]:
        mod = getattr(mod, part)
    return mod


def docstring_paragraphs(mods):
    """ASCII prose paragraphs (>= 2 sentences, no code-ish lines) from module and function docs."""
    seen, out = set(), []
    for name in mods:
        mod = load(name)
        docs = [inspect.getdoc(mod) or ""]
        for attr in sorted(dir(mod)):
            obj = getattr(mod, attr, None)
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            docs.append(inspect.getdoc(obj) or "")
        for doc in docs:
            for para in re.split(r"\n\s*\n", doc):
                lines = para.strip().splitlines()
                if not lines or any(l.startswith((" ", ">>>", "-", "*", "=")) or ":" in l[-1:] for l in lines):
                    continue
                text = " ".join(l.strip() for l in lines)
                if not text.isascii() or len(text) < 160 or text.count(". ") < 1 or "`" in text:
                    continue
                if any(c in text for c in "\\{}$#_^%&~|<>[]"):
                    continue
                if text not in seen:
                    seen.add(text)
                    out.append(text)
    return out


def sentences(paras):
    out = []
    for p in paras:
        for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", p):
            if 40 <= len(s) <= 180 and s.endswith("."):
                out.append(s)
    return out


def code_blocks(mods):
    out = []
    for name in mods:
        mod = load(name)
        for attr in sorted(dir(mod)):
            obj = getattr(mod, attr, None)
            if attr.startswith("_") or not inspect.isfunction(obj) or getattr(obj, "__module__", "") != mod.__name__:
                continue
            try:
                src = textwrap.dedent(inspect.getsource(obj))
            except (OSError, TypeError):
                continue
            lines = src.splitlines()
            if 6 <= len(lines) <= 28 and src.isascii() and max(len(l) for l in lines) <= 78:
                out.append(src.rstrip("\n"))
    return out


WORDS = ["alpha", "beta", "gamma", "delta", "north", "south", "east", "west", "retail", "wholesale",
         "online", "export", "import", "service", "support", "hardware", "software", "training"]
NAMES = ["Anderson", "Bernard", "Cohen", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ivanova",
         "Jensen", "Kowalski", "Lambert", "Martin", "Nakamura", "Olsen", "Petit", "Quinn", "Rossi"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


def table(rng):
    kind = rng.randrange(3)
    if kind == 0:
        head = ["Name", "Department", "Start date", "Salary"]
        rows = [[rng.choice(NAMES), rng.choice(WORDS).capitalize(), f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(2001, 2024)}",
                 f"{rng.randint(30, 120)},{rng.randint(0, 999):03d}"] for _ in range(rng.randint(4, 9))]
    elif kind == 1:
        head = ["Item", "Qty", "Unit price", "Total"]
        rows = []
        for _ in range(rng.randint(4, 10)):
            q, p = rng.randint(1, 40), rng.randint(100, 9999) / 100
            rows.append([f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}", str(q), f"{p:.2f}", f"{q * p:.2f}"])
    else:
        head = ["Region", "Q1", "Q2", "Q3", "Q4"]
        rows = [[rng.choice(WORDS).capitalize()] + [str(rng.randint(100, 999)) for _ in range(4)] for _ in range(rng.randint(3, 8))]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


MATH = [r"$$E = \sum_{i=1}^{n} w_i x_i + b$$", r"$$\int_0^{\infty} e^{-x^2} \, dx = \frac{\sqrt{\pi}}{2}$$",
        r"$$f(x) = \frac{1}{\sigma \sqrt{2\pi}} e^{-\frac{(x-\mu)^2}{2\sigma^2}}$$",
        r"$$\nabla \cdot \mathbf{E} = \frac{\rho}{\varepsilon_0}$$", r"$$a^2 + b^2 = c^2$$",
        r"$$\lim_{n \to \infty} \left(1 + \frac{1}{n}\right)^n = e$$", r"$$P(A \mid B) = \frac{P(B \mid A) P(A)}{P(B)}$$",
        r"$$\det(A - \lambda I) = 0$$"]
INLINE = [r"$x^2$", r"$\alpha + \beta$", r"$O(n \log n)$", r"$n = 10$", r"$\sigma^2$", r"$p < 0.05$"]


def heading(rng, sents, level=2):
    words = rng.choice(sents).rstrip(".").split()[:rng.randint(2, 5)]
    return "#" * level + " " + " ".join(words).capitalize()


def block(kind, rng, paras, sents, codes):
    if kind == "prose":
        return rng.choice(paras)
    if kind == "table":
        return rng.choice(sents) + "\n\n" + table(rng)
    if kind == "list":
        marker = rng.choice(["-", "1."])
        items = rng.sample(sents, rng.randint(3, 7))
        if marker == "-":
            return "\n".join("- " + s for s in items)
        return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(items))
    if kind == "code":
        return rng.choice(sents) + "\n\n```python\n" + rng.choice(codes) + "\n```"
    if kind == "math":
        s = rng.choice(sents)
        return s[:-1] + ", where " + rng.choice(INLINE) + " holds:\n\n" + rng.choice(MATH)
    raise ValueError(kind)


def main():
    out = sys.argv[1]
    paras = docstring_paragraphs(MODULES)
    sents = sentences(paras)
    codes = code_blocks(MODULES)
    kinds = ["prose", "table", "list", "code", "math", "mixed"]
    n = 0
    for rep in range(6):
        for kind in kinds:
            rng = random.Random(1000 * rep + kinds.index(kind))
            parts = ["# " + heading(rng, sents)[3:]]
            for _ in range(rng.randint(4, 7)):
                if rng.random() < 0.3:
                    parts.append(heading(rng, sents))
                k = rng.choice(kinds[:5]) if kind == "mixed" else (kind if rng.random() < 0.6 else "prose")
                parts.append(block(k, rng, paras, sents, codes))
            n += 1
            with open(f"{out}/{n:02d}-{kind}.md", "w") as f:
                f.write("\n\n".join(parts) + "\n")
    print(f"{n} documents ({len(paras)} paragraphs, {len(sents)} sentences, {len(codes)} code blocks to draw from)")


if __name__ == "__main__":
    main()
