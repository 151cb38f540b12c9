#!/usr/bin/env bash
# The CLI's contract: JSON out and exit 0 for a valid configuration; exit 2 and one stderr line per
# problem, naming the key, for a bad one.
set -u
cli=$1
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }

out=$(echo '{"model":"llama-2-7b","gpu":"a100-80gb","precision":"bf16-mixed","strategy":"deepspeed"}' | "$cli" estimate -)
check "issue example exits 0 and does not fit" '[ $? -eq 0 ] && grep -q "\"fits\":false" <<<"$out"'

err=$(echo '{"seq_len":0,"gpu":"no-such-gpu","colour":"red"}' | "$cli" estimate - 2>&1 >/dev/null); rc=$?
check "bad input exits 2" '[ $rc -eq 2 ]'
check "one line per problem" '[ "$(wc -l <<<"$err")" -eq 3 ]'
check "names seq_len" 'grep -q "^error: seq_len: " <<<"$err"'
check "names gpu with the catalog" 'grep -q "^error: gpu: unknown GPU .*a100-80gb" <<<"$err"'
check "names the unknown key" 'grep -q "^error: colour: unknown key" <<<"$err"'

err=$(echo '{"model":' | "$cli" estimate - 2>&1 >/dev/null); rc=$?
check "malformed JSON exits 2" '[ $rc -eq 2 ] && grep -q "malformed JSON" <<<"$err"'
err=$("$cli" estimate /no/such/file 2>&1); rc=$?
check "missing file exits 2" '[ $rc -eq 2 ]'
check "presets lists A100 80GB" '"$cli" presets | grep -q "\"a100-80gb\""'
check "models --search finds a spelling" \
  '"$cli" models --search "llama 3.1 8b" | grep -q "^{\"resolves\":\"meta-llama/Llama-3.1-8B\",\"results\":\[{\"id\":\"meta-llama/Llama-3.1-8B\",\"match\":\"exact\""'
err=$(echo '{"model":"qwne3-8b"}' | "$cli" estimate - 2>&1 >/dev/null); rc=$?
check "an unknown model names the closest ids" '[ $rc -eq 2 ] && grep -q "^error: model: unknown model \"qwne3-8b\" (did you mean Qwen/Qwen3-8B" <<<"$err"'
check "deepspeed config has the ZeRO stage" \
  'echo "{\"strategy\":\"deepspeed\",\"zero\":2,\"offload\":\"optimizer\"}" | "$cli" deepspeed - | grep -q "\"stage\":2"'
check "table mode" 'echo "{}" | "$cli" estimate - --table | grep -q "largest micro_batch"'
check "sweep grid" 'echo "{\"micro_batch\":[1,2],\"seq_len\":[512,1024]}" | "$cli" sweep - | grep -q "peak_allocated_bytes"'
exit $fail
