#!/usr/bin/env bash
# Configures and builds locr into build/ (Release). Extra arguments go to cmake.
# The CUDA backend (-DLOCR_CUDA=ON) is turned on when nvcc is found on PATH or at
# /usr/local/cuda/bin/nvcc, unless LOCR_CUDA=OFF is set in the environment; without nvcc the
# build is the plain CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache when installed (scripts/install-deps.sh), keyed relative to the repo root so every clone
# of it shares one cache.
LAUNCHER=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
CUDA_ARGS=()
if [ "${LOCR_CUDA:-}" = "OFF" ]; then
  CUDA_ARGS=(-DLOCR_CUDA=OFF)
else
  NVCC="$(command -v nvcc || true)"
  if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
  if [ -n "$NVCC" ]; then
    CUDA_ARGS=(-DLOCR_CUDA=ON "-DCMAKE_CUDA_COMPILER=$NVCC")
  elif [ "${LOCR_CUDA:-}" = "ON" ]; then
    echo "LOCR_CUDA=ON but nvcc was found neither on PATH nor at /usr/local/cuda/bin/nvcc" >&2
    exit 1
  fi
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${LAUNCHER[@]}" "${CUDA_ARGS[@]}" "$@"
cmake --build build -j "$(nproc)"
