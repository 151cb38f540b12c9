#!/usr/bin/env bash
# The exports' CLI contract: `exports FILE|-` prints {"exports":[...]} and exits 0 (an empty list when nothing
# applies); `export ID FILE|-` prints one export's text and exits 0, exits 1 with one stderr line when that
# export does not apply, 2 on an unknown id or a bad configuration.
set -u
cli=$1
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }

ds='{"strategy":"deepspeed","zero":2,"offload":"optimizer","gpus":2}'
out=$(echo "$ds" | "$cli" exports -); rc=$?
check "exports exits 0" '[ $rc -eq 0 ]'
check "exports lists deepspeed, accelerate, training-arguments in order" \
  'grep -q "^{\"exports\":\[{\"filename\":\"ds_config.json\",\"id\":\"deepspeed\"" <<<"$out" && grep -q "\"id\":\"accelerate\".*\"id\":\"training-arguments\"" <<<"$out"'
check "no torchrun or megatron for DeepSpeed" '! grep -q "\"id\":\"torchrun\"\|\"id\":\"megatron\"" <<<"$out"'

text=$(echo "$ds" | "$cli" export deepspeed -); rc=$?
check "export deepspeed prints the config" '[ $rc -eq 0 ] && grep -q "\"stage\": 2" <<<"$text"'
check "export deepspeed is the deepspeed command's JSON, indented" \
  '[ "$(tr -d " \n" <<<"$text")" == "$(echo "$ds" | "$cli" deepspeed - | tr -d " \n")" ]'
check "export accelerate is YAML with DEEPSPEED" \
  'echo "$ds" | "$cli" export accelerate - | grep -q "^distributed_type: DEEPSPEED$"'

err=$(echo "$ds" | "$cli" export megatron - 2>&1 >/dev/null); rc=$?
check "an export that does not apply exits 1" '[ $rc -eq 1 ]'
check "... with one line naming what applies" \
  '[ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "^error: the export megatron does not apply.*deepspeed, accelerate, training-arguments" <<<"$err"'
err=$(echo "$ds" | "$cli" export no-such - 2>&1 >/dev/null); rc=$?
check "an unknown export id exits 2" '[ $rc -eq 2 ] && grep -q "^error: unknown export" <<<"$err"'

err=$(echo '{"strategy":"fsdp3"}' | "$cli" exports - 2>&1 >/dev/null); rc=$?
check "a bad configuration exits 2 naming the key" '[ $rc -eq 2 ] && grep -q "^error: strategy: " <<<"$err"'
err=$(echo '{"strategy":"fsdp3"}' | "$cli" export deepspeed - 2>&1 >/dev/null); rc=$?
check "... for export too" '[ $rc -eq 2 ] && grep -q "^error: strategy: " <<<"$err"'

out=$(echo '{"strategy":"fsdp","gpus":2,"checkpointing":"selective"}' | "$cli" exports -); rc=$?
check "nothing applies: an empty list, exit 0" '[ $rc -eq 0 ] && [ "$out" == "{\"exports\":[]}" ]'

check "megatron: the launcher line and its flags" \
  'echo "{\"strategy\":\"megatron\",\"gpus\":4,\"tp\":2,\"pp\":2}" | "$cli" export megatron - | grep -q "^  --tensor-model-parallel-size 2 \\\\$"'
check "torchtune: tune run with the recipe" \
  'echo "{\"framework\":\"torchtune\",\"model\":\"llama-3.1-8b\",\"finetune\":{\"method\":\"lora\",\"targets\":[\"q_proj\",\"v_proj\"]}}" | "$cli" export torchtune - | grep -q "^tune run lora_finetune_single_device --config llama3_1/8B_lora_single_device"'
check "missing file exits 2" '"$cli" export deepspeed /no/such/file 2>/dev/null; [ $? -eq 2 ]'

# Every export of tests/data/exports/configs.json was loaded by its library, for its current text.
check "every export has a passing, current record in validated.jsonl" \
  'python3 "$(dirname "$0")/../data/exports/check_validated.py" "$cli"'

out=$(echo '{"strategy":"deepspeed","zero":2,"offload":"optimizer","optimizer":"adamw-8bit"}' | "$cli" exports - 2>&1 >/dev/null); rc=$?
check "a bitsandbytes optimizer on ZeRO-Offload is refused, naming it" '[ $rc -eq 2 ] && grep -q "^error: optimizer: \"adamw-8bit\" is a bitsandbytes optimizer" <<<"$out"'
out=$(echo '{"strategy":"deepspeed","zero":2,"offload":"optimizer","optimizer":"sgd","gpus":2}' | "$cli" export deepspeed -)
check "DeepSpeed keeps the Trainer's SGD on offloaded partitions" 'grep -q "\"zero_force_ds_cpu_optimizer\": false" <<<"$out" && ! grep -q "\"optimizer\"" <<<"$out"'
exit $fail
