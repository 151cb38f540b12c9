#!/usr/bin/env bash
# Records what an installed torch's own allocator-config parser makes of each case below (tests/cuda/
# alloc_conf_probe.cpp, one process per case so no setting carries over), for test_caching_allocator.cpp to replay:
#     PYTHON=build/venv-alloc/bin/python tests/cuda/alloc_conf_truth.sh
# writes tests/validation/cuda/alloc_conf_torch-<version>.jsonl. CPU only (c10 parses the device options).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${PYTHON:-python3}"
TORCH_DIR="$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)"
VERSION="$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)"
BIN="$ROOT/build/probe/alloc_conf_probe"
mkdir -p "$(dirname "$BIN")"
g++ -std=c++17 -O1 -I"$TORCH_DIR/include" "$ROOT/tests/cuda/alloc_conf_probe.cpp" -L"$TORCH_DIR/lib" -lc10 \
    -Wl,-rpath,"$TORCH_DIR/lib" -o "$BIN"
OUT="$ROOT/tests/validation/cuda/alloc_conf_torch-$VERSION.jsonl"
cases=(
  ""
  "expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:4,garbage_collection_threshold:0.6"
  "roundup_power2_divisions:[256:1,512:2,>:8]"
  "roundup_power2_divisions:[256:2,512:4,>:8]"
  "roundup_power2_divisions:[1:2,4:4,16:8]"
  "roundup_power2_divisions:[>:8]"
  "roundup_power2_divisions:[128:2,64:4]"
  "roundup_power2_divisions:[2:4,>:8,8:2]"
  "roundup_power2_divisions:[131072:2]"
  "roundup_power2_divisions:[256:2,]"
  "roundup_power2_divisions:[]"
  "roundup_power2_divisions:8"
  "roundup_power2_divisions:3"
  "roundup_power2_divisions:0"
  "roundup_power2_divisions:[300:2]"
  "roundup_power2_divisions:[256:3]"
  "max_split_size_mb:20"
  "max_split_size_mb:19"
  "max_split_size_mb:20,max_split_size_mb:40"
  " max_split_size_mb : 128 "
  "max_split_size_mb:128,"
  "max_non_split_rounding_mb:19"
  "max_non_split_rounding_mb:64"
  "large_segment_size_mb:10"
  "large_segment_size_mb:64"
  "large_segment_size_mb:64,max_non_split_rounding_mb:30"
  "garbage_collection_threshold:0.6"
  "garbage_collection_threshold:1.0"
  "garbage_collection_threshold:0"
  "expandable_segments:True"
  "expandable_segments:False"
  "expandable_segments:true"
  "expandable_segments:1"
)
: > "$OUT"
for c in "${cases[@]}"; do "$BIN" "$c" >> "$OUT"; done
echo "torch $VERSION: ${#cases[@]} cases -> $OUT"
