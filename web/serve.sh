#!/usr/bin/env bash
# Builds the web page (WebAssembly preset) and serves build/wasm/site on http://127.0.0.1:${PORT:-8000}/.
# Installs what it needs on Debian/Ubuntu: cmake, emscripten, nlohmann-json3-dev, python3, node and npm (apt-get,
# needs root/sudo), and the bundler (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v emcc >/dev/null || need+=(emscripten)
command -v python3 >/dev/null || need+=(python3)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
command -v npm >/dev/null || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${need[@]}" make
fi
[ -x node_modules/.bin/esbuild ] || npm ci --no-audit --no-fund
# Debian's emscripten finds its JavaScript optimizer's acorn through NODE_PATH.
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}
cmake --preset wasm
cmake --build build/wasm -j"$(nproc)"
PORT=${PORT:-8000}
echo "Serving build/wasm/site on http://127.0.0.1:${PORT}/"
exec python3 -m http.server "$PORT" --bind 127.0.0.1 --directory build/wasm/site
