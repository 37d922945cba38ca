#!/usr/bin/env bash
# Proves the GPU device bundle self-contained (docs/gpu.md): makes it from the CUDA build in build/
# (the one scripts/test.sh just built; nothing is built twice), copies it into a clean Debian
# bookworm root made by `debootstrap --variant=minbase` (none of our build dependencies, no CUDA,
# no python3; cached in $LOCR_CHROOT_CACHE, default /var/cache/locr/bookworm-minbase), and there:
#   1. `bash run.sh --cpu-only` completes (under 5 minutes), its report.json says the CUDA stage
#      `skipped` and every other stage `passed`;
#   2. with a library of lib/ removed, run.sh fails its environment stage naming that library;
#   3. without --cpu-only (no driver, no cuBLAS in that root) run.sh fails naming both.
# Needs root (chroot, mount) and Debian's mirror for the first debootstrap. Exit status 0 = all held.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${LOCR_CHROOT_CACHE:-/var/cache/locr/bookworm-minbase}"
MIRROR="${LOCR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" = 0 ] || { echo "test-device-bundle: needs root (chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "test-device-bundle: debootstrap is missing (scripts/install-deps.sh)" >&2; exit 1; }

if [ ! -f "$CACHE/.locr-complete" ]; then
  echo "test-device-bundle: debootstrap --variant=minbase bookworm into $CACHE (once; cached)"
  rm -rf "$CACHE.tmp"
  mkdir -p "$(dirname "$CACHE")"
  debootstrap --variant=minbase bookworm "$CACHE.tmp" "$MIRROR" > "$(dirname "$CACHE")/debootstrap.log" 2>&1 ||
    { tail -20 "$(dirname "$CACHE")/debootstrap.log" >&2; exit 1; }
  touch "$CACHE.tmp/.locr-complete"
  rm -rf "$CACHE"
  mv "$CACHE.tmp" "$CACHE"
fi

WORK="$(mktemp -d /tmp/locr-bundle-test.XXXXXX)"
CHROOT="$WORK/root"
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

bash "$ROOT/scripts/device-bundle.sh" "$WORK/bundle"
cp -a "$CACHE" "$CHROOT"
# The root must lack what the bundle claims to carry: no CUDA, no Python, none of our libraries.
for lib in libpoppler-cpp.so.0 libpng16.so.16 libcublasLt.so.13; do
  if chroot "$CHROOT" /sbin/ldconfig -p | grep -q "$lib"; then
    echo "test-device-bundle: the clean root already has $lib: not a proof" >&2
    exit 1
  fi
done
[ ! -e "$CHROOT/usr/bin/python3" ] || { echo "test-device-bundle: the clean root has python3" >&2; exit 1; }
mount -t proc proc "$CHROOT/proc" && mounted+=("$CHROOT/proc")
mount -t tmpfs tmpfs "$CHROOT/tmp" && mounted+=("$CHROOT/tmp")
mount --bind /dev "$CHROOT/dev" && mounted+=("$CHROOT/dev")

# Reads a report: "STAGE STATUS" lines, with the host's python3 (the root has none).
stages() {
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for name, s in r["stages"].items():
    print(name, s["status"], s.get("reason", ""))
EOF
}
# Runs the bundle's run.sh in the clean root with an empty environment (OUT=/opt/out, emptied first);
# its output goes to $WORK/NAME.out and is shown; sets rc and st (the report's "STAGE STATUS" lines).
run_in_root() {  # NAME [run.sh arguments]
  local name="$1"
  shift
  rm -rf "$CHROOT/opt/out"
  set +e
  chroot "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root OUT=/opt/out \
    /bin/bash /opt/bundle/run.sh "$@" > "$WORK/$name.out" 2>&1
  rc=$?
  set -e
  cat "$WORK/$name.out"
  st="$(stages "$CHROOT/opt/out/report.json" 2>/dev/null || true)"
}
fails=0 passes=0
check() {  # DESCRIPTION CONDITION...
  local what="$1"
  shift
  if "$@"; then echo "ok:   $what"; passes=$((passes + 1)); else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}

# 1. The CPU-only run, as it will run on the GPU machine but with small sizes, from the packed bundle
# (what travels).
tar -C "$CHROOT/opt" -xJf "$WORK/bundle.tar.xz"
start=$(date +%s)
run_in_root cpu-only --cpu-only
secs=$(( $(date +%s) - start ))
echo "test-device-bundle: run.sh --cpu-only exited $rc after $secs s"
report="$CHROOT/opt/out/report.json"
check "run.sh --cpu-only exits 0" test "$rc" = 0
check "run.sh --cpu-only finishes in under 5 minutes ($secs s)" test "$secs" -lt 300
check "report.json is valid JSON" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$report"
echo "$st"
check "the CUDA stage is skipped: no GPU" grep -q '^cuda_tests skipped no GPU' <<< "$st"
for s in environment parity eval throughput; do
  check "stage $s passed" grep -q "^$s passed" <<< "$st"
done
check "at most 8 result files" test "$(ls "$CHROOT/opt/out" | wc -l)" -le 8
check "report.md names every stage" test "$(grep -c '^| \(environment\|cuda_tests\|parity\|eval\|throughput\) |' "$CHROOT/opt/out/report.md")" = 5
check "the throughput stage measured pages/s" python3 -c "
import json,sys
t = json.load(open(sys.argv[1]))['stages']['throughput']['figures']['phases']
assert all(p['bench']['throughput']['pages_per_second'] > 0 for p in t.values()), t" "$report"

# 2. A library of lib/ gone: the environment stage names it and nothing runs on a broken binary.
gone="$(cd "$CHROOT/opt/bundle/lib" && ls | grep -m1 '^libpoppler-cpp')"
mv "$CHROOT/opt/bundle/lib/$gone" "$WORK/"
run_in_root broken --cpu-only
check "a missing $gone fails the run" test "$rc" != 0
check "the environment stage names $gone" grep -q "^environment failed .*$gone" <<< "$st"
check "the later stages say bin/locr cannot start" grep -q "^parity skipped bin/locr cannot start: missing .*$gone" <<< "$st"
mv "$WORK/$gone" "$CHROOT/opt/bundle/lib/"

# 3. The GPU run where there is no driver and no cuBLAS: it says what is missing.
run_in_root gpu
check "a GPU run without a driver or cuBLAS fails" test "$rc" != 0
check "it says the driver is missing" grep -q "^environment failed .*no NVIDIA driver: nvidia-smi is not on PATH" <<< "$st"
check "the CUDA stages fail with that reason" grep -q "^cuda_tests failed no NVIDIA driver" <<< "$st"
check "it also names libcublasLt.so.13 and where it looked" \
  grep -q "^environment failed .*cuBLASLt (libcublasLt.so.13) not found; searched:.*/usr/local/cuda/lib64" <<< "$st"

size_mib=$(( $(du -sk "$WORK/bundle" | cut -f1) / 1024 ))
check "the bundle is at most 60 MiB ($size_mib MiB)" test "$size_mib" -le 60
# What travels to the GPU machine: the checkout (tracked files) and the packed bundle, 64 MiB in all.
tree_kib=$(( $(cd "$ROOT" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) / 1024 ))
packed_kib=$(( $(stat -c %s "$WORK/bundle.tar.xz") / 1024 ))
check "checkout + packed bundle fit the 64 MiB a device run carries ($(( (tree_kib + packed_kib) / 1024 )) MiB)" \
  test $(( tree_kib + packed_kib )) -le $(( 64 * 1024 ))
echo "test-device-bundle: $passes checks passed, $fails failed"
[ "$fails" = 0 ]
