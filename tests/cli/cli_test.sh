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
tl=$(echo '{"model":"llama-3.1-8b","gpu":"a100-80gb","seq_len":4096,"finetune":{"method":"lora"}}' | "$cli" estimate - --timeline)
check "timeline: the moments in order, the largest the estimate's peak, its phases' peaks the estimate's" \
  'python3 -c "import json,sys; t=json.loads(sys.argv[1])[\"timeline\"]; m=t[\"moments\"]; assert m[0][\"name\"]==\"micro_batch_start\" and m[-1][\"name\"]==\"optimizer_step\" and all(x[\"label\"] for x in m); assert max(x[\"allocated_bytes\"] for x in m)==t[\"peak_allocated_bytes\"]; e=json.loads(sys.argv[2]); assert all(p[\"allocated_bytes\"]==max(x[\"allocated_bytes\"] for x in m if x[\"phase\"]==p[\"name\"]) for p in e[\"phases\"])" "$tl" "$(echo '"'"'{"model":"llama-3.1-8b","gpu":"a100-80gb","seq_len":4096,"finetune":{"method":"lora"}}'"'"' | "$cli" estimate -)"'
err=$(echo '{"seq_len":-1}' | "$cli" estimate - --timeline 2>&1 >/dev/null); rc=$?
check "timeline: bad input exits 2 naming the key" '[ $rc -eq 2 ] && grep -q "^error: seq_len: " <<<"$err"'
check "sweep grid" 'echo "{\"micro_batch\":[1,2],\"seq_len\":[512,1024]}" | "$cli" sweep - | grep -q "peak_allocated_bytes"'
plan13='{"model":"llama-2-13b","gpu":"a100-80gb","seq_len":4096,"micro_batch":2}'
out=$(echo "$plan13" | "$cli" plan -)
check "plan: plans that fit, each with its changes and configuration" \
  'python3 -c "import json,sys; d=json.loads(sys.argv[1]); p=d[\"plans\"]; assert p and all(x[\"fits\"] and x[\"changes\"] and \"config\" in x for x in p); assert \"plans_changing_training\" in d" "$out"'
first=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["plans"][0]))' "$out")
again=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["config"]))' "$first" | "$cli" estimate -)
check "plan: the first plan's configuration estimated on its own gives its figures" \
  'python3 -c "import json,sys; p=json.loads(sys.argv[1]); e=json.loads(sys.argv[2]); assert e[\"fits\"] and e[\"total_bytes\"]==p[\"total_bytes\"] and e[\"step_time_s\"]==p[\"step_time_s\"]" "$first" "$again"'
check "\"plan\": true in estimate adds plans" \
  'echo "{\"model\":\"llama-2-13b\",\"seq_len\":4096,\"micro_batch\":2,\"plan\":true}" | "$cli" estimate - | grep -q "\"plans\":\[{"'
err=$(echo '{"plan":{"strategies":["zero-9"],"max_gpus":0}}' | "$cli" plan - 2>&1 >/dev/null); rc=$?
check "plan: bad constraints exit 2 naming the field" '[ $rc -eq 2 ] && grep -q "^error: plan.strategies: " <<<"$err" && grep -q "^error: plan.max_gpus: " <<<"$err"'
out=$(echo '{"model":"llama-2-7b","train_tokens":1e8,"price_per_gpu_hour":{"h100-80gb":2.9},"plan":{"max_gpus":4}}' | "$cli" sizing -)
check "sizing: options with gpu, gpus, fits, plan, hours, gpu_hours, cost" \
  'python3 -c "import json,sys; o=json.loads(sys.argv[1])[\"options\"]; assert o[0][\"gpu\"]==\"h100-80gb\" and o[0][\"fits\"] and all(k in o[0] for k in (\"gpus\",\"plan\",\"hours\",\"gpu_hours\",\"cost\"))" "$out"'
err=$(echo '{"model":"llama-2-7b"}' | "$cli" sizing - 2>&1 >/dev/null); rc=$?
check "sizing: without the run's tokens exits 2 naming train_tokens" '[ $rc -eq 2 ] && grep -q "^error: train_tokens: " <<<"$err"'
exit $fail
