#!/usr/bin/env bash
# Fuzz the configuration entry points for SECONDS (default 600).
#   tests/fuzz/run.sh [SECONDS]
# Builds build/fuzz with the `fuzz` preset (clang++, libFuzzer + ASan + UBSan) if needed, then runs fuzz_config
# in fork mode (one worker, so a finding is saved and fuzzing goes on) over a working corpus seeded from
# tests/fuzz/corpus and tests/fuzz/regressions. Findings land in build/fuzz/artifacts/ (crash-*, timeout-*,
# oom-*); the full log in build/fuzz/fuzz.log. Exit status: 0 when nothing was found, 1 otherwise.
# Minimize a finding with:  build/fuzz/tests/fuzz/fuzz_config -minimize_crash=1 -runs=20000 FILE
# then save it under tests/fuzz/regressions/ (tests/unit/test_bad_input.cpp replays that folder).
set -euo pipefail
seconds=${1:-600}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build/fuzz
cd "$root"
if [[ ! -f $build/CMakeCache.txt ]]; then cmake --preset fuzz >/dev/null; fi
cmake --build "$build" -j2 --target fuzz_config >/dev/null
work=$build/corpus-work
artifacts=$build/artifacts
mkdir -p "$work" "$artifacts"
log=$build/fuzz.log
start=$(date +%s)
set +e
"$build/tests/fuzz/fuzz_config" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len=4096 \
  -dict="$root/tests/fuzz/dict.txt" -artifact_prefix="$artifacts/" \
  "$work" "$root/tests/fuzz/corpus" "$root/tests/fuzz/regressions" >"$log" 2>&1
rc=$?
set -e
end=$(date +%s)
echo "fuzz_config: $((end - start)) s, exit $rc; last status lines of $log:"
grep -E '^#[0-9]+: cov:' "$log" | tail -n 2 || true
grep -E 'DONE|INFO: fuzzed for' "$log" | tail -n 2 || true
found=$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
echo "findings in $artifacts: $found"
[[ $found -eq 0 ]]
