#!/usr/bin/env bash
# Runs every test on a fresh Debian 12 machine: installs what is missing, builds the native, WebAssembly,
# sanitizer and CUDA (when nvcc exists) targets, and runs ctest on each.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ clang catch2 nlohmann-json3-dev emscripten binaryen chromium python3 libopenblas0-pthread)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v node >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
[ -f package-lock.json ] && npm ci --no-audit --no-fund

export NODE_PATH=/usr/share/nodejs  # Debian's emcc needs acorn from there
cmake --preset wasm >/dev/null
cmake --build --preset wasm
cmake --preset native >/dev/null
cmake --build --preset native
ctest --preset native

cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan --target unit_tests accuracy vramcalc
ctest --preset asan-ubsan -R 'unit_tests|accuracy_cpu|cli_'

if [ -x /usr/local/cuda/bin/nvcc ]; then
  cmake --preset cuda >/dev/null
  cmake --build --preset cuda
  ctest --preset cuda -L cuda
fi
