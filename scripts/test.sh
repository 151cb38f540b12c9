#!/usr/bin/env bash
# Runs every test on a fresh Debian 12 machine: installs what is missing, builds the sanitizer, WebAssembly and
# native targets (the native one with the CUDA validation when nvcc exists), and runs ctest on each. Ends with one line:
# "N passed, N failed, N skipped" over all of them.
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

passed=0 failed=0 skipped=0
log=$(mktemp)
run_ctest() {  # ctest with the given arguments; adds its counts to the totals
  ctest "$@" 2>&1 | tee "$log" || { echo "ctest $* failed"; exit 1; }
  local total bad notrun
  total=$(grep -oE 'tests failed out of [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  bad=$(grep -oE '[0-9]+ tests failed out of' "$log" | grep -oE '^[0-9]+' || echo 0)
  notrun=$(grep -cE '^[[:space:]]+[0-9]+ - .*\((Skipped|Not Run)\)' "$log" || true)
  passed=$((passed + total - bad - notrun)) failed=$((failed + bad)) skipped=$((skipped + notrun))
}

# Where nvcc exists the native build also builds the CUDA validation (its tests exit 77 without a GPU: skipped), so
# the core is compiled once for both.
native_cuda=()
[ -x /usr/local/cuda/bin/nvcc ] && native_cuda=(-DVRAMCALC_CUDA=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)

cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan --target unit_tests accuracy vramcalc
run_ctest --preset asan-ubsan -R 'unit_tests|accuracy_|cli_'

export NODE_PATH=/usr/share/nodejs  # Debian's emcc needs acorn from there
cmake --preset wasm >/dev/null
cmake --build --preset wasm
cmake --preset native "${native_cuda[@]}" >/dev/null
cmake --build --preset native
run_ctest --preset native

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
