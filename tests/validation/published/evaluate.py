#!/usr/bin/env python3
"""Compare vramcalc's estimates with the published GPU-memory figures of rows.jsonl.

configs.jsonl holds, per row of rows.jsonl, either the vramcalc configuration of that run
({"id", "config", "metric", "published_gib", "assumptions"}) or why it cannot be expressed
({"id", "excluded"}). For each included row this runs `vramcalc estimate`, reads the metric the
row's source reports (peak_allocated_bytes for max_memory_allocated, peak_reserved_bytes for
max_memory_reserved, total_bytes for process/nvidia-smi memory) and prints the error against
the published GiB. Rows of kind "fits" (a run that completed, no memory number) are checked for
fitting the GPU instead. Entries marked {"unmodelled": "..."} describe runs with an optimisation vramcalc does
not model (torch.compile, float8 linears): the same run without it is estimated, must fit the GPU (the run did),
and its difference from the published figure is shown apart, outside the error statistics.

    python3 tests/validation/published/evaluate.py [--cli build/dev/cli/vramcalc] [--markdown|--check-goal|--check-fits]

Python standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
GIB = 2 ** 30
METRICS = ("peak_allocated_bytes", "peak_reserved_bytes", "total_bytes")


def source_group(row_id):
    for prefix, name in (("tt-tut-", "torchtune tutorials"), ("tt-", "torchtune README"),
                         ("lg-hub-", "LitGPT config hub"), ("lg-rt-", "LitGPT resource tables"),
                         ("hf-peft-mmqa-", "PEFT MetaMathQA"), ("hf-peft-", "PEFT docs/README"),
                         ("titan-", "torchtitan"), ("foundry-", "llm-foundry"), ("megatron-", "Megatron-LM"),
                         ("unsloth-", "Unsloth README"), ("qlora-", "QLoRA")):
        if row_id.startswith(prefix):
            return name
    return "other"


def find_cli(explicit):
    candidates = [explicit] if explicit else [os.path.join(REPO, "build", "dev", "cli", "vramcalc"),
                                              os.path.join(REPO, "build", "native", "cli", "vramcalc")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit("vramcalc CLI not found (tried %s); build it or pass --cli" % ", ".join(c for c in candidates if c))


def estimate(cli, config):
    p = subprocess.run([cli, "estimate", "-"], input=json.dumps(config), capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip() or "exit status %d" % p.returncode)
    return json.loads(p.stdout)


def median_max(values):
    if not values:
        return None, None
    return statistics.median(values), max(values)


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", help="path to the vramcalc binary (default: build/dev/cli/vramcalc, then build/native)")
    ap.add_argument("--configs", default=os.path.join(HERE, "configs.jsonl"))
    ap.add_argument("--rows", default=os.path.join(HERE, "rows.jsonl"))
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables (as in EVALUATION.md)")
    ap.add_argument("--check-fits", action="store_true",
                    help="only estimate the runs that really ran (fits rows, rows with unmodelled optimisations); "
                         "exit 1 if any is estimated not to fit (the ctest published_runs_fit)")
    ap.add_argument("--check-goal", action="store_true",
                    help="exit 1 unless the rows whose setup is fully known meet the goal: median |error| <= 5%%, "
                         "max <= 10%% (the ctest published_fully_known_goal)")
    args = ap.parse_args()
    cli = find_cli(args.cli)

    rows = {}
    with open(args.rows) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                rows[r["id"]] = r
    entries = []
    with open(args.configs) as f:
        for line in f:
            if line.strip():
                entries.append(json.loads(line))
    missing = [i for i in rows if i not in {e["id"] for e in entries}]
    unknown = [e["id"] for e in entries if e["id"] not in rows]

    results, fits_results, bounds, excluded, failures = [], [], [], [], []
    if args.check_fits:
        ran = [e for e in entries if "config" in e and (rows.get(e["id"], {}).get("kind") == "fits" or "unmodelled" in e)]
        bad = []
        for e in ran:
            est = estimate(cli, e["config"])
            print("%-46s %7.2f of %7.2f GiB  %s" % (e["id"], est["total_bytes"] / GIB, est["gpu"]["capacity_bytes"] / GIB,
                                                   "fits" if est["fits"] else "DOES NOT FIT"))
            if not est["fits"]:
                bad.append(e["id"])
        print("%d runs that ran, %d estimated not to fit" % (len(ran), len(bad)))
        return 1 if bad or not ran else 0
    for e in entries:
        row = rows.get(e["id"], {})
        if "excluded" in e:
            excluded.append((e["id"], row.get("kind", "?"), e["excluded"]))
            continue
        try:
            est = estimate(cli, e["config"])
        except RuntimeError as err:
            failures.append((e["id"], str(err)))
            continue
        if row.get("kind") == "fits":
            fits_results.append({"id": e["id"], "total_gib": est["total_bytes"] / GIB,
                                 "capacity_gib": est["gpu"]["capacity_bytes"] / GIB, "fits": est["fits"]})
            continue
        metric = e["metric"]
        if metric not in METRICS:
            failures.append((e["id"], "unknown metric %r" % metric))
            continue
        est_gib = est[metric] / GIB
        pub = e["published_gib"]
        if "unmodelled" in e:
            bounds.append({"id": e["id"], "published": pub, "estimated": est_gib, "fits": est["fits"],
                           "why": e["unmodelled"]})
            continue
        results.append({"id": e["id"], "metric": metric, "published": pub, "estimated": est_gib,
                        "error": 100.0 * (est_gib - pub) / pub, "phase": est.get("peak_phase", "?"),
                        "known": bool(row.get("setup_fully_known")), "group": source_group(e["id"]),
                        "metric_assumed": row.get("metric") == "unknown",
                        "multi_gpu": e["config"].get("strategy", "single") != "single"})

    if args.check_goal:
        known = [r for r in results if r["known"]]
        med, mx = median_max([abs(r["error"]) for r in known])
        for r in known:
            print("%-46s %+7.1f%%" % (r["id"], r["error"]))
        print("%d fully known rows: median |error| %s%%, max %s%% (goal: 5%% and 10%%)" % (len(known), fmt(med), fmt(mx)))
        return 0 if known and not failures and med <= 5 and mx <= 10 else 1

    md = args.markdown
    short = {"peak_allocated_bytes": "allocated", "peak_reserved_bytes": "reserved", "total_bytes": "total"}
    if md:
        print("| id | metric | published GiB | estimated GiB | error % | peak phase |")
        print("|---|---|---:|---:|---:|---|")
    else:
        print("%-46s %-9s %9s %9s %8s  %s" % ("id", "metric", "published", "estimated", "error%", "peak phase"))
    for r in results:
        metric = short[r["metric"]] + ("*" if r["metric_assumed"] else "")
        if md:
            print("| %s | %s | %.2f | %.2f | %+.1f | %s |" % (r["id"], metric, r["published"], r["estimated"], r["error"], r["phase"]))
        else:
            print("%-46s %-9s %9.2f %9.2f %+8.1f  %s" % (r["id"], metric, r["published"], r["estimated"], r["error"], r["phase"]))
    print("" if md else "")
    print("(* = the source does not name its counter; the metric compared is the assumption in configs.jsonl)")

    def summary(label, subset):
        med, mx = median_max([abs(r["error"]) for r in subset])
        within = lambda t: sum(abs(r["error"]) <= t for r in subset)
        if md:
            print("| %s | %d | %s | %s | %d | %d |" % (label, len(subset), fmt(med), fmt(mx), within(5), within(10)))
        else:
            print("%-40s n=%3d  median |error| %5s%%  max |error| %6s%%  within 5%%: %3d  within 10%%: %3d"
                  % (label, len(subset), fmt(med), fmt(mx), within(5), within(10)))

    print()
    print("## Summary" if md else "Summary")
    if md:
        print()
        print("| rows | n | median abs error % | max abs error % | within 5 % | within 10 % |")
        print("|---|---:|---:|---:|---:|---:|")
    summary("all included memory rows", results)
    summary("setup_fully_known rows", [r for r in results if r["known"]])
    summary("rows whose source names the counter", [r for r in results if not r["metric_assumed"]])
    summary("single-GPU rows", [r for r in results if not r["multi_gpu"]])
    summary("multi-GPU rows (FSDP / DeepSpeed)", [r for r in results if r["multi_gpu"]])
    for g in sorted({r["group"] for r in results}):
        summary("  " + g if not md else g, [r for r in results if r["group"] == g])
    n_mem_excl = sum(1 for _, kind, _ in excluded if kind == "memory")
    n_fit_excl = sum(1 for _, kind, _ in excluded if kind == "fits")
    print()
    print(("%d rows: %d memory rows compared, %d fits rows checked, %d excluded (%d memory, %d fits)"
           % (len(entries), len(results), len(fits_results), len(excluded), n_mem_excl, n_fit_excl)))
    worst = sorted(results, key=lambda r: -abs(r["error"]))[:5]
    print()
    print("Worst 5: " + ", ".join("%s %+.1f%%" % (r["id"], r["error"]) for r in worst))

    print()
    print("## Fits rows" if md else "Fits rows (throughput-only runs: the estimate must fit the GPU)")
    if fits_results:
        bad = [f for f in fits_results if not f["fits"]]
        for f in fits_results:
            print(("- " if md else "  ") + "%s: %.2f of %.2f GiB %s" % (f["id"], f["total_gib"], f["capacity_gib"],
                                                                     "fits" if f["fits"] else "DOES NOT FIT"))
        print("%d of %d fits rows estimated not to fit%s" % (len(bad), len(fits_results),
                                                             (": " + ", ".join(f["id"] for f in bad)) if bad else ""))
    else:
        print("none included")

    print()
    print("## Rows with unmodelled optimisations" if md else
          "Rows with unmodelled optimisations (estimated without them: must fit; the difference is shown, not scored)")
    if bounds:
        for b in bounds:
            print(("- " if md else "  ") + "%s: published %.2f, estimated %.2f GiB (%+.1f%%), %s; %s" % (
                b["id"], b["published"], b["estimated"], 100.0 * (b["estimated"] - b["published"]) / b["published"],
                "fits" if b["fits"] else "DOES NOT FIT", b["why"]))
        print("%d of %d estimated to fit" % (sum(b["fits"] for b in bounds), len(bounds)))
    else:
        print("none included")

    print()
    print("## Excluded" if md else "Excluded")
    if md:
        print()
        print("| id | kind | reason |")
        print("|---|---|---|")
    for i, kind, why in excluded:
        print(("| %s | %s | %s |" % (i, kind, why.replace("|", "/"))) if md else "  %-46s %-6s %s" % (i, kind, why))
    if missing or unknown or failures:
        print()
        for i in missing:
            print("MISSING from configs.jsonl: %s" % i)
        for i in unknown:
            print("NOT IN rows.jsonl: %s" % i)
        for i, err in failures:
            print("CLI FAILED for %s: %s" % (i, err))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
