#!/usr/bin/env bash
# scripts/device-bundle.sh OUTDIR: a self-contained folder that proves and measures the CUDA path on
# a GPU machine that has a driver and cuBLAS but none of our Debian libraries (docs/gpu.md):
#   bin/       locr, locr_cuda_tests, locr_cuda_model_tests, locr_unit_tests (the op table's cuda
#              cases live there) (stripped, RUNPATH $ORIGIN/../lib)
#   lib/       every shared library they need that is not glibc's, the NVIDIA driver's or CUDA's
#              (RUNPATH $ORIGIN); lib/compat/ holds libstdc++/libgcc_s, used only where the host's
#              are older than the build's
#   fixtures/  the transformers fixture models the GPU takes (head sizes 64/128) and their images
#   run.sh     the stages (scripts/device/run.sh)
#   BUNDLE.txt what was built from where
# and OUTDIR.tar.xz, the same folder packed (about 14 MiB): what travels to the GPU machine, whose
# transfer (64 MiB) also carries the whole checkout.
# It reuses a CUDA Release build in build/ (the one scripts/build.sh and CI make) when there is one,
# building only the three targets; otherwise it configures one (LOCR_CUDA_ARCHS=90: sm_90 machine
# code and compute_90 PTX). LOCR_BUNDLE_BUILD=DIR picks another build folder, LOCR_BUNDLE_FIXTURES=DIR
# another fixtures folder (default tests/fixtures).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -ne 1 ] || [ "${1:0:1}" = "-" ]; then
  echo "usage: scripts/device-bundle.sh OUTDIR" >&2
  exit 2
fi
OUTDIR="$1"
BUILD="${LOCR_BUNDLE_BUILD:-$ROOT/build}"
MAX_MIB=60
# The fixture models the CUDA kernels take (attention head sizes 64 and 128).
FIXTURE_MODELS=(tiny_e)
FIXTURES="${LOCR_BUNDLE_FIXTURES:-$ROOT/tests/fixtures}"

need() { command -v "$1" >/dev/null || { echo "device-bundle: '$1' is missing (bash scripts/install-deps.sh installs it)" >&2; exit 1; }; }
need patchelf
need strip
need ldd
need xz

cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt" 2>/dev/null | head -1; }
if [ "$(cache_get LOCR_CUDA)" != "ON" ] || [ "$(cache_get CMAKE_BUILD_TYPE)" != "Release" ]; then
  if [ "$BUILD" != "$ROOT/build" ]; then
    echo "device-bundle: $BUILD is not a CUDA Release build (LOCR_CUDA=ON, CMAKE_BUILD_TYPE=Release)" >&2
    exit 1
  fi
  echo "device-bundle: configuring a CUDA Release build in $BUILD"
  LOCR_CUDA=ON bash "$ROOT/scripts/build.sh" -DLOCR_CUDA_ARCHS=90
fi
archs="$(cache_get LOCR_CUDA_ARCHS)"
case ";$archs;" in
  *";90;"*|*";90-real;"*) ;;
  *) echo "device-bundle: $BUILD is built for CUDA architectures '$archs'; the bundle needs 90 (sm_90 + compute_90 PTX):" \
          "reconfigure with -DLOCR_CUDA_ARCHS=90" >&2; exit 1 ;;
esac
cmake --build "$BUILD" --target locr locr_cuda_tests locr_cuda_model_tests locr_unit_tests -j "$(nproc)"

rm -rf "$OUTDIR"
mkdir -p "$OUTDIR/bin" "$OUTDIR/lib/compat" "$OUTDIR/fixtures/models" "$OUTDIR/fixtures/images"
BINS=(locr locr_cuda_tests locr_cuda_model_tests locr_unit_tests)
for b in "${BINS[@]}"; do
  install -m 755 "$BUILD/bin/$b" "$OUTDIR/bin/$b"
  strip --strip-unneeded "$OUTDIR/bin/$b"
  patchelf --set-rpath '$ORIGIN/../lib' "$OUTDIR/bin/$b"
done

# Which libraries travel: everything ldd resolves except the C library's own, the dynamic loader,
# and the driver's and CUDA's (found on the GPU machine); libstdc++/libgcc_s go to lib/compat.
is_system_lib() {
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*|libmvec.so.*) return 0 ;;
    libcuda.so*|libnvidia-*|libcudart.so*|libcublas*.so*|libnvJitLink*|libnvrtc*) return 0 ;;
  esac
  return 1
}
declare -A seen=()
for b in "${BINS[@]}"; do
  while read -r name _ path _; do
    [ -n "${path:-}" ] && [ "${path:0:1}" = "/" ] || continue
    is_system_lib "$name" && continue
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=1
    case "$name" in
      libstdc++.so.*|libgcc_s.so.*) dest="$OUTDIR/lib/compat/$name" ;;
      *) dest="$OUTDIR/lib/$name" ;;
    esac
    cp -L "$path" "$dest"
    chmod 644 "$dest"
    strip --strip-unneeded "$dest" 2>/dev/null || true
    patchelf --set-rpath '$ORIGIN' "$dest"
  done < <(ldd "$BUILD/bin/$b" | sed 's/^\t//')
done

# The newest GLIBCXX / GCC symbol versions the binaries and libraries ask for: run.sh compares them
# with the host's libstdc++ before choosing lib/compat.
need_glibcxx="$(cat "$OUTDIR"/bin/* "$OUTDIR"/lib/*.so* 2>/dev/null | grep -aoE 'GLIBCXX_3\.4\.[0-9]+' | sort -t. -k3,3n -u | tail -1)"

for m in "${FIXTURE_MODELS[@]}"; do
  src="$FIXTURES/models/$m"
  [ -d "$src/cases" ] || { echo "device-bundle: fixture model $src is missing" >&2; exit 1; }
  cp -r "$src" "$OUTDIR/fixtures/models/$m"
  # The images its cases read ("tests/fixtures/images/x.png" in the case files).
  grep -ho '"tests/fixtures/images/[^"]*"' "$src"/cases/*.json | tr -d '"' | sort -u | while read -r img; do
    cp "$FIXTURES/${img#tests/fixtures/}" "$OUTDIR/fixtures/images/"
  done
done

install -m 755 "$ROOT/scripts/device/run.sh" "$OUTDIR/run.sh"
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -qv '^??' && echo ' (with uncommitted changes)' || true)"
{
  echo "locr device bundle"
  echo "commit: $commit$dirty"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(g++ --version | head -1)"
  echo "cuda_toolkit: $("$(cache_get CMAKE_CUDA_COMPILER)" --version | tail -2 | head -1)"
  echo "cuda_archs: $archs"
  echo "glibcxx_needed: ${need_glibcxx:-none}"
  echo "fixtures: ${FIXTURE_MODELS[*]}"
} > "$OUTDIR/BUNDLE.txt"

size_kib="$(du -sk "$OUTDIR" | cut -f1)"
rm -f "$OUTDIR.tar.xz"
tar -C "$(dirname "$OUTDIR")" -cf - "$(basename "$OUTDIR")" | xz -T0 -6 > "$OUTDIR.tar.xz"
echo "device-bundle: wrote $OUTDIR ($((size_kib / 1024)) MiB): $(ls "$OUTDIR/lib" | grep -c '\.so') libraries, fixtures ${FIXTURE_MODELS[*]};" \
  "packed: $OUTDIR.tar.xz ($(( $(stat -c %s "$OUTDIR.tar.xz") / 1048576 )) MiB)"
if [ "$size_kib" -gt $((MAX_MIB * 1024)) ]; then
  echo "device-bundle: $OUTDIR is $((size_kib / 1024)) MiB, over the ${MAX_MIB} MiB a device run carries" >&2
  du -sk "$OUTDIR"/bin/* "$OUTDIR"/lib/* | sort -n | tail -5 >&2
  exit 1
fi
