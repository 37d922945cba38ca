#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang 14 (ASan + UBSan, -DLOCR_FUZZ=ON) into
# build-fuzz/ and runs each for a bounded time from a fresh copy of its seeds (the committed
# tests/fuzz/corpus/<target>/ and the test fixtures listed in tests/fuzz/CMakeLists.txt).
#   scripts/fuzz.sh [SECONDS] [TARGET...]    # default 60 s per target, every target
# FUZZ_JOBS targets run at once (default: nproc). A crash, leak, timeout or out-of-memory fails
# the run; the input is left in build-fuzz/runs/<target>/ (crash-*, leak-*, timeout-*, oom-*).
# Fix the code, then keep the input as a regression test: copy it to
# tests/fuzz/regressions/<target>/ (the normal build's CTest fuzz.<target>.replay runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys relative to the repo root, so every clone of it shares one cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
SECS="${1:-60}"
shift || true
WANT=("$@")
JOBS="${FUZZ_JOBS:-$(nproc)}"
CXX_BIN="$(command -v clang++-14 || command -v clang++ || true)"
C_BIN="$(command -v clang-14 || command -v clang || true)"
if [ -z "$CXX_BIN" ] || [ -z "$C_BIN" ]; then
  echo "fuzz.sh needs clang 14 (clang-14, libclang-rt-14-dev; scripts/install-deps.sh installs them)" >&2
  exit 1
fi
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
start=$(date +%s)
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
  "-DCMAKE_C_COMPILER=$C_BIN" "-DCMAKE_CXX_COMPILER=$CXX_BIN" -DLOCR_CUDA=OFF -DLOCR_FUZZ=ON \
  -DLOCR_BUILD_TESTS=OFF -DLOCR_BUILD_BENCH=OFF "${LAUNCHER[@]}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target locr_fuzz_all
built=$(date +%s)

RUNS="$PWD/build-fuzz/runs"
rm -rf "$RUNS"
mkdir -p "$RUNS"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

run_target() {  # name binary seeds(comma-separated files and dirs)
  local name="$1" bin="$2" seeds="$3" dir="$RUNS/$1"
  mkdir -p "$dir/corpus"
  local dirs=() files=() s
  IFS=, read -ra all <<< "$seeds"
  for s in "${all[@]}"; do
    if [ -d "$s" ]; then dirs+=("$s"); elif [ -f "$s" ]; then files+=("$s"); fi
  done
  local seed_files=()
  if [ ${#files[@]} -gt 0 ]; then seed_files=("-seed_inputs=$(IFS=,; echo "${files[*]}")"); fi
  # The fresh corpus dir comes first: new inputs are written there, the seeds are only read.
  (cd "$dir" && "$bin" -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=20 \
     -print_final_stats=1 -print_funcs=0 -artifact_prefix="$dir/" "${seed_files[@]}" "$dir/corpus" "${dirs[@]}") \
     >"$dir/log" 2>&1
}

declare -A PIDS=()
failed=()
reap() {  # waits for one job, records its outcome
  local pid name rc=0
  wait -n -p pid || rc=$?
  for name in "${!PIDS[@]}"; do
    if [ "${PIDS[$name]}" = "$pid" ]; then
      unset "PIDS[$name]"
      local execs
      execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$RUNS/$name/log" | grep -Eo '[0-9]+$' || echo '?')
      if [ "$rc" = 0 ]; then
        echo "fuzz $name: ok ($execs runs)"
      else
        echo "fuzz $name: FAILED (exit $rc); log $RUNS/$name/log; inputs: $(ls "$RUNS/$name" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | tr '\n' ' ')"
        tail -n 60 "$RUNS/$name/log"
        failed+=("$name")
      fi
      return
    fi
  done
}
while IFS=$'\t' read -r name bin seeds; do
  [ -n "$name" ] || continue
  if [ ${#WANT[@]} -gt 0 ] && [[ ! " ${WANT[*]} " =~ " $name " ]]; then continue; fi
  while [ ${#PIDS[@]} -ge "$JOBS" ]; do reap; done
  run_target "$name" "$bin" "$seeds" &
  PIDS[$name]=$!
done < build-fuzz/fuzz_targets.tsv
while [ ${#PIDS[@]} -gt 0 ]; do reap; done
end=$(date +%s)
echo "fuzz.sh: build $((built - start)) s, fuzzing $((end - built)) s ($SECS s per target, $JOBS at once)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
