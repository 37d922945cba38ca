#!/usr/bin/env bash
# Builds locr with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ (CPU only,
# RelWithDebInfo at -O1, ccache when installed) and runs the unit (incl. the fuzz regression
# replays), golden and server tiers with CTest. Any ASan/UBSan report, and any leak at exit of any
# instrumented process (test runners and the `locr serve` children of the server tier), fails the
# run: reports go to build-asan/sanitizer-logs/, which must stay empty.
#   scripts/test-sanitize.sh            # address,undefined (default)
#   LOCR_SANITIZE=thread scripts/test-sanitize.sh   # TSan into build-tsan/ (engine/server threads)
# Extra arguments go to ctest (e.g. -R Image).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys relative to the repo root, so every clone of it shares one cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
SAN="${LOCR_SANITIZE:-address,undefined}"
case "$SAN" in
  thread) BUILD=build-tsan ;;
  *) BUILD=build-asan ;;
esac
JOBS="$(nproc)"
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
  -DLOCR_CUDA=OFF -DLOCR_BUILD_BENCH=OFF "-DLOCR_SANITIZE=$SAN" "${LAUNCHER[@]}" >/dev/null
# What the unit, golden and server tiers run (not the tools tier or the benchmarks).
cmake --build "$BUILD" -j "$JOBS" --target locr locr_unit_tests locr_server_unit_tests locr_golden_tests locr_fuzz_replays
built=$(date +%s)

LOGS="$PWD/$BUILD/sanitizer-logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"
# halt/abort on the first error; leaks are checked at every exit; reports also land in $LOGS.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:log_path=$LOGS/asan"
# System libraries' process-lifetime allocations (fontconfig's cache, via Poppler) are not ours.
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
# Tests that bound RSS skip that bound under a sanitizer (its allocator holds freed memory).
export LOCR_SANITIZER="$SAN"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$LOGS/tsan"
status=0
# The browser tests (server.test_ui::*, server.test_cors_browser::*) are left out: they test the
# page's script and Chromium's CORS checks; the server paths they drive (/v1/ocr with progress and
# page images, CORS preflights) run here through test_ocr and test_dropin.
ctest --test-dir "$BUILD" -L 'unit|golden|server' -E '^server[.](test_ui|test_cors_browser)::' --output-on-failure -j "$JOBS" "$@" || status=$?
end=$(date +%s)

if compgen -G "$LOGS/*" >/dev/null; then
  echo "== sanitizer reports ($LOGS):" >&2
  for f in "$LOGS"/*; do
    echo "---- $f" >&2
    head -c 20000 "$f" >&2
  done
  status=1
fi
echo "test-sanitize ($SAN): build $((built - start)) s, tests $((end - built)) s, status $status"
exit "$status"
