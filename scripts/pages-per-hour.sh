#!/usr/bin/env bash
# Pages per hour, locr against llama.cpp's llama-server, on the same GGUF weights (issue 31, item 5).
#
#   scripts/pages-per-hour.sh WORKDIR [--model DIR] [--pages N] [--tokens N] [--threads N]
#                             [--page-size WxH] [--fa on|off|auto] [--only locr|llama]
#                             [--serve-args "ARGS"]   (more `locr serve` flags, e.g. --no-vision-lane)
#
# One command, every step recorded in WORKDIR/commands.txt:
#   1. the model: --model DIR (a Hugging Face LightOnOCR-2 directory), else a random one of the real
#      shape (`locr make-model --preset lightonocr-2-1b`);
#   2. its GGUF files as llama.cpp's converter writes them (`locr quantize --type bf16`: text GGUF +
#      mmproj; both servers load these same two files);
#   3. llama.cpp's llama-server built from the llama-cpp-python sdist on PyPI (sha256-checked; the
#      source stays in WORKDIR, never in the repository);
#   4. `locr serve` with --max-num-seqs N and prefix caching off, driven by `locr bench`: N distinct
#      synthetic pages (default 4 A4 pages, 1092x1540), all N in flight, --tokens each (default 600,
#      ignore_eos), no warm-up; then the same against `llama-server --parallel N` (prompt cache off:
#      --no-cache-prompt --cache-ram 0; flash attention --fa, default on: its best for whole pages, as its
#      vision encoder takes 2.3x as long without it, docs/benchmarks.md, while decode gains 1.3x);
#   5. a table: pages per hour, mean and p90 page latency, mean time to first token, decode tokens per
#      second per page, and each server's own time split from its /metrics (locr: vision, prefill,
#      decode busy seconds; llama-server: prompt processing, which includes the image, and generation).
# Results: WORKDIR/{locr,llama}.bench.json, WORKDIR/{locr,llama}.metrics, WORKDIR/summary.md.
set -euo pipefail

usage() { sed -n '4,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
WORK=$(mkdir -p "$1" && cd "$1" && pwd)
shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCR=${LOCR:-$ROOT/build/bin/locr}
MODEL="" PAGES=4 TOKENS=600 THREADS="" PAGE_SIZE=1092x1540 FA=on ONLY="" SERVE_ARGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --pages) PAGES=$2; shift 2 ;;
    --tokens) TOKENS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --page-size) PAGE_SIZE=$2; shift 2 ;;
    --fa) FA=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --serve-args) SERVE_ARGS=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -x "$LOCR" ] || { echo "pages-per-hour: no $LOCR (build first: scripts/build.sh, or set LOCR)" >&2; exit 1; }
if [ -z "$THREADS" ]; then
  THREADS=$(lscpu -p=core,socket | grep -v '^#' | sort -u | wc -l)
fi
LCPP_VERSION=0.3.36
LCPP_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
CMDS=$WORK/commands.txt
: > "$CMDS"
run() {  # runs a command and records it
  echo "$*" >> "$CMDS"
  "$@"
}

# 1-2. Model and GGUF files.
if [ -z "$MODEL" ]; then
  MODEL=$WORK/model
  [ -f "$MODEL/model.safetensors" ] || run "$LOCR" make-model --preset lightonocr-2-1b --out "$MODEL"
fi
GGUF=$WORK/gguf/model-bf16.gguf
MMPROJ=$WORK/gguf/mmproj-model-bf16.gguf
mkdir -p "$WORK/gguf"
[ -f "$GGUF" ] && [ -f "$MMPROJ" ] || run "$LOCR" quantize "$MODEL" "$GGUF" --type bf16 --mmproj-out "$MMPROJ"

# 3. llama-server from the llama-cpp-python sdist.
LCPP=$WORK/llama_cpp_python-$LCPP_VERSION/vendor/llama.cpp
LLAMA_SERVER=$LCPP/build/bin/llama-server
if [ "$ONLY" != locr ] && [ ! -x "$LLAMA_SERVER" ]; then
  SDIST=$WORK/llama_cpp_python-$LCPP_VERSION.tar.gz
  if [ ! -f "$SDIST" ]; then
    URL=$(curl -fsS "https://pypi.org/simple/llama-cpp-python/" |
          grep -o "https://[^\"#]*llama_cpp_python-$LCPP_VERSION.tar.gz" | head -1)
    [ -n "$URL" ] || { echo "pages-per-hour: no sdist of llama-cpp-python $LCPP_VERSION on PyPI" >&2; exit 1; }
    run curl -fsSL -o "$SDIST" "$URL"
  fi
  echo "$LCPP_SHA256  $SDIST" | sha256sum -c --quiet
  run tar xzf "$SDIST" -C "$WORK"
  run cmake -S "$LCPP" -B "$LCPP/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  run cmake --build "$LCPP/build" --target llama-server -j "$(nproc)"
fi

# 4. The two servers, one after the other, each driven by the same locr bench command.
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT
wait_ready() {  # $1: log file
  for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$PORT/v1/models" > /dev/null 2>&1; then return 0; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "pages-per-hour: the server exited; see $1" >&2; tail -20 "$1" >&2; exit 1; }
    sleep 1
  done
  echo "pages-per-hour: the server did not come up in 10 minutes; see $1" >&2
  exit 1
}
bench() {  # $1: name
  run "$LOCR" bench --url "http://127.0.0.1:$PORT/v1/chat/completions" --image-size "$PAGE_SIZE" \
    --max-tokens "$TOKENS" --ignore-eos --latency-iters 0 --throughput-requests "$PAGES" \
    --throughput-concurrency "$PAGES" --warmup 0 --timeout 7200 --no-progress --json "$WORK/$1.bench.json" \
    | tee "$WORK/$1.bench.txt"
  curl -fsS "http://127.0.0.1:$PORT/metrics" > "$WORK/$1.metrics" || true
}
# Context per sequence: the page prompt (2,159 tokens at 1092x1540) plus the output, with room.
CTX_PER_SEQ=$(( 4096 > TOKENS + 3072 ? 4096 : TOKENS + 3072 ))

if [ "$ONLY" != llama ]; then
  echo "$LOCR serve $GGUF --mmproj $MMPROJ --port $PORT --threads $THREADS --max-num-seqs $PAGES" \
       "--no-enable-prefix-caching --max-model-len $CTX_PER_SEQ $SERVE_ARGS" >> "$CMDS"
  "$LOCR" serve "$GGUF" --mmproj "$MMPROJ" --port "$PORT" --threads "$THREADS" --max-num-seqs "$PAGES" \
    --no-enable-prefix-caching --max-model-len "$CTX_PER_SEQ" $SERVE_ARGS > "$WORK/locr.server.log" 2>&1 &
  SERVER_PID=$!
  wait_ready "$WORK/locr.server.log"
  bench locr
  stop_server
fi
if [ "$ONLY" != locr ]; then
  echo "$LLAMA_SERVER -m $GGUF --mmproj $MMPROJ --port $PORT -t $THREADS -tb $THREADS --parallel $PAGES" \
       "-c $(( CTX_PER_SEQ * PAGES )) -fa $FA --no-cache-prompt --cache-ram 0 --metrics --no-warmup" >> "$CMDS"
  "$LLAMA_SERVER" -m "$GGUF" --mmproj "$MMPROJ" --port "$PORT" -t "$THREADS" -tb "$THREADS" --parallel "$PAGES" \
    -c $(( CTX_PER_SEQ * PAGES )) -fa "$FA" --no-cache-prompt --cache-ram 0 --metrics --no-warmup > "$WORK/llama.server.log" 2>&1 &
  SERVER_PID=$!
  wait_ready "$WORK/llama.server.log"
  bench llama
  stop_server
fi

# 5. The table.
python3 - "$WORK" "$PAGES" "$TOKENS" "$THREADS" "$PAGE_SIZE" <<'EOF' | tee "$WORK/summary.md"
import json, re, subprocess, sys
from pathlib import Path
work, pages, tokens, threads, size = Path(sys.argv[1]), *sys.argv[2:]

def metric(text, name, labels=""):
    total, found = 0.0, False
    for line in text.splitlines():
        if line.startswith(name) and labels in line and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1]); found = True
    return total if found else None

cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model_name = re.search(r"Model name:\s*(.*)", cpu)
print(f"{pages} distinct {size} pages, {tokens} tokens each (ignore_eos), all in flight; {threads} threads; "
      f"CPU: {model_name.group(1) if model_name else '?'}\n")
print("| server | pages/hour | mean page latency | p90 page latency | mean TTFT | decode tok/s per page | time split (server's own) |")
print("|---|---|---|---|---|---|---|")
rows = {}
for name in ("locr", "llama"):
    f = work / f"{name}.bench.json"
    if not f.exists():
        continue
    t = json.loads(f.read_text())["throughput"]
    m = (work / f"{name}.metrics").read_text() if (work / f"{name}.metrics").exists() else ""
    if name == "locr":
        parts = [(p, metric(m, "locr:engine_busy_seconds_total", f'phase="{p}"')) for p in ("vision", "prefill", "decode")]
    else:
        parts = [("prompt incl. image", metric(m, "llamacpp:prompt_seconds_total")),
                 ("generation", metric(m, "llamacpp:tokens_predicted_seconds_total"))]
    split = ", ".join(f"{p} {v:.1f} s" for p, v in parts if v is not None) or "n/a"
    pph = t["completed"] / t["duration"] * 3600 if t["duration"] > 0 else 0
    rows[name] = pph
    tpot = t["mean_tpot_ms"]
    print(f"| {'locr serve' if name == 'locr' else 'llama-server'} | {pph:.1f} ({t['completed']} of {t['num_prompts']} "
          f"in {t['duration']:.1f} s) | {t['mean_e2el_ms'] / 1e3:.1f} s | {t['p90_e2el_ms'] / 1e3:.1f} s | "
          f"{t['mean_ttft_ms'] / 1e3:.1f} s | {1e3 / tpot if tpot > 0 else 0:.1f} | {split} |")
if "locr" in rows and "llama" in rows and rows["llama"] > 0:
    print(f"\nlocr / llama-server pages per hour: {rows['locr'] / rows['llama']:.2f}x")
EOF
echo "commands: $CMDS"
