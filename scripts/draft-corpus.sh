#!/usr/bin/env bash
# The drafter measurement of docs/benchmarks.md ("Drafters: draft-sim on a born-digital corpus"):
# writes 36 Markdown documents (scripts/draft-corpus-gen.py: prose, tables, lists, code, math, mixed),
# makes each a born-digital PDF with pandoc + pdfLaTeX, runs `locr draft-sim` on every document with
# the Markdown as the target (K=8), in four configurations, and prints a summary.
#
#   bash scripts/draft-corpus.sh OUTDIR
#
# Needs (Debian; not installed by install-deps.sh): pandoc texlive-latex-recommended
# texlive-fonts-recommended lmodern. LOCR (default build/bin/locr, else build-cpu/bin/locr) and
# MODEL: the model whose tokenizer drafts (default: a directory holding the real Qwen vocabulary of
# LightOnOCR-2, tests/fixtures/tokenizer/qwen2_tokenizer.json.gz unpacked). K (default 8).
set -euo pipefail
out=${1:?usage: draft-corpus.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
k=${K:-8}
locr=${LOCR:-}
if [[ -z $locr ]]; then
  for c in "$root/build/bin/locr" "$root/build-cpu/bin/locr"; do [[ -x $c ]] && { locr=$c; break; }; done
fi
[[ -x ${locr:-} ]] || { echo "draft-corpus: no locr binary (set LOCR=...)" >&2; exit 1; }
for t in pandoc pdflatex python3; do
  command -v "$t" >/dev/null || { echo "draft-corpus: $t not found (apt-get install pandoc texlive-latex-recommended texlive-fonts-recommended lmodern)" >&2; exit 1; }
done
mkdir -p "$out/md" "$out/pdf" "$out/json"
model=${MODEL:-}
if [[ -z $model ]]; then
  model=$out/qwen-tokenizer
  mkdir -p "$model"
  [[ -s $model/tokenizer.json ]] || gzip -dc "$root/tests/fixtures/tokenizer/qwen2_tokenizer.json.gz" > "$model/tokenizer.json"
fi

python3 "$root/scripts/draft-corpus-gen.py" "$out/md"
for md in "$out"/md/*.md; do
  name=$(basename "$md" .md)
  pdf=$out/pdf/$name.pdf
  [[ -s $pdf && $pdf -nt $md ]] && continue
  pandoc "$md" -o "$pdf" --pdf-engine=pdflatex -V geometry:margin=1in -V fontsize=11pt
done

# A page without a text layer (as a scan): the text-layer drafter then has only the output to look
# up, and its misses are what back-off must keep cheap.
[[ -s $out/pdf/no-text.pdf ]] || PYTHONPATH=$root/tests/common python3 -c \
  "import sys, minimal_pdf; sys.stdout.buffer.write(minimal_pdf.make_pdf(1))" > "$out/pdf/no-text.pdf"

# name: extra draft-sim flags (PDF: the document's, unless the flags name one)
configs=(
  "text-layer: "
  "text-layer-raw: --raw-text --no-output-lookup"
  "text-layer-no-output: --no-output-lookup"
  "ngram: --method ngram --prompt-lookup-max 5 --prompt-lookup-min 2"
  "no-text-layer: --pdf $out/pdf/no-text.pdf"
  "no-text-layer-no-backoff: --pdf $out/pdf/no-text.pdf --no-backoff"
)
for cfg in "${configs[@]}"; do
  cname=${cfg%%:*}
  flags=${cfg#*:}
  mkdir -p "$out/json/$cname"
  for md in "$out"/md/*.md; do
    name=$(basename "$md" .md)
    # shellcheck disable=SC2086
    pdf=$out/pdf/$name.pdf
    [[ $flags == *--pdf* ]] && pdf=
    "$locr" draft-sim --model "$model" ${pdf:+--pdf "$pdf"} --target "$md" --k "$k" $flags \
      --json "$out/json/$cname/$name.json" > /dev/null
  done
done

python3 - "$out/json" "${configs[@]%%:*}" <<'PY'
import glob, json, os, sys
root, names = sys.argv[1], sys.argv[2:]
def agg(files):
    t = dict(steps=0, target_tokens=0, drafted=0, accepted=0, zero_accept_steps=0, draft_steps=0)
    for f in files:
        tot = json.load(open(f))["total"]
        for key in t:
            t[key] += tot[key]
    return t
# c: a verified draft token's cost relative to a one-token decode step, as measured by `locr perf
# --spec-replay` on a 2-core CPU: 0.20 at batch 1, 0.48 at batch 8 (docs/benchmarks.md).
def row(label, t):
    rate = t["accepted"] / t["drafted"] if t["drafted"] else 0
    tps = t["target_tokens"] / t["steps"]
    spd = lambda c: t["target_tokens"] / (t["steps"] + c * t["drafted"])
    print(f"| {label} | {t['target_tokens']} | {t['steps']} | {t['drafted']} | {t['accepted']} | {100 * rate:.1f}% "
          f"| {t['accepted'] / t['steps']:.2f} | {tps:.2f} | {t['zero_accept_steps']} | {spd(0.20):.2f}x | {spd(0.48):.2f}x |")
print("| config | target tokens | steps | drafted | accepted | acceptance | accepted/step | tokens/step | zero-accept steps | speedup, c=0.20 | c=0.48 |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n in names:
    row(n, agg(sorted(glob.glob(os.path.join(root, n, "*.json")))))
print()
print("text-layer by kind:")
print("| kind | docs | target tokens | acceptance | tokens/step |")
print("|---|---|---|---|---|")
for kind in ["prose", "table", "list", "code", "math", "mixed"]:
    files = sorted(glob.glob(os.path.join(root, names[0], f"*-{kind}.json")))
    t = agg(files)
    print(f"| {kind} | {len(files)} | {t['target_tokens']} | {100 * t['accepted'] / max(1, t['drafted']):.1f}% | {t['target_tokens'] / t['steps']:.2f} |")
PY
