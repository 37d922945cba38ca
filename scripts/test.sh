#!/usr/bin/env bash
# Builds locr and runs the whole test suite (unit, golden, server tiers) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
