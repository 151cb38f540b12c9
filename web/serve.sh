#!/usr/bin/env bash
# Builds the web page (WebAssembly preset) and serves build/wasm/site on http://127.0.0.1:${PORT:-8000}/.
# Installs what it needs on Debian/Ubuntu: cmake, emscripten, nlohmann-json3-dev, python3 (apt-get, needs root/sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v emcc >/dev/null || need+=(emscripten)
command -v python3 >/dev/null || need+=(python3)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${need[@]}" make
fi
# Debian's emscripten finds its JavaScript optimizer's acorn through NODE_PATH.
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}
cmake --preset wasm
cmake --build build/wasm -j"$(nproc)"
PORT=${PORT:-8000}
echo "Serving build/wasm/site on http://127.0.0.1:${PORT}/"
exec python3 -m http.server "$PORT" --bind 127.0.0.1 --directory build/wasm/site
