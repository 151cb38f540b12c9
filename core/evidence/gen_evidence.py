#!/usr/bin/env python3
"""Writes evidence_data.inc, the committed validation cases as C++ rows, for core/evidence/evidence.cpp.

    python3 core/evidence/gen_evidence.py --root REPO --out BUILD/evidence_data.inc INPUT.jsonl...

Run by the build (core/CMakeLists.txt, an add_custom_command that depends on every input), never by hand:
the rows are the measurements themselves, so the evidence shown beside an estimate cannot drift from the data
`ctest -R accuracy_` and tests/validation/published/evaluate.py read.

Inputs, each named by its path under REPO:
- the CPU measurements (tests/validation/measured_*.jsonl, tests/validation/stacks/*/measured.jsonl): one
  case per record that has a "config" and no "not_expressible", with the same adjustments as
  tests/validation/accuracy.cpp ("device" from the record, "torch": "1.13" for PyTorch 1.13 records) and its
  measured peak_allocated_bytes;
- tests/validation/published/configs.jsonl, read with rows.jsonl beside it: one case per entry with a
  "config"; a row of kind "memory" with a numeric "published_gib" is compared on its metric, as
  evaluate.py does; a row of kind "fits" and an entry marked "unmodelled" (an optimisation vramcalc does not
  model) is a run that ran: it counts as one that must fit its GPU, outside the error statistics, also as
  evaluate.py does.

Each case's configuration is stored as compact JSON text without its "model", which goes to a table of
distinct models (many cases share one). Python standard library only.
"""

import argparse
import json
import os
import sys

# The published rows' grouping lives in the published evaluation (standard library only, like this file).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "validation", "published"))
from evaluate import source_group as published_group  # noqa: E402

GIB = 2 ** 30

# The CPU sets: path under the repository -> (set name, whether ctest holds it to 3%).
CPU_SETS = {
    "tests/validation/measured_hf_cpu.jsonl": "transformers modeling code (measure_hf.py)",
    "tests/validation/measured_cpu.jsonl": "hand-written Llama and GPT-2 copies (measure_torch.py)",
    "tests/validation/stacks/torchtune/measured.jsonl": "torchtune recipes' training step",
    "tests/validation/stacks/litgpt/measured.jsonl": "LitGPT full.py and lora.py under Fabric",
    "tests/validation/stacks/fsdp/measured.jsonl": "FSDP 1 and 2 with transformers, 2 gloo ranks",
    "tests/validation/stacks/torchtitan/measured.jsonl": "torchtitan's own training step, 2-4 gloo ranks",
    "tests/validation/stacks/qlora/measured.jsonl": "PEFT LoRA and bitsandbytes QLoRA",
    "tests/validation/stacks/litgpt2023/measured.jsonl": "lit-gpt 8641822 (2023) LoRA and QLoRA, whole-run peaks",
    "tests/validation/stacks/trl/measured.jsonl": "TRL 1.16's DPOTrainer and GRPOTrainer",
    "tests/validation/stacks/trl-ppo/measured.jsonl": "TRL 1.12's PPOTrainer (policy, reference, value, reward)",
    "tests/validation/stacks/trl-fsdp/measured.jsonl": "TRL 1.16's DPOTrainer and GRPOTrainer under FSDP 1 and 2, 2 gloo ranks",
}
PUBLISHED = "tests/validation/published/configs.jsonl"
METRICS = ("peak_allocated_bytes", "peak_reserved_bytes", "total_bytes")
# Versions that say nothing about what allocates.
IGNORED_PACKAGES = {"python", "numpy", "safetensors", "jsonargparse", "lightning-utilities",
                    "lightning_pinned_by_lit_gpt", "requests", "setuptools"}
DELIM = "evj"


def source_group(row_id):
    """The published source a row belongs to: evaluate.py's grouping, the one table of it."""
    name = published_group(row_id)
    return "other published" if name == "other" else name


def short(value):
    value = str(value)
    if len(value) == 40 and all(ch in "0123456789abcdef" for ch in value):
        return value[:7]  # a commit
    return value


def cpu_versions(record):
    versions = record.get("versions")
    if not isinstance(versions, dict):
        versions = {k: record[k] for k in ("torch", "transformers") if isinstance(record.get(k), str)}
    parts = ["%s %s" % (k, short(v)) for k, v in versions.items()
             if k not in IGNORED_PACKAGES and isinstance(v, str)]
    return ", ".join(parts) or "versions not recorded"


def kind_of(config):
    """The JSON-level method, strategy and tp/pp/cp > 1 bits (1, 2, 4): keys with fixed defaults ("full",
    "single", 1) that no framework profile changes, so evidence.cpp parses only the cases of the configuration's
    own kind. None where the text does not say plainly (the case is then always parsed); a unit test checks
    them against the parsed configurations."""
    finetune = config.get("finetune", "full")
    method = finetune if isinstance(finetune, str) else finetune.get("method") if isinstance(finetune, dict) else None
    strategy = config.get("strategy", "single")
    parallel = 0
    for bit, key in ((1, "tp"), (2, "pp"), (4, "cp")):
        value = config.get(key, 1)
        if not isinstance(value, int):
            return method if isinstance(method, str) else None, None, 0
        parallel |= bit if value > 1 else 0
    return (method if isinstance(method, str) else None, strategy if isinstance(strategy, str) else None, parallel)


def compact(value):
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def literal(text):
    if ")" + DELIM + '"' in text:
        sys.exit("gen_evidence.py: a configuration holds the raw-string delimiter )%s\"" % DELIM)
    return 'R"%s(%s)%s"' % (DELIM, text, DELIM)


def quoted(text):
    return json.dumps(text, ensure_ascii=True)  # a valid C string for printable ASCII and \" \\ escapes


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as err:
                    sys.exit("gen_evidence.py: %s:%d: %s" % (path, number, err))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="the repository root")
    ap.add_argument("--out", required=True, help="the .inc to write")
    ap.add_argument("inputs", nargs="+", help="the JSONL files, as paths under --root")
    args = ap.parse_args()

    sets, versions, models, cases = [], [], [], []
    set_index, version_index, model_index = {}, {}, {}

    def intern(table, index, value):
        if value not in index:
            index[value] = len(table)
            table.append(value)
        return index[value]

    def add_case(set_key, kind, file, name, version, config, measured, metric, ran):
        s = intern(sets, set_index, (set_key, kind, file))
        v = intern(versions, version_index, version)
        config = dict(config)
        model = config.pop("model", None)
        m = intern(models, model_index, compact(model)) if model is not None else -1
        method, strategy, parallel = kind_of(config)
        cases.append((s, v, m, name, compact(config), measured, METRICS.index(metric), ran, method, strategy, parallel))

    for path in args.inputs:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(args.root)).replace(os.sep, "/")
        if rel in CPU_SETS:
            for record in read_jsonl(path):
                if "not_expressible" in record or "config" not in record:
                    continue
                config = dict(record["config"])
                # As tests/validation/accuracy.cpp: the kernels that were measured.
                config["device"] = "cpu" if record.get("device") == "cpu" else "cuda"
                if str(record.get("torch", "")).startswith("1.13"):
                    config["torch"] = "1.13"
                measured = record["measured"]["peak_allocated_bytes"]
                add_case(CPU_SETS[rel], "cpu", rel, record["name"], cpu_versions(record), config,
                         float(measured), "peak_allocated_bytes", False)
        elif rel == PUBLISHED:
            rows = {r["id"]: r for r in read_jsonl(os.path.join(os.path.dirname(path), "rows.jsonl"))}
            for entry in read_jsonl(path):
                row = rows.get(entry["id"])
                if "config" not in entry or row is None:
                    continue
                src = row.get("source", {})
                version = " ".join(x for x in (src.get("repo", ""), src.get("path", ""),
                                               ("@" + src["commit"][:7]) if src.get("commit") else "") if x)
                version = version or src.get("title", "source not recorded")
                ran = row.get("kind") == "fits" or "unmodelled" in entry
                gib = entry.get("published_gib")
                if not ran and (row.get("kind") != "memory" or not isinstance(gib, (int, float))):
                    continue
                metric = entry.get("metric") if entry.get("metric") in METRICS else "total_bytes"
                add_case(source_group(entry["id"]), "gpu", rel, entry["id"], version, entry["config"],
                         float(gib) * GIB if isinstance(gib, (int, float)) and not ran else 0.0, metric, ran)
        else:
            sys.exit("gen_evidence.py: %s is not a known validation set (add it to CPU_SETS)" % rel)

    out = ["// Generated by core/evidence/gen_evidence.py from the committed validation data; do not edit.",
           "// %d cases: %s" % (len(cases), ", ".join(sorted({s[2] for s in sets}))),
           "// Sets: {name, source kind, file}.",
           "static const EvidenceSetRow kEvidenceSets[] = {"]
    out += ["    {%s, %s, %s}," % (quoted(n), quoted(k), quoted(f)) for n, k, f in sets]
    out += ["};", "static const char* const kEvidenceVersions[] = {"]
    out += ["    %s," % quoted(v) for v in versions]
    out += ["};", "// Distinct \"model\" values of the cases' configurations.", "static const char* const kEvidenceModels[] = {"]
    out += ["    %s," % literal(m) for m in models]
    out += ["};",
            "// Cases: {set, versions, model (-1: none given), name, configuration without its model, measured bytes,",
            "//         metric (0 peak_allocated_bytes, 1 peak_reserved_bytes, 2 total_bytes), a run that ran (no figure),",
            "//         method and strategy as the text gives them (nullptr: not plainly), tp/pp/cp > 1 bits (1, 2, 4)}.",
            "static const EvidenceCaseRow kEvidenceCases[] = {"]
    for s, v, m, name, config, measured, metric, ran, method, strategy, parallel in cases:
        out.append("    {%d, %d, %d, %s, %s, %r, %d, %s, %s, %s, %d}," % (
            s, v, m, quoted(name), literal(config), measured, metric, "true" if ran else "false",
            quoted(method) if method else "nullptr", quoted(strategy) if strategy else "nullptr", parallel))
    out.append("};")
    text = "\n".join(out) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
