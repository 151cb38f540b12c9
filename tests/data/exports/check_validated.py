#!/usr/bin/env python3
"""Replays the committed results of validate_with_libraries.py: every export of every case of configs.json must have
a passing record in validated.jsonl for its current text (by SHA-256), so an export that changed without a new
validation by the libraries fails. Standard library only; run by ctest cli_exports_contract.

    python3 tests/data/exports/check_validated.py build/native/cli/vramcalc
"""
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(cli):
    records = {}
    for line in open(os.path.join(HERE, "validated.jsonl")):
        r = json.loads(line)
        if "sha256" in r:
            records[(r["case"], r["export"])] = r
    passed = failed = 0
    for case in json.load(open(os.path.join(HERE, "configs.json")))["cases"]:
        out = subprocess.run([cli, "exports", "-"], input=json.dumps(case["config"]), capture_output=True, text=True, check=True)
        for e in json.loads(out.stdout)["exports"]:
            r = records.get((case["name"], e["id"]))
            sha = hashlib.sha256(e["text"].encode()).hexdigest()
            problem = ("no validation record" if r is None else
                       "validated for another text: run validate_with_libraries.py again" if r["sha256"] != sha else
                       "failed: " + r["checked"] if r["status"] != "OK" else None)
            if problem:
                print(f"FAILED: {case['name']} {e['id']}: {problem}")
                failed += 1
            else:
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
