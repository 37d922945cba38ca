#!/usr/bin/env bash
# run.sh [--cpu-only]: the GPU check of a locr device bundle (scripts/device-bundle.sh; docs/gpu.md),
# run as `bash run.sh` from the bundle folder. Stages, each with its own time limit, the whole under
# 9 minutes on one H200:
#   1 environment   nvidia-smi, driver and CUDA versions, where each library was found
#   2 cuda_tests    locr_cuda_tests, locr_cuda_model_tests, and the op table's cuda cases of
#                   locr_unit_tests (every op against the scalar oracle)
#   3 parity        `locr parity --backend cuda` on the bundled transformers fixtures
#   4 eval          `locr make-model --preset lightonocr-2-1b`, `locr eval --candidate cuda` on it
#   5 throughput    `locr serve --device cuda` with the seeds' flags, `locr bench` with A4 pages,
#                   600 tokens each, at 1, 32 and 128 pages in flight
# Results go to $OUT when set, else ./results: report.json and report.md rewritten as each stage
# ends (a run cut off still leaves what finished), and one log per stage; 7 files at most.
# --cpu-only runs the same stages on the CPU backend with small sizes (tiny models, few pages, few
# tokens); the CUDA stages then say `skipped: no GPU`. Only bash and coreutils are needed.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODE=gpu
for arg in "$@"; do
  case "$arg" in
    --cpu-only) MODE=cpu ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (usage: bash run.sh [--cpu-only])" >&2; exit 2 ;;
  esac
done
RES="${OUT:-$HERE/results}"
mkdir -p "$RES" || { echo "run.sh: cannot create $RES" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/locr-run.XXXXXX")"
SERVER_PID=""
SAMPLER_PID=""
stop_server() {  # SIGTERM (the server drains), SIGKILL after 15 s
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null
  for ((i = 0; i < 30; i++)); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}
cleanup() {
  [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
  stop_server
  rm -rf "$WORK"
}
trap cleanup EXIT
T_START=$(date +%s)
LOCR="$HERE/bin/locr"
STAGES=(environment cuda_tests parity eval throughput)
# Seconds each stage may take (GPU mode); the whole stays under 9 minutes.
declare -A LIMIT=([environment]=30 [cuda_tests]=130 [parity]=50 [eval]=120 [throughput]=200)
TOTAL_LIMIT=530

# ---------------------------------------------------------------- the report
json_str() {  # a JSON string literal of $1
  local s="$1" out="" c i
  s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; s="${s//$'\n'/\\n}"; s="${s//$'\t'/\\t}"; s="${s//$'\r'/\\r}"
  for ((i = 0; i < ${#s}; i++)); do
    c="${s:i:1}"
    if [[ "$c" < " " ]]; then printf -v c '\\u%04x' "'$c"; fi
    out+="$c"
  done
  printf '"%s"' "$out"
}
for s in "${STAGES[@]}"; do
  printf '{"status": "skipped", "reason": "not reached (the run ended before this stage)"}' > "$WORK/stage_$s.json"
done
# stage_result NAME STATUS SECONDS REASON [FIGURES_JSON] [FAILED_TESTS_JSON]
stage_result() {
  local name="$1" status="$2" secs="$3" reason="$4" figures="${5:-}" failed="${6:-}"
  {
    printf '{"status": %s, "seconds": %s' "$(json_str "$status")" "$secs"
    [ -n "$reason" ] && printf ', "reason": %s' "$(json_str "$reason")"
    [ -n "$figures" ] && printf ', "figures": %s' "$figures"
    [ -n "$failed" ] && printf ', "failed_tests": %s' "$failed"
    [ -f "$RES/$name.log" ] && printf ', "log": %s' "$(json_str "$name.log")"
    printf '}'
  } > "$WORK/stage_$name.json"
  printf '%s\t%s\t%s\n' "$status" "$secs" "$reason" > "$WORK/summary_$name.txt"
  write_report
  echo "run.sh: stage $name: $status (${secs} s)${reason:+: $reason}"
}
write_report() {
  {
    printf '{\n  "bundle": %s,\n  "mode": %s,\n  "started": %s,\n  "elapsed_seconds": %s,\n  "stages": {\n' \
      "$(json_str "$(cat "$HERE/BUNDLE.txt" 2>/dev/null)")" "$(json_str "$MODE")" \
      "$(json_str "$(date -u -d "@$T_START" +%Y-%m-%dT%H:%M:%SZ)")" "$(( $(date +%s) - T_START ))"
    local first=1 s
    for s in "${STAGES[@]}"; do
      [ $first = 1 ] || printf ',\n'
      first=0
      printf '    %s: %s' "$(json_str "$s")" "$(cat "$WORK/stage_$s.json")"
    done
    printf '\n  }\n}\n'
  } > "$RES/report.json.tmp" && mv "$RES/report.json.tmp" "$RES/report.json"
  {
    echo "# locr device run ($MODE)"
    echo
    sed 's/^/    /' "$HERE/BUNDLE.txt" 2>/dev/null
    echo
    echo "| stage | status | seconds | note |"
    echo "|---|---|---|---|"
    local s st secs why
    for s in "${STAGES[@]}"; do
      if [ -f "$WORK/summary_$s.txt" ]; then
        IFS=$'\t' read -r st secs why < "$WORK/summary_$s.txt"
      else
        st=skipped secs=0 why="not reached"
      fi
      echo "| $s | $st | $secs | ${why//|//} |"
    done
    [ -f "$WORK/figures.md" ] && { echo; cat "$WORK/figures.md"; }
  } > "$RES/report.md"
}
write_report

# Runs a command under a time limit, its output appended to a log; returns its status (124: timed out).
run_limited() {  # LIMIT LOG CMD...
  local limit="$1" log="$2"
  shift 2
  echo "+ $*" >> "$log"
  timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
}
left() { echo $(( TOTAL_LIMIT - ($(date +%s) - T_START) )); }
stage_limit() {  # the stage's own limit, cut to what is left of the whole
  local l="${LIMIT[$1]}" r
  r="$(left)"
  [ "$r" -lt "$l" ] && l="$r"
  echo "$l"
}

# ---------------------------------------------------------------- 1. environment
stage=environment
log="$RES/$stage.log"
t0=$(date +%s)
: > "$log"
env_fail=""
BLOCKER=""  # set when bin/locr cannot start: later stages are skipped with this reason
CUDA_BLOCKER=""  # set when the GPU path cannot run: the CUDA stages fail with this reason
{
  echo "== bundle"; cat "$HERE/BUNDLE.txt" 2>/dev/null
  echo "== host"; uname -a; (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2-) x $(nproc)"
  echo "memory: $(grep MemTotal /proc/meminfo 2>/dev/null)"
} >> "$log" 2>&1

# libstdc++: the host's when it has every symbol version the bundle was built against, else lib/compat.
need_cxx="$(sed -n 's/^glibcxx_needed: //p' "$HERE/BUNDLE.txt" 2>/dev/null)"
host_cxx="$(ldconfig -p 2>/dev/null | grep -m1 'libstdc++.so.6 ' | sed 's/.*=> //')"
cxx_from="host ($host_cxx)"
if [ -n "$need_cxx" ] && [ "$need_cxx" != none ] && { [ -z "$host_cxx" ] || ! grep -qa "$need_cxx" "$host_cxx"; }; then
  export LD_LIBRARY_PATH="$HERE/lib/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cxx_from="bundle (lib/compat: the host's ${host_cxx:-libstdc++} lacks $need_cxx)"
fi
echo "libstdc++: $cxx_from" >> "$log"

# cuBLASLt: LOCR_CUBLASLT, the loader's cache, the CUDA toolkit, or the nvidia-cublas wheel of python3.
CUBLAS_SONAME=libcublasLt.so.13
cublas="" cublas_from="" searched=""
try_cublas() {  # FILE SOURCE
  searched+=" $1"
  if [ -z "$cublas" ] && [ -f "$1" ]; then cublas="$1"; cublas_from="$2"; fi
}
[ -n "${LOCR_CUBLASLT:-}" ] && try_cublas "$LOCR_CUBLASLT" "LOCR_CUBLASLT"
for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do try_cublas "$d/$CUBLAS_SONAME" "LD_LIBRARY_PATH"; done
p="$(ldconfig -p 2>/dev/null | grep -m1 "$CUBLAS_SONAME " | sed 's/.*=> //')"
[ -n "$p" ] && try_cublas "$p" "the loader cache (ldconfig)"
searched+=" ldconfig-cache"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64; do
  try_cublas "$d/$CUBLAS_SONAME" "the CUDA toolkit"
done
if command -v python3 >/dev/null; then
  d="$(python3 -c 'import nvidia.cublas as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)"
  [ -n "$d" ] && try_cublas "$d/$CUBLAS_SONAME" "python3's nvidia-cublas wheel"
else
  searched+=" (no python3 for the nvidia-cublas wheel)"
fi
if [ -n "$cublas" ]; then
  export LOCR_CUBLASLT="$cublas"
  export LD_LIBRARY_PATH="$(dirname "$cublas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuBLASLt: $cublas (from $cublas_from)" >> "$log"
else
  echo "cuBLASLt: $CUBLAS_SONAME not found; searched:$searched" >> "$log"
fi

# Every library of the bundle's binaries must resolve (from lib/, the host's C library, or CUDA).
for b in locr locr_cuda_tests locr_cuda_model_tests locr_unit_tests; do
  [ -x "$HERE/bin/$b" ] || { env_fail+="bin/$b is missing; "; continue; }
  echo "== ldd bin/$b" >> "$log"
  ldd "$HERE/bin/$b" >> "$log" 2>&1
  missing="$(ldd "$HERE/bin/$b" 2>&1 | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | sort -u | tr '\n' ' ')"
  if [ -n "$missing" ]; then
    env_fail+="bin/$b needs ${missing% } which no library path resolves (is lib/ complete? LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-unset}); "
    [ "$b" = locr ] && BLOCKER="bin/locr cannot start: missing ${missing% }"
  fi
done
gpu_name="" driver="" cuda_ver="" gpu_mem=""
if command -v nvidia-smi >/dev/null; then
  echo "== nvidia-smi" >> "$log"
  timeout 20 nvidia-smi >> "$log" 2>&1
  IFS=',' read -r gpu_name driver gpu_mem < <(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
  cuda_ver="$(timeout 20 nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)"
fi
if [ -z "$BLOCKER" ]; then
  echo "== locr version" >> "$log"
  ver="$(timeout 60 "$LOCR" version 2>&1)"
  echo "$ver" >> "$log"
  cuda_line="$(echo "$ver" | sed -n 's/^cuda: //p')"
fi
if [ "$MODE" = gpu ]; then  # every reason the GPU path cannot run, not just the first
  why=()
  if ! command -v nvidia-smi >/dev/null; then why+=("no NVIDIA driver: nvidia-smi is not on PATH")
  elif [ -z "$gpu_name" ]; then why+=("nvidia-smi lists no GPU"); fi
  [ -z "$cublas" ] && why+=("cuBLASLt ($CUBLAS_SONAME) not found; searched:$searched. Install the CUDA 13 toolkit or 'pip install nvidia-cublas', or set LOCR_CUBLASLT=/path/to/$CUBLAS_SONAME")
  [ -n "$BLOCKER" ] && why+=("$BLOCKER")
  if [ ${#why[@]} = 0 ] && { [[ "${cuda_line:-}" != *"usable: "* ]] || [[ "${cuda_line:-}" == *"not usable"* ]]; }; then
    why+=("locr cannot use the GPU: ${cuda_line:-locr version failed}")
  fi
  for w in "${why[@]}"; do CUDA_BLOCKER+="${CUDA_BLOCKER:+; }$w"; done
  [ -n "$CUDA_BLOCKER" ] && env_fail+="$CUDA_BLOCKER; "
fi
figures="{\"gpu\": $(json_str "${gpu_name# }"), \"driver\": $(json_str "${driver# }"), \"cuda_driver_version\": $(json_str "$cuda_ver"), \"gpu_memory_total\": $(json_str "${gpu_mem# }"), \"cublaslt\": $(json_str "${cublas:-not found}"), \"cublaslt_from\": $(json_str "$cublas_from"), \"libstdcxx\": $(json_str "$cxx_from"), \"locr_cuda\": $(json_str "${cuda_line:-}"), \"cpu\": $(json_str "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"), \"cores\": $(nproc)}"
if [ -n "$env_fail" ]; then
  stage_result $stage failed $(( $(date +%s) - t0 )) "${env_fail%; }" "$figures"
else
  stage_result $stage passed $(( $(date +%s) - t0 )) "" "$figures"
fi

# A GPU stage fails at once, with the reason, when the GPU path cannot run; returns 0 then.
gpu_blocked() {  # STAGE
  [ "$MODE" = gpu ] && [ -n "$CUDA_BLOCKER" ] || return 1
  stage_result "$1" failed 0 "$CUDA_BLOCKER"
}
# Skips a stage when bin/locr cannot start or the time is spent; returns 1 then.
can_run() {  # STAGE
  if [ -n "$BLOCKER" ]; then stage_result "$1" skipped 0 "$BLOCKER"; return 1; fi
  if [ "$(left)" -lt 15 ]; then stage_result "$1" skipped 0 "the run's ${TOTAL_LIMIT} s are spent"; return 1; fi
  return 0
}

# ---------------------------------------------------------------- 2. cuda_tests
stage=cuda_tests
if [ "$MODE" = cpu ]; then
  stage_result $stage skipped 0 "no GPU (--cpu-only)"
elif [ -n "$CUDA_BLOCKER" ]; then
  stage_result $stage failed 0 "$CUDA_BLOCKER"
elif can_run $stage; then
  log="$RES/$stage.log"
  : > "$log"
  t0=$(date +%s)
  status=passed reason="" failed_json="" passed_n=0 skipped_n=0 failed_n=0
  # The op table's cuda cases (every op of the Ops interface) and the device answers of locr_unit_tests.
  UNIT_FILTER='Backends/OpTable.*/cuda:Devices.Cuda*'
  for b in locr_unit_tests locr_cuda_tests locr_cuda_model_tests; do
    lim=$(( $(stage_limit $stage) - ($(date +%s) - t0) ))
    [ "$b" = locr_unit_tests ] && [ "$lim" -gt 30 ] && lim=30
    [ "$b" = locr_cuda_tests ] && [ "$lim" -gt 60 ] && lim=60
    if [ "$lim" -lt 5 ]; then status=timed_out; reason+="$b not run: no time left; "; continue; fi
    filter=()
    [ "$b" = locr_unit_tests ] && filter=(--gtest_filter="$UNIT_FILTER")
    run_limited "$lim" "$log" "$HERE/bin/$b" --gtest_color=no "${filter[@]}"
    rc=$?
    p="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)"
    k="$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)"
    passed_n=$(( passed_n + ${p:-0} )); skipped_n=$(( skipped_n + ${k:-0} ))
    if [ $rc = 124 ] || [ $rc = 137 ]; then status=timed_out; reason+="$b timed out after ${lim} s; "; fi
    if [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ]; then
      [ "$status" = passed ] && status=failed
      reason+="$b exited $rc; "
    fi
  done
  names="$(sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_./]*\).*/\1/p' "$log" | grep -v '^[0-9]' | sort -u)"
  failed_n=$(echo -n "$names" | grep -c . || true)
  failed_json="[$(echo -n "$names" | while read -r n; do printf '%s,' "$(json_str "$n")"; done | sed 's/,$//')]"
  if [ "$skipped_n" -gt 0 ] && [ "$status" = passed ]; then
    status=failed; reason+="$skipped_n tests skipped on a GPU machine (the device was not usable to them); "
  fi
  stage_result $stage $status $(( $(date +%s) - t0 )) "${reason%; }" \
    "{\"passed\": $passed_n, \"failed\": $failed_n, \"skipped\": $skipped_n}" "$failed_json"
fi

# ---------------------------------------------------------------- 3. parity
stage=parity
if gpu_blocked $stage; then
  :
elif can_run $stage; then
  log="$RES/$stage.log"
  : > "$log"
  t0=$(date +%s)
  backend=cuda
  [ "$MODE" = cpu ] && backend=cpu-bf16
  run_limited "$(stage_limit $stage)" "$log" "$LOCR" parity --fixtures "$HERE/fixtures" --backend "$backend" \
    --reference cpu-f32 --json "$WORK/parity.json"
  rc=$?
  figs="$(cat "$WORK/parity.json" 2>/dev/null)"
  failed_cases="$(grep '^FAIL ' "$log" | sed 's/^FAIL *//' | while read -r n; do printf '%s,' "$(json_str "$n")"; done | sed 's/,$//')"
  summary="$(grep '^parity ' "$log" | tail -1)"
  case $rc in
    0) stage_result $stage passed $(( $(date +%s) - t0 )) "$summary" "$figs" ;;
    124|137) stage_result $stage timed_out $(( $(date +%s) - t0 )) "locr parity ran past $(stage_limit $stage) s" "$figs" "[$failed_cases]" ;;
    *) stage_result $stage failed $(( $(date +%s) - t0 )) "${summary:-locr parity exited $rc}" "$figs" "[$failed_cases]" ;;
  esac
fi

# ---------------------------------------------------------------- 4. eval
stage=eval
MODEL="$WORK/model"
MODEL_OK=0
if gpu_blocked $stage; then
  :
elif can_run $stage; then
  log="$RES/$stage.log"
  : > "$log"
  t0=$(date +%s)
  preset=lightonocr-2-1b candidate=cuda
  [ "$MODE" = cpu ] && preset=tiny candidate=cpu-bf16
  run_limited "$(stage_limit $stage)" "$log" "$LOCR" make-model --preset "$preset" --seed 1 --out "$MODEL" --quiet
  rc=$?
  if [ $rc != 0 ]; then
    st=failed; [ $rc = 124 ] && st=timed_out
    stage_result $stage $st $(( $(date +%s) - t0 )) "locr make-model --preset $preset exited $rc"
  else
    MODEL_OK=1
    lim=$(( $(stage_limit $stage) - ($(date +%s) - t0) ))
    run_limited "$lim" "$log" "$LOCR" eval --model "$MODEL" --candidate "$candidate" --reference cpu-f32 \
      --output "$WORK/eval.json"
    rc=$?
    figs="$(cat "$WORK/eval.json" 2>/dev/null)"
    case $rc in
      0) stage_result $stage passed $(( $(date +%s) - t0 )) "$preset: $candidate within max abs < 1.0, cosine > 0.999 of cpu-f32" "$figs" ;;
      124|137) stage_result $stage timed_out $(( $(date +%s) - t0 )) "locr eval ran past ${lim} s" "$figs" ;;
      *) stage_result $stage failed $(( $(date +%s) - t0 )) "locr eval exited $rc (thresholds max abs < 1.0, cosine > 0.999)" "$figs" ;;
    esac
  fi
fi

# ---------------------------------------------------------------- 5. throughput
http_get() {  # PORT PATH: the whole response of a GET on 127.0.0.1 (bash's /dev/tcp: no curl needed)
  local resp
  { exec 7<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$2" >&7
  resp="$(timeout 10 cat <&7)"
  exec 7<&- 7>&-
  printf '%s' "$resp"
}
busy() {  # PORT: "vision prefill decode" engine seconds from /metrics
  local m v p d
  m="$(http_get "$1" /metrics | tr -d '\r')"
  v="$(echo "$m" | sed -n 's/^locr:engine_busy_seconds_total{.*phase="vision"} \(.*\)/\1/p')"
  p="$(echo "$m" | sed -n 's/^locr:engine_busy_seconds_total{.*phase="prefill"} \(.*\)/\1/p')"
  d="$(echo "$m" | sed -n 's/^locr:engine_busy_seconds_total{.*phase="decode"} \(.*\)/\1/p')"
  echo "${v:-0} ${p:-0} ${d:-0}"
}
# A decimal difference with awk-free arithmetic: fixed-point in micro-units.
micro() { local x="$1" i f; x="${x/e*/}"; i="${x%%.*}"; f="${x#*.}"; [ "$f" = "$x" ] && f=""; f="${f}000000"; echo $(( 10#${i:-0} * 1000000 + 10#${f:0:6} )); }
fmt_micro() { printf '%d.%03d' $(( $1 / 1000000 )) $(( ($1 % 1000000) / 1000 )); }

stage=throughput
if gpu_blocked $stage; then
  :
elif [ "$MODEL_OK" != 1 ]; then
  stage_result $stage skipped 0 "${BLOCKER:-no model: the eval stage did not make one}"
elif can_run $stage; then
  log="$RES/$stage.log"
  : > "$log"
  t0=$(date +%s)
  port=$(( 20000 + RANDOM % 20000 ))
  if [ "$MODE" = gpu ]; then
    # 128 in flight runs one wave of pages, so that a slow GPU path still finishes inside its box.
    device=cuda pages=(1 32 128) requests=(3 64 128) limits=(40 60 90) size=1092x1540 tokens=600 seqs=128
  else
    device=cpu pages=(1 2 4) requests=(2 4 8) limits=(40 40 40) size=280x392 tokens=8 seqs=4
  fi
  # The seeds' `vllm serve` flags, with as many sequences as the largest phase keeps in flight.
  "$LOCR" serve "$MODEL" --device "$device" --host 127.0.0.1 --port "$port" --data-parallel-size 1 \
    --tensor-parallel-size 1 --seed 1024 --served-model-name lightonocr-2-1b --max-num-seqs "$seqs" \
    --max-model-len 8192 --max-num-batched-tokens 4096 --trust-remote-code --gpu-memory-utilization 0.85 \
    --no-enable-prefix-caching --compilation-config '{"cudagraph_mode":"FULL_DECODE_ONLY"}' >> "$log" 2>&1 &
  SERVER_PID=$!
  up=0
  for ((i = 0; i < 120; i++)); do
    if http_get "$port" /health | head -1 | grep -q ' 200 '; then up=1; break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 1
  done
  if [ $up != 1 ]; then
    stage_result $stage failed $(( $(date +%s) - t0 )) "locr serve did not come up on port $port (see throughput.log)"
  else
    # Peak device memory (GPU) or the server's peak RSS (CPU), sampled every second.
    if [ "$device" = cuda ]; then
      ( while sleep 1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; done > "$WORK/mem.txt" ) &
      SAMPLER_PID=$!
    fi
    phases="" status=passed reason=""
    echo "| pages in flight | pages/s | output tok/s | median TTFT ms | p99 TTFT ms | median TPOT ms | p99 TPOT ms | vision / prefill / decode s |" > "$WORK/figures.md"
    echo "|---|---|---|---|---|---|---|---|" >> "$WORK/figures.md"
    for k in 0 1 2; do
      c=${pages[$k]} n=${requests[$k]} lim=${limits[$k]}
      r="$(left)"
      [ "$r" -lt "$lim" ] && lim="$r"
      if [ "$lim" -lt 10 ]; then status=timed_out; reason+="$c in flight not run: no time left; "; continue; fi
      read -r v0 p0 d0 < <(busy "$port")
      run_limited "$lim" "$log" "$LOCR" bench --url "http://127.0.0.1:$port/v1/chat/completions" \
        --model lightonocr-2-1b --image-size "$size" --max-tokens "$tokens" --ignore-eos --latency-iters 0 \
        --throughput-requests "$n" --throughput-concurrency "$c" --warmup 1 --timeout "$lim" --no-progress \
        --json "$WORK/bench_$c.json"
      rc=$?
      read -r v1 p1 d1 < <(busy "$port")
      dv=$(( $(micro "$v1") - $(micro "$v0") )) dp=$(( $(micro "$p1") - $(micro "$p0") )) dd=$(( $(micro "$d1") - $(micro "$d0") ))
      split="{\"vision_s\": $(fmt_micro $dv), \"prefill_s\": $(fmt_micro $dp), \"decode_s\": $(fmt_micro $dd)}"
      if [ $rc = 124 ] || [ $rc = 137 ]; then
        status=timed_out; reason+="$c in flight: $n pages did not finish in ${lim} s; "
        phases+="${phases:+, }\"$c\": {\"status\": \"timed_out\", \"engine_seconds\": $split}"
        break  # more pages in flight will not finish either
      elif [ $rc != 0 ] || [ ! -f "$WORK/bench_$c.json" ]; then
        [ "$status" = passed ] && status=failed
        reason+="$c in flight: locr bench exited $rc; "
        phases+="${phases:+, }\"$c\": {\"status\": \"failed\", \"engine_seconds\": $split}"
      else
        bj="$(cat "$WORK/bench_$c.json")"
        phases+="${phases:+, }\"$c\": {\"status\": \"passed\", \"bench\": $bj, \"engine_seconds\": $split}"
        get() { echo "$bj" | tr -d '\n' | grep -o "\"$1\": *[-0-9.e+]*" | tail -1 | sed 's/.*: *//'; }
        f2() { printf '%.2f' "${1:-0}" 2>/dev/null || echo "${1:-?}"; }
        echo "| $c | $(f2 "$(get pages_per_second)") | $(f2 "$(get output_throughput)") | $(f2 "$(get median_ttft_ms)") | $(f2 "$(get p99_ttft_ms)") | $(f2 "$(get median_tpot_ms)") | $(f2 "$(get p99_tpot_ms)") | $(fmt_micro $dv) / $(fmt_micro $dp) / $(fmt_micro $dd) |" >> "$WORK/figures.md"
        failed_req="$(get failed)"
        if [ -n "$failed_req" ] && [ "$failed_req" != 0 ]; then
          [ "$status" = passed ] && status=failed
          reason+="$c in flight: $failed_req requests failed; "
        fi
      fi
    done
    [ -n "$SAMPLER_PID" ] && { kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null; SAMPLER_PID=""; }
    if [ "$device" = cuda ]; then
      peak="$(sort -n "$WORK/mem.txt" 2>/dev/null | tail -1)"
      mem="\"gpu_memory_used_mib_peak\": ${peak:-null}"
    else
      peak="$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SERVER_PID/status" 2>/dev/null)"
      mem="\"server_peak_rss_kib\": ${peak:-null}"
    fi
    stop_server
    stage_result $stage $status $(( $(date +%s) - t0 )) "${reason%; }" \
      "{\"device\": \"$device\", \"image_size\": \"$size\", \"output_tokens\": $tokens, $mem, \"phases\": {$phases}}"
  fi
  stop_server
fi

# ---------------------------------------------------------------- the end
write_report
bad=0
for s in "${STAGES[@]}"; do
  st="$(cut -f1 "$WORK/summary_$s.txt" 2>/dev/null)"
  case "$st" in passed) ;; skipped) [ "$MODE" = cpu ] && [ "$s" = cuda_tests ] || bad=1 ;; *) bad=1 ;; esac
done
echo "run.sh: $(( $(date +%s) - T_START )) s; report in $RES/report.json and $RES/report.md"
exit $bad
