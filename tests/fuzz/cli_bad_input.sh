#!/usr/bin/env bash
# The CLI's bad-input contract: `vramcalc estimate FILE` on an invalid configuration exits 2, prints nothing on
# stdout and exactly one "error: FIELD: message" line per problem on stderr.
#   tests/fuzz/cli_bad_input.sh path/to/vramcalc
# Register as a ctest (tests/cli/CMakeLists.txt):
#   add_test(NAME cli_bad_input COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/cli_bad_input.sh $<TARGET_FILE:vramcalc>)
set -u
cli=${1:?usage: cli_bad_input.sh path/to/vramcalc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect NAME INPUT EXIT_CODE STDERR_LINE...   (each expected stderr line is a prefix of the actual line, in order)
expect() {
  local name=$1 input=$2 code=$3
  shift 3
  printf '%s' "$input" >"$tmp/$name.json"
  "$cli" estimate "$tmp/$name.json" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local problems=()
  [[ $rc -eq $code ]] || problems+=("exit $rc, expected $code")
  [[ ! -s $tmp/out ]] || problems+=("stdout is not empty")
  local lines
  lines=$(wc -l <"$tmp/err")
  [[ $lines -eq $# ]] || problems+=("$lines stderr lines, expected $#")
  local i=1 want got
  for want in "$@"; do
    got=$(sed -n "${i}p" "$tmp/err")
    [[ $got == "$want"* ]] || problems+=("stderr line $i: '$got' does not start with '$want'")
    i=$((i + 1))
  done
  if [[ ${#problems[@]} -gt 0 ]]; then
    failures=$((failures + 1))
    echo "FAIL $name:"
    printf '  %s\n' "${problems[@]}"
    sed 's/^/  stderr: /' "$tmp/err" | head -n 10
  else
    echo "ok   $name"
  fi
}

# Three problems, three lines, in the order the fields are read.
expect three_problems '{"seq_len":0,"gpu":"tpu-v5","colour":"blue"}' 2 \
  "error: seq_len: " "error: gpu: unknown GPU" "error: colour: unknown key"
expect unknown_key '{"model":"llama-2-7b","colour":"blue"}' 2 "error: colour: unknown key"
expect nested_key '{"finetune":{"method":"lora","alpha":16}}' 2 "error: finetune.alpha: unknown key"
expect wrong_type '{"micro_batch":"4"}' 2 "error: micro_batch: must be an integer"
expect fraction '{"micro_batch":2.5}' 2 "error: micro_batch: must be an integer"
expect too_big '{"seq_len":18446744073709551616}' 2 "error: seq_len: must be from 1"
expect heads '{"model":{"layers":2,"hidden":100,"heads":3,"ffn":10,"vocab":10}}' 2 "error: model.heads: "
expect kv_heads '{"model":{"layers":2,"hidden":96,"heads":6,"kv_heads":4,"ffn":10,"vocab":10}}' 2 \
  "error: model.kv_heads: "
expect tp '{"model":"llama-2-7b","strategy":"megatron","tp":3,"gpus":3}' 2 "error: tp: "
expect preset '{"model":"llama-9"}' 2 "error: model: unknown model"
expect malformed '{"model":' 2 "error: malformed JSON"
expect not_object '[1,2]' 2 "error: the configuration must be a JSON object"
expect invalid_utf8 $'{"model":"gpt\xff"}' 2 "error: malformed JSON"
expect empty '' 2 "error: malformed JSON"

# Over the 1 MiB limit.
{ printf '{"model":"gpt2","note":"'; head -c 2097152 /dev/zero | tr '\0' x; printf '"}'; } >"$tmp/big.json"
"$cli" estimate "$tmp/big.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 && ! -s $tmp/out ]]; then echo "ok   big_input"; else
  failures=$((failures + 1)); echo "FAIL big_input: exit $rc"; head -c 300 "$tmp/err"; fi

# 100k nested arrays (200 kB, valid JSON, under the size limit): refused as a whole, not a stack overflow.
deep=$(printf '%*s' 100000 '' | tr ' ' '['; printf '%*s' 100000 '' | tr ' ' ']')
expect deep_nesting "{\"model\":$deep}" 2 "error: "

# A file that cannot be read.
"$cli" estimate "$tmp/does-not-exist.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q '^error: cannot read' "$tmp/err"; then
  echo "ok   missing_file"; else failures=$((failures + 1)); echo "FAIL missing_file: exit $rc"; cat "$tmp/err"; fi

# And a valid configuration still exits 0 with JSON on stdout and nothing on stderr.
printf '{"model":"gpt2","seq_len":1024}' >"$tmp/good.json"
"$cli" estimate "$tmp/good.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [[ $rc -eq 0 && ! -s $tmp/err && -s $tmp/out ]]; then echo "ok   valid_config"; else
  failures=$((failures + 1)); echo "FAIL valid_config: exit $rc"; head -c 300 "$tmp/err"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
