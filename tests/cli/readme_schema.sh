#!/usr/bin/env bash
# The README's configuration tables are the schema's (core/setup/schema.cpp): `vramcalc schema --markdown` between
# the README's schema markers. With --write, puts them there.
set -euo pipefail
cli=$1 readme=$2
begin='<!-- schema: generated'
end='<!-- /schema -->'
generated=$("$cli" schema --markdown)
if [ "${3:-}" = --write ]; then
  GENERATED=$generated python3 - "$readme" "$begin" "$end" <<'PY'
import os, sys
path, begin, end = sys.argv[1:4]
text = open(path).read()
a = text.index(begin); a = text.index('\n', a) + 1
b = text.index(end)
open(path, 'w').write(text[:a] + os.environ['GENERATED'].rstrip('\n') + '\n' + text[b:])
PY
  exit 0
fi
current=$(awk -v b="$begin" -v e="$end" 'index($0, e) == 1 {on = 0} on {print} index($0, b) == 1 {on = 1}' "$readme")
if [ "$current" != "$generated" ]; then
  echo "README.md's configuration tables differ from \`vramcalc schema --markdown\`:"
  diff <(echo "$current") <(echo "$generated") | head -20
  echo "regenerate them: tests/cli/readme_schema.sh build/native/cli/vramcalc README.md --write"
  exit 1
fi
echo "README.md's configuration tables match the schema"
