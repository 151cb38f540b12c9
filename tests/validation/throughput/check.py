#!/usr/bin/env python3
"""Consistency checks of the published-throughput truth set (rows.jsonl, configs.jsonl, gpu_interconnect.json).

It does not run or score any time model. It checks that
  * every row has a configuration and every configuration is accepted by `vramcalc estimate` (exit status 0),
  * the split is the pre-declared one (alternation by position within each published table),
  * every derived figure follows from the published one by the row's stated formula:
      - torchtitan / llm-foundry rows that publish both tokens/s/GPU and MFU: the source's own FLOPs formula and
        peak reproduce the published MFU within 0.1 percentage point,
      - Megatron rows that publish TFLOP/s/GPU: tokens/s/GPU = TFLOP/s x 1e12 / (FLOPs per token of the source),
        and the README's MFU / % of peak equals TFLOP/s over the peak,
  * gpu_interconnect.json has one entry per catalog GPU,
and prints the counts per source, split and fully-known status.

    python3 tests/validation/throughput/check.py [--cli build/dev/cli/vramcalc] [--no-cli]

Python standard library only; exit status 1 on any failure.
"""

import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def find_cli(explicit):
    for c in ([explicit] if explicit else [os.path.join(REPO, "build", "dev", "cli", "vramcalc"),
                                           os.path.join(REPO, "build", "native", "cli", "vramcalc")]):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli")
    ap.add_argument("--no-cli", action="store_true", help="skip running vramcalc on the configurations")
    args = ap.parse_args()
    rows, configs = load("rows.jsonl"), load("configs.jsonl")
    failures = []

    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        failures.append("duplicate row ids")
    cfg = {c["id"]: c for c in configs}
    if set(cfg) != set(ids):
        failures.append("rows and configs differ: %s" % sorted(set(cfg) ^ set(ids)))

    # the split rule: odd positions of each table -> calibration, even -> test, in published order
    pos = collections.defaultdict(int)
    for r in rows:
        t = r["split_key"]["table"]
        pos[t] += 1
        want = "calibration" if pos[t] % 2 == 1 else "test"
        if r["split_key"]["position"] != pos[t] or r["split"] != want:
            failures.append(f"{r['id']}: split {r['split']} at position {r['split_key']['position']}, rule gives {want} at {pos[t]}")

    for r in rows:
        pub = r.get("published", {})
        if "mfu_recomputed_pct" in r.get("check", {}) and "mfu_pct" in pub:
            if abs(r["check"]["mfu_recomputed_pct"] - pub["mfu_pct"]) > 0.1:
                failures.append(f"{r['id']}: MFU {pub['mfu_pct']} not reproduced ({r['check']['mfu_recomputed_pct']})")
        if r["id"].startswith("megatron-sc21-"):
            a = r["model"]["architecture"]
            L, h, s, V = a["layers"], a["hidden"], a["seq_len"], a["vocab"]
            fpt = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
            tok = pub["tflops_per_gpu"] * 1e12 / fpt
            if abs(tok - r["tokens_per_s_per_gpu"]) > 0.01 * tok:
                failures.append(f"{r['id']}: derived tokens/s {r['tokens_per_s_per_gpu']} != {tok:.2f}")
            if round(100 * pub["tflops_per_gpu"] / 312) != pub["pct_of_peak"]:
                failures.append(f"{r['id']}: {pub['tflops_per_gpu']}/312 does not round to {pub['pct_of_peak']}%")
            agg = pub["tflops_per_gpu"] * r["hardware"]["gpus"] / 1000
            if abs(agg - pub["aggregate_pflops"]) > 0.02 * pub["aggregate_pflops"]:
                failures.append(f"{r['id']}: TFLOP/s x GPUs = {agg:.1f} PF vs published {pub['aggregate_pflops']}")
        if r["id"].startswith("megatron-h100-weak-"):
            a = r["model"]["architecture"]
            L, h, s, V = a["layers"], a["hidden"], a["seq_len"], a["vocab"]
            fpt = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))
            tok = pub["tflops_per_gpu"] * 1e12 / fpt
            if abs(tok - r["tokens_per_s_per_gpu"]) > 0.01 * tok:
                failures.append(f"{r['id']}: derived tokens/s {r['tokens_per_s_per_gpu']} != {tok:.2f}")
            if abs(100 * pub["tflops_per_gpu"] / 989 - pub["mfu_pct"]) > 0.51:
                failures.append(f"{r['id']}: {pub['tflops_per_gpu']}/989 is not {pub['mfu_pct']}%")
            agg = pub["tflops_per_gpu"] * r["hardware"]["gpus"] / 1000
            if abs(agg - pub["aggregate_pflops"]) > 0.01 * pub["aggregate_pflops"]:
                failures.append(f"{r['id']}: TFLOP/s x GPUs = {agg:.1f} PF vs published {pub['aggregate_pflops']}")
        if r["id"].startswith("foundry-"):
            b = r["batch"]
            g = r["hardware"]["gpus"]
            if b["global_batch"] * b["seq_len"] != b["global_batch_tokens"]:
                failures.append(f"{r['id']}: GlobalBatchSize x SeqLen != GlobalBatchSize (T)")
            if abs(pub["tokens_per_s"] / g - pub["tokens_per_s_per_gpu"]) > 1:
                failures.append(f"{r['id']}: T/s / GPUs != T/s/GPU")
            if -(-b["global_batch"] // (g * b["micro_batch"])) != b["grad_accum"]:
                failures.append(f"{r['id']}: GradAccum is not ceil(GBS / GPUs / MBS)")

    cli = None if args.no_cli else find_cli(args.cli)
    if not args.no_cli and cli is None:
        failures.append("vramcalc CLI not found (build it or pass --cli, or --no-cli)")
    if cli:
        for c in configs:
            p = subprocess.run([cli, "estimate", "-"], input=json.dumps(c["config"]), capture_output=True, text=True)
            if p.returncode != 0:
                failures.append(f"{c['id']}: vramcalc rejects the configuration: {p.stderr.strip()}")

    ic = json.load(open(os.path.join(HERE, "gpu_interconnect.json")))
    if cli:
        p = subprocess.run([cli, "presets"], capture_output=True, text=True)
        cat = {g["id"] for g in json.loads(p.stdout)["gpus"]}
        have = {g["id"] for g in ic["gpus"]}
        if cat != have:
            failures.append(f"gpu_interconnect.json vs catalog: {sorted(cat ^ have)}")

    table = collections.Counter((r["source_group"], r["split"], r["setup_fully_known"]) for r in rows)
    print("%-12s %-11s %5s %5s" % ("source", "split", "known", "other"))
    for src in sorted({k[0] for k in table}):
        for split in ("calibration", "test"):
            print("%-12s %-11s %5d %5d" % (src, split, table[(src, split, True)], table[(src, split, False)]))
    known = [r for r in rows if r["setup_fully_known"]]
    print(f"rows {len(rows)}; setup fully known {len(known)} "
          f"(calibration {sum(r['split'] == 'calibration' for r in known)}, test {sum(r['split'] == 'test' for r in known)})")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
