#!/usr/bin/env bash
# The Python package's test tier (CTest label `python`): builds the wheel from this checkout
# (`pip wheel .`, scikit-build-core; build-python/ keeps the build, ccache shares build/'s
# objects), installs it into a fresh venv with pytest and Pillow (PyPI), runs python/tests there,
# and records what `auditwheel show` says of the wheel's platform tag (build-python/auditwheel.txt).
#   run.sh wheel   build the wheel and the venv only;   run.sh test [PYTEST ARGS]   run the tests only.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
PY="${LOCR_PYTHON:-python3}"
OUT="$ROOT/build-python"
VENV="$OUT/venv-test"
what="${1:-all}"; shift || true
if [ "$what" = all ] || [ "$what" = wheel ]; then
  if command -v ccache >/dev/null; then export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1; fi
  mkdir -p "$OUT"
  rm -rf "$OUT/dist" "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check pytest==8.3.5 pillow==13.0.0 auditwheel==6.8.2
  "$VENV/bin/python" -m pip wheel --disable-pip-version-check --no-deps -w "$OUT/dist" "$ROOT"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$OUT"/dist/locr-*.whl
  # Which platform tag could it carry (manylinux needs its libraries bundled: auditwheel repair).
  "$VENV/bin/auditwheel" show "$OUT"/dist/locr-*.whl > "$OUT/auditwheel.txt" 2>&1 || true
  cat "$OUT/auditwheel.txt"
fi
if [ "$what" = all ] || [ "$what" = test ]; then
  # Outside the source tree, so `import locr` is the installed package, not python/locr.
  cd "$OUT"
  "$VENV/bin/python" -m pytest -p no:cacheprovider -q "$ROOT/python/tests" "$@"
fi
