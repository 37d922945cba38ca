#!/usr/bin/env bash
# Installs the Debian bookworm packages locr builds and tests with.
set -euo pipefail
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
PKGS=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libutf8proc-dev libcpp-httplib-dev libssl-dev zlib1g-dev
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev libtiff-dev
  libpoppler-cpp-dev
  libgtest-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev ccache  # scripts/fuzz.sh (libFuzzer) and scripts/test-sanitize.sh
  libjs-marked libjs-katex node-dompurify  # embedded in the web UI (src/server/CMakeLists.txt)
  chromium chromium-driver  # the web UI's browser tests (tests/server/test_ui.py)
  haproxy  # deploy/haproxy/haproxy.cfg and its test (tests/deploy/test_haproxy.py)
  python3 python3-venv curl
  python3-dev  # the Python package's extension module (pyproject.toml: `pip install .`, tests tier python)
  patchelf debootstrap xz-utils  # scripts/device-bundle.sh (RUNPATHs) and its clean-root test (scripts/test-device-bundle.sh)
)
missing=()
for p in "${PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Python packages for the server contract tests (tests/server) and the deployment tests and Ray
# job (tests/deploy, deploy/ray), pinned, in a venv at .venv that CTest runs pytest with.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -x "$ROOT/.venv/bin/python" ]; then python3 -m venv "$ROOT/.venv"; fi
"$ROOT/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$ROOT/tests/server/requirements.txt"
"$ROOT/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$ROOT/tests/deploy/requirements.txt"
