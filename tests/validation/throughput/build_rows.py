#!/usr/bin/env python3
"""How rows.jsonl and configs.jsonl were made: the transcriptions below, with every quoted line pulled verbatim
from git clones of the sources at the cited commits (an assertion fails if a quoted line is not found exactly
once). Needs local clones laid out as MIRRORS/<owner>+<name>/repo (pytorch/torchtitan, mosaicml/llm-foundry,
NVIDIA/Megatron-LM, pytorch/torchtune); MIRRORS defaults to /work/.mirror. The tests do not run it.

    MIRRORS=/path/to/clones python3 tests/validation/throughput/build_rows.py
"""
import json, subprocess, os, re

OUT = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(OUT, "..", "..", ".."))
M = os.environ.get("MIRRORS", "/work/.mirror")


def show(repo, commit, path):
    return subprocess.run(["git", "-C", f"{M}/{repo}/repo", "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=True).stdout


def line_with(text, *needles):
    hits = [l for l in text.splitlines() if all(n in l for n in needles)]
    assert len(hits) == 1, (needles, hits)
    return hits[0]


rows, configs = [], []

# ------------------------------------------------------------------------------------------------ common bits
A100_PEAK = {"bf16_dense_tflops": 312, "source": "NVIDIA A100 datasheet (dense bf16/fp16 tensor); the figure the source's own MFU code uses"}
H100_PEAK = {"bf16_dense_tflops": 989, "source": "NVIDIA H100 SXM datasheet (1,979 sparse / 2); the figure the source's own MFU code uses"}


def add(row, config, config_notes=None, unmodelled=None, tkey=None):
    assert tkey, row["id"]
    row["_tkey"] = tkey
    rows.append(row)
    c = {"id": row["id"], "config": config}
    if config_notes:
        c["assumptions"] = config_notes
    if unmodelled:
        c["unmodelled"] = unmodelled
    configs.append(c)


# ================================================================================================ torchtitan
TT = "pytorch+torchtitan"
TT_URL = "https://github.com/pytorch/torchtitan/blob/{c}/{p}"

# ---- (1) April 2024, 64 x A100 80GB, FSDP2 (docs/performance.md @157a12c, tables added in 1ea476e)
c_a100 = "157a12c562288b3bccb077003a97f18a4ca657aa"
doc = show(TT, c_a100, "docs/performance.md")
llama = {  # catalog ids and the counts torchtitan's get_num_params returns (embedding included at this commit)
    "8B": ("meta-llama/Meta-Llama-3-8B", 8030261248, 32, 32, 128, 8192, "llama3_8b.toml"),
    "70B-l3": ("meta-llama/Meta-Llama-3-70B", 70553706496, 80, 64, 128, 8192, "llama3_70b.toml"),
    "13B": ("llama-2-13b", 13015864320, 40, 40, 128, 4096, "llama2_13b.toml"),
    "70B-l2": ("llama-2-70b", 68976648192, 80, 64, 128, 4096, "llama2_70b.toml"),
}
a100_rows = [
    # table, size key, cell text needles, batch, ac, wps, mfu
    ("llama3", "8B", ("| 8B | 1 | selective layer |",), 1, "selective layer", 2904, 56.8),
    ("llama3", "8B", ("| 8B | 1 | selective op |",), 1, "selective op", 2973, 58.2),
    ("llama3", "70B-l3", ("| 70B | 1 | full |",), 1, "full", 331, 51.7),
    ("llama2", "13B", ("| 13B | 2 | no |",), 2, "no", 2162, 61.1),
    ("llama2", "13B", ("| 13B | 2 | selective layer |",), 2, "selective layer", 1914, 54.1),
    ("llama2", "13B", ("| 13B | 2 | selective op |",), 2, "selective op", 1904, 53.8),
    ("llama2", "70B-l2", ("| 70B | 1[^1] | selective op |",), 1, "selective op", 355, 50.8),
    ("llama2", "70B-l2", ("| 70B | 2 | full |",), 2, "full", 353, 50.5),
]
caption = {
    "llama3": "Below are the WPS (word per second, or more accurately, token per second) and MFU (model FLOPS utilization) results which torchtitan achieves on Llama 3 models with FSDP2 on 64 A100 (80GB) GPUs.",
    "llama2": "Below are the WPS and MFU results which torchtitan achieves on Llama 2 models with FSDP2 on 64 A100 (80GB) GPUs.",
}
idx = {"llama3": 0, "llama2": 0}
for table, key, needles, mbs, ac, wps, mfu in a100_rows:
    cat, n_params, L, H, Dh, seq, toml = llama[key]
    idx[table] += 1
    q = line_with(doc, *needles)
    assert caption[table] in doc
    ac_cfg = {"selective layer": {"mode": "layers", "every": 2}, "selective op": "selective-op", "full": "full", "no": "none"}[ac]
    size = key.split("-")[0]
    rid = f"titan-a100-{table}-{size.lower()}-b{mbs}-ac-{ac.replace(' ', '')}"
    missing, assumptions = [], []
    if ac == "selective layer":
        missing.append("which layers 'selective layer' checkpoints: the toml sets selective_ac_option 'op', so the run overrode it with an integer that is not stated (config_manager default '2' = every other layer, assumed)")
    assumptions += [
        f"sequence length {seq}: train_configs/{toml} @157a12c (not stated in the table)",
        "FSDP2 over all 64 GPUs (the doc: 'FSDP2 (1D parallelism)'), although the 70B tomls preset tensor_parallel_degree 8",
        "MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) (parallelize_llama.py @1ea476e)",
        "compile false, fp8_linear off (toml defaults at this commit)",
        "A100 80GB form factor (SXM/PCIe), nodes and network not stated; 8 GPUs per node assumed",
    ]
    flops = 6 * n_params + 12 * L * H * Dh * seq
    add({
        "id": rid,
        "source_group": "torchtitan",
        "source": {"title": f"torchtitan docs/performance.md, {'Llama 3' if table == 'llama3' else 'Llama 2'} performance numbers (64 A100)",
                   "repo": "pytorch/torchtitan", "path": "docs/performance.md", "commit": c_a100,
                   "first_added": "1ea476e9f24be439eda358aa864f45c1c37a8a88 (2024-04-24)",
                   "url": TT_URL.format(c=c_a100, p="docs/performance.md"),
                   "table": f"{table} table, row {idx[table]}", "quote": caption[table] + " || " + q},
        "framework": "torchtitan (git 157a12c, 2024-04-24)",
        "hardware": {"gpu": "NVIDIA A100 80GB (form factor not stated)", "gpu_catalog_id": "a100-80gb", "gpus": 64,
                     "nodes": None, "gpus_per_node": None, "interconnect": None, "interconnect_stated": False,
                     "peak": A100_PEAK},
        "model": {"catalog_id": cat, "parameters": n_params},
        "batch": {"local_batch": mbs, "micro_batch": mbs, "grad_accum": 1, "global_batch": mbs * 64, "seq_len": seq,
                  "global_batch_tokens": mbs * 64 * seq},
        "precision": "bf16 mixed (FSDP2 param bf16, reduce fp32, fp32 master/optimizer)",
        "optimizer": "torch.optim.AdamW (toml), fp32 states",
        "parallel": {"dp": 64, "fsdp": "FSDP2 fully_shard over 64", "tp": 1, "pp": 1, "cp": 1},
        "activation_checkpointing": ac,
        "compile": False, "float8": False,
        "kernels": "SDPA (flash) attention; fused_rmsnorm for llama3_8b/llama2_13b tomls, plain rmsnorm for the 70B tomls",
        "published": {"tokens_per_s_per_gpu": wps, "mfu_pct": mfu, "text": q.strip()},
        "tokens_per_s_per_gpu": wps, "tokens_per_s_per_gpu_basis": "published (WPS = local tokens / time / model_parallel_size, train.py @157a12c)",
        "flops_definition": "torchtitan get_num_flop_per_token @157a12c: 6*N + 12*L*H*Dh*S, N = all parameters incl. embedding and output, attention not halved for causality, no recompute; peak 312e12 for any 'A100' (utils.get_peak_flops)",
        "model_flops_per_token": flops,
        "check": {"mfu_recomputed_pct": round(100 * flops * wps / 312e12, 2)},
        "setup_fully_known": not missing, "missing": missing, "assumptions": assumptions,
    }, {
        "framework": "torchtitan", "framework_version": "2024-04-24", "model": cat, "seq_len": seq, "micro_batch": mbs,
        "grad_accum": 1, "precision": "bf16-mixed", "optimizer": "adamw", "strategy": "fsdp", "fsdp_version": 2,
        "gpus": 64, "gpu": "a100-80gb", "gpus_per_node": 8, "checkpointing": ac_cfg, "compile": False, "attention": "flash",
    }, ["gpus_per_node 8 and the inter-node network (0 = the GPU's reference system, DGX A100 8x200 Gb/s) are not stated"], tkey="titan-a100-" + table)

# ---- (2) August 2024, Llama 3.1 405B on 128 H100 (95GB HBM2e, lower TDP), FSDP 16 x TP 8 (3faaa1a)
c_405 = "3faaa1a0dee68ce028400e3dafd1735d152cb4f8"
doc = show(TT, c_405, "docs/performance.md")
n405 = 405853388800
emb405 = 128256 * 16384
flops405 = 6 * (n405 - emb405) + 12 * 126 * 128 * 128 * 8192
cap405 = "Below is the performance result of 405B model with optimizations we have developed. We do see OOM for 1D parallelism (FSDP2), so we only tested 2D parallelism (FSDP2 + Tensor Parallel)."
assert cap405 in doc
for i, (needle, wps, mfu, opt) in enumerate([("| 405B | 2 | full | 109 |", 109, 29.0, "None"),
                                               ("| 405B | 2 | full | 177 |", 177, 23.46, "Float8"),
                                               ("| 405B | 2 | full | 185 |", 185, 24.52, "Float8 + Async TP")], 1):
    q = line_with(doc, needle)
    fp8 = opt != "None"
    add({
        "id": f"titan-405b-h100-2d-{['bf16', 'float8', 'float8-asynctp'][i - 1]}",
        "source_group": "torchtitan",
        "source": {"title": "torchtitan docs/performance.md, Llama 3.1 performance numbers (405B, 128 H100)",
                   "repo": "pytorch/torchtitan", "path": "docs/performance.md", "commit": c_405,
                   "url": TT_URL.format(c=c_405, p="docs/performance.md"), "table": f"405B table, row {i}",
                   "quote": cap405 + " || " + q + " || Here, we use local batch size 2 (global batch size = local batch size 2 * number of FSDP ranks 16 = 32)."},
        "framework": "torchtitan (git 3faaa1a, 2024-08-23)",
        "hardware": {"gpu": "NVIDIA H100 95GB HBM2e SXM, lower TDP (footnote 1)", "gpu_catalog_id": None, "gpus": 128,
                     "nodes": 16, "gpus_per_node": 8, "interconnect": None, "interconnect_stated": False,
                     "peak": {"bf16_dense_tflops": None, "source": "footnote: 'the actual peak TFLOPs number is between SXM and NVL, and we don't know its exact value'; torchtitan divided by 989e12"}},
        "model": {"catalog_id": "meta-llama/Llama-3.1-405B", "parameters": n405},
        "batch": {"local_batch": 2, "micro_batch": 2, "grad_accum": 1, "global_batch": 32, "seq_len": 8192,
                  "global_batch_tokens": 32 * 8192},
        "precision": "bf16 mixed" + (" + float8 linears (torchao dynamic, fsdp float8 all-gather per toml)" if fp8 else ""),
        "optimizer": "torch.optim.AdamW, fp32 states",
        "parallel": {"dp": 16, "fsdp": "FSDP2 over 16", "tp": 8, "pp": 1, "cp": 1, "async_tp": opt.endswith("Async TP")},
        "activation_checkpointing": "full", "compile": "unknown (train_configs/llama3_405b.toml @3faaa1a sets compile = true; the row says 'Optimizations: None')",
        "float8": fp8,
        "published": {"tokens_per_s_per_gpu": wps, "mfu_pct": mfu, "text": q.strip()},
        "tokens_per_s_per_gpu": wps, "tokens_per_s_per_gpu_basis": "published (WPS per device)",
        "flops_definition": "6*N_no_embedding + 12*L*H*Dh*S (train.py @3faaa1a passes get_num_params(model, exclude_embedding=True)); the bf16 row divides by 989e12; the Float8 rows' MFU match a 1,979e12 (fp8 dense) denominator",
        "model_flops_per_token": flops405,
        "check": {"mfu_recomputed_pct_at_989": round(100 * flops405 * wps / 989e12, 2),
                  "mfu_recomputed_pct_at_1979": round(100 * flops405 * wps / 1979e12, 2)},
        "setup_fully_known": False,
        "missing": ["GPU peak (HBM2e H100 at lower TDP; the source says it does not know it)",
                    "whether torch.compile was on (toml default true, row says 'None')",
                    "network between the 16 nodes"] + (["float8 linears (not a bf16 run)"] if fp8 else []),
        "assumptions": ["seq_len 8192: train_configs/llama3_405b.toml @3faaa1a", "8 GPUs per node (TP 8 within a node)"],
        "doubtful": ("this commit corrected the bf16 row from 118 WPS / 37.1% to 109 / 29.0% ('We have updated the peak FLOPs for H100'): the WPS changed too, not only the MFU" if i == 1
                     else "the published MFU reproduces only with a 1,979 TFLOP/s (fp8 dense) denominator, the bf16 row's with 989: the MFU columns are not comparable; use the WPS"),
    }, {
        "framework": "torchtitan", "framework_version": "2024-08-23", "model": "meta-llama/Llama-3.1-405B", "seq_len": 8192,
        "micro_batch": 2, "grad_accum": 1, "precision": "bf16-mixed", "optimizer": "adamw", "strategy": "fsdp", "fsdp_version": 2,
        "tp": 8, "gpus": 128, "gpus_per_node": 8, "checkpointing": "full", "compile": True, "attention": "flash",
        "gpu": {"name": "NVIDIA H100 95GB HBM2e (lower TDP)", "memory_gib": 87.5, "bf16_tflops": 989, "link_gbps": 450, "pcie_gbps": 64, "compute_capability": 9.0},
    }, ["bf16_tflops 989 is the SXM figure torchtitan divided by, an upper bound for this part (source footnote)",
        "memory_gib 87.5 = 94 GB (the doc says '128 H100 (94GB memory)', footnote 'H100(95GB)')", "compile true from the toml"],
        ["float8 linears (torchao)"] if fp8 else None, tkey="titan-405b-aug2024")

# ---- (3) December 2024, Grand Teton H100 96GB HBM2e at 500 W (docs/performance.md @d4c86e3, torchtitan 9dec370)
c_gt = "d4c86e3758a84cf23e2e879ab3c995cba9d5e410"
doc = show(TT, c_gt, "docs/performance.md")
hw_gt = {"gpu": "NVIDIA H100 96GB HBM2e, 500 W power limit (Grand Teton)", "gpu_catalog_id": None,
         "interconnect": "Each host has 8 NVIDIA H100 GPUs fully connected with NVLink; hosts inter-connected with backend RDMA network with 400 Gb/s per GPU",
         "interconnect_stated": True,
         "peak": {"bf16_dense_tflops": None, "source": "footnote 2: 'the actual peak TFLOPs number is between SXM and NVL, and we don't know its exact value' (NVL dense 835, SXM dense 989)"}}
gt_gpu = {"name": "NVIDIA H100 96GB HBM2e (Grand Teton, 500 W)", "memory_gib": 94.5, "bf16_tflops": 989,
          "bandwidth_gbps": 2400, "link_gbps": 450, "pcie_gbps": 64, "compute_capability": 9.0}
gt_versions = "torch 1963fc8 (2024-12-23), torchao eab345c, torchtitan 9dec370 (2024-12-26)"
gt_common_missing = ["GPU peak (500 W HBM2e H100; the source says it is between NVL and SXM and not known)"]
gt_tables = []
# (table no., caption needle, rows: (needle, id-suffix, tps, extra dict))
T1 = "**Table 1** 1D Parallelism (FSDP). Llama 3.1 8B model. 8 GPUs. Local batch size 2, global batch size 16. Selective activation checkpointing."
T2 = "**Table 2** FSDP + CP + torch.compile + Float8. Llama 3.1 8B model. 8 GPUs. Local batch size 1. Full activation checkpointing."
T3 = "**Table 3** 1D Parallelism (FSDP). Llama 3.1 8B model. 128 GPUs. Local batch size 2, global batch size 256. Selective activation checkpointing."
T4 = "**Table 4** 2D parallelism (FSDP + TP) + torch.compile + Float8. Llama 3.1 70B model. 256 GPUs (FSDP 32, TP 8). Local batch size 16, global batch size 512. Full activation checkpointing."
T5 = "**Table 5** 3D parallelism (FSDP + TP + PP) + torch.compile + Float8 + AsyncTP. Llama 3.1 405B model. 512 GPUs (FSDP 8, TP 8, PP8). Local batch size 32, global batch size 256. Full activation checkpointing."
T6 = "**Table 6** 4D parallelism (FSDP + TP + PP + CP) + torch.compile + Float8 + AsyncTP + 1F1B. Llama 3.1 405B model. 512 GPUs (TP 8, PP8). Local batch size 8. Full activation checkpointing."
for t in (T1, T2, T3, T4, T5, T6):
    assert t in doc, t


def gt_row(tno, cap, i, needle, rid, tps, model, n, gpus, local, seq, seq_stated, ac, compile_, fp8, asynctp, fsdp, tp=1, pp=1,
           cp=1, sched=None):
    q = line_with(doc, needle)
    missing = list(gt_common_missing)
    assumptions = [f"versions: {gt_versions}"]
    if not seq_stated:
        missing.append("sequence length not stated (8192 from train_configs/llama3_*.toml @9dec370 assumed)")
    if fp8:
        missing.append("float8 linears (torchao, tensorwise): not a bf16 run")
    if pp > 1:
        assumptions.append("pipeline micro-batches: torchtitan default pipeline_parallel_microbatches = pp degree (8), so 8 micro-batches of %d; interleaved 1F1B: generate_split_points default of 2 stages per rank (config_manager / pipelining_utils @9dec370)" % (local // 8))
    dp = gpus // (tp * pp * cp)
    cfg = {"framework": "torchtitan", "framework_version": "2024-12-26", "model": model, "seq_len": seq,
           "micro_batch": local if pp == 1 else local // 8, "grad_accum": 1 if pp == 1 else 8,
           "precision": "bf16-mixed", "optimizer": "adamw", "strategy": "fsdp", "fsdp_version": 2, "gpus": gpus,
           "gpus_per_node": 8, "inter_node_gbps": 50, "gpu": gt_gpu,
           "checkpointing": {"selective": "selective-op", "full": "full"}[ac], "compile": compile_, "attention": "flash"}
    if tp > 1: cfg["tp"] = tp
    if pp > 1:
        cfg["pp"] = pp
        cfg["pp_schedule"] = sched
        if sched == "interleaved-1f1b": cfg["pp_stages_per_rank"] = 2
    if cp > 1: cfg["cp"] = cp
    unm = []
    if fp8: unm.append("float8 linears (torchao tensorwise, float8 FSDP all-gather)")
    if asynctp: unm.append("async TP (collective matmul overlap)")
    add({
        "id": rid, "source_group": "torchtitan",
        "source": {"title": f"torchtitan docs/performance.md Table {tno} (Grand Teton H100)", "repo": "pytorch/torchtitan",
                   "path": "docs/performance.md", "commit": c_gt, "url": TT_URL.format(c=c_gt, p="docs/performance.md"),
                   "also_at": "benchmarks/llama3_h100_202412_torchtitan.md (820504e, identical tables)",
                   "table": f"Table {tno}, row {i}", "quote": cap + " || " + q},
        "framework": "torchtitan (9dec370, 2024-12-26)",
        "hardware": dict(hw_gt, gpus=gpus, nodes=gpus // 8, gpus_per_node=8),
        "model": {"catalog_id": model, "parameters": n},
        "batch": {"local_batch": local, "micro_batch": cfg["micro_batch"], "grad_accum": cfg["grad_accum"],
                  "global_batch": local * dp, "seq_len": seq, "global_batch_tokens": local * dp * seq},
        "precision": "bf16 mixed (FSDP2 param bf16, reduce fp32)" + (" + float8 linears" if fp8 else ""),
        "optimizer": "torch.optim.AdamW, fp32 states",
        "parallel": {"dp": dp, "fsdp": fsdp, "tp": tp, "pp": pp, "cp": cp, "pp_schedule": sched, "async_tp": asynctp},
        "activation_checkpointing": {"selective": "selective (op-level SAC, toml default)", "full": "full"}[ac],
        "compile": compile_, "float8": fp8,
        "published": {"tokens_per_s_per_gpu": tps, "text": q.strip()},
        "tokens_per_s_per_gpu": tps,
        "tokens_per_s_per_gpu_basis": "published TPS/GPU (logged every 10 iterations, read at the 90th; train.py @9dec370: tokens / time / non_data_parallel_size)",
        "flops_definition": "not reported per row; the doc: 8B FSDP without Float8 on 8 or 128 GPUs 'achieves 33% to 39% MFU' with torchtitan's 6*N_no_embedding + 12*L*H*Dh*S over 989e12",
        "setup_fully_known": False, "missing": missing, "assumptions": assumptions,
    }, cfg, ["gpu: custom entry; bf16_tflops 989 is the SXM peak torchtitan divides by, an upper bound for this 500 W part; bandwidth 2400 GB/s as stated; link_gbps 450 (NVLink 4 per direction) assumed from 'fully connected with NVLink'",
             "inter_node_gbps 50 = the stated 400 Gb/s per GPU"], unm or None, tkey=f"titan-gt-table{tno}")


N8, N70, N405 = 8030261248, 70553706496, 405853388800
M8, M70, M405 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-405B"
gt_row(1, T1, 1, "| FSDP | 5,762 |", "titan-gt-t1-8b-fsdp", 5762, M8, N8, 8, 2, 8192, False, "selective", False, False, False, "FSDP2 over 8")
gt_row(1, T1, 2, "| FSDP + torch.compile | 6,667 |", "titan-gt-t1-8b-fsdp-compile", 6667, M8, N8, 8, 2, 8192, False, "selective", True, False, False, "FSDP2 over 8")
gt_row(1, T1, 3, "| FSDP + torch.compile + Float8 | 8,532 |", "titan-gt-t1-8b-fsdp-compile-float8", 8532, M8, N8, 8, 2, 8192, False, "selective", True, True, False, "FSDP2 over 8")
for i, (needle, cp, seq, tps) in enumerate([("| FSDP 8, CP 1 | 32768 | 3,890 |", 1, 32768, 3890), ("| FSDP 4, CP 2 | 65536 | 2,540 |", 2, 65536, 2540),
                                            ("| FSDP 2, CP 4 | 131072 | 1,071 |", 4, 131072, 1071), ("| FSDP 1, CP 8 | 262144 | 548 |", 8, 262144, 548)], 1):
    gt_row(2, T2, i, needle, f"titan-gt-t2-8b-cp{cp}-s{seq}", tps, M8, N8, 8, 1, seq, True, "full", True, True, False,
           f"FSDP2 over 8 (mesh dp_shard x cp; parameters sharded over all 8)", cp=cp)
gt_row(3, T3, 1, "| FSDP | 5,605 |", "titan-gt-t3-8b-fsdp-128", 5605, M8, N8, 128, 2, 8192, False, "selective", False, False, False, "FSDP2 over 128")
gt_row(3, T3, 2, "| FSDP + torch.compile | 6,514 |", "titan-gt-t3-8b-fsdp-compile-128", 6514, M8, N8, 128, 2, 8192, False, "selective", True, False, False, "FSDP2 over 128")
gt_row(3, T3, 3, "| FSDP + torch.compile + Float8 | 8,380 |", "titan-gt-t3-8b-fsdp-compile-float8-128", 8380, M8, N8, 128, 2, 8192, False, "selective", True, True, False, "FSDP2 over 128")
gt_row(4, T4, 1, "| 2D | 829 |", "titan-gt-t4-70b-2d", 829, M70, N70, 256, 16, 8192, False, "full", True, True, False, "FSDP2 over 32", tp=8)
gt_row(4, T4, 2, "| 2D + AsyncTP | 876 |", "titan-gt-t4-70b-2d-asynctp", 876, M70, N70, 256, 16, 8192, False, "full", True, True, True, "FSDP2 over 32", tp=8)
gt_row(5, T5, 1, "| 1F1B | 100 |", "titan-gt-t5-405b-3d-1f1b", 100, M405, N405, 512, 32, 8192, False, "full", True, True, True, "FSDP2 over 8", tp=8, pp=8, sched="1f1b")
gt_row(5, T5, 2, "| Interleaved 1F1B | 128 |", "titan-gt-t5-405b-3d-interleaved", 128, M405, N405, 512, 32, 8192, False, "full", True, True, True, "FSDP2 over 8", tp=8, pp=8, sched="interleaved-1f1b")
for i, (needle, cp, seq, tps) in enumerate([("| FSDP 8, CP 1 | 32768 | 76 |", 1, 32768, 76), ("| FSDP 4, CP 2 | 65536 | 47 |", 2, 65536, 47),
                                            ("| FSDP 2, CP 4 | 131072 | 31 |", 4, 131072, 31), ("| FSDP 1, CP 8 | 262144 | 16 |", 8, 262144, 16)], 1):
    gt_row(6, T6, i, needle, f"titan-gt-t6-405b-4d-cp{cp}-s{seq}", tps, M405, N405, 512, 8, seq, True, "full", True, True, True,
           "FSDP2 over 8 (dp_shard x cp)", tp=8, pp=8, cp=cp, sched="1f1b")

# ---- (4) June 2025 async-TP benchmark (benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md @2887250)
c_atp = "2887250bbd9103d0bc997ea2efb3a525b5e5dbc0"
p_atp = "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"
doc = show(TT, c_atp, p_atp)
cap70 = "#### Llama3 70b on 256 H100s with FSDP=32, TP=8, torch.compile, full AC,  local batch size 16"
cap8 = "#### Llama3 8b on 64 H100s with FSDP=8, TP=8, torch.compile, per op SAC, local batch size 12"
assert cap70 in doc and cap8 in doc
gt_versions_atp = "torch 38410cf9 (2025-06-14), torchao 6243040, torchtitan 820504e"
for cap, tag, model, n, gpus, local, fsdp, ac in [(cap70, "70b", M70, N70, 256, 16, 32, "full"), (cap8, "8b", M8, N8, 64, 12, 8, "selective")]:
    sect = doc.split(cap)[1].split("####")[0]
    for i, (qname, fp8) in enumerate([("None (bfloat16)", False), ("float8 tensorwise", True)], 1):
        q = line_with(sect, "| " + qname)
        cells = [c.strip() for c in q.strip().strip("|").split("|")]
        vanilla, asy = float(cells[1]), float(cells[2])
        for j, (mode, tps) in enumerate([("vanilla-tp", vanilla), ("async-tp", asy)]):
            rid = f"titan-atp-{tag}-{'bf16' if not fp8 else 'float8tw'}-{mode}"
            missing = list(gt_common_missing) + ["sequence length not stated (8192 from torchtitan/models/llama3/train_configs/llama3_*.toml @820504e assumed)",
                                                 "'tokens/sec' column: per GPU presumably (torchtitan logs tps per device; the header does not say)"]
            if fp8: missing.append("float8 linears (tensorwise): not a bf16 run")
            cfg = {"framework": "torchtitan", "framework_version": "2025-06-13", "model": model, "seq_len": 8192, "micro_batch": local,
                   "grad_accum": 1, "precision": "bf16-mixed", "optimizer": "adamw", "strategy": "fsdp", "fsdp_version": 2, "tp": 8,
                   "gpus": gpus, "gpus_per_node": 8, "inter_node_gbps": 50, "gpu": gt_gpu,
                   "checkpointing": "full" if ac == "full" else "selective-op", "compile": True, "attention": "flash"}
            unm = (["float8 linears (tensorwise)"] if fp8 else []) + (["async TP"] if mode == "async-tp" else [])
            add({
                "id": rid, "source_group": "torchtitan",
                "source": {"title": "torchtitan benchmarks: async TP on Llama 3 (H100, June 2025)", "repo": "pytorch/torchtitan", "path": p_atp,
                           "commit": c_atp, "url": TT_URL.format(c=c_atp, p=p_atp), "table": f"{tag} table, row {i}, column {'Vanilla TP' if j == 0 else 'Async TP'} tokens/sec",
                           "quote": cap + " || | Quantization      | Vanilla TP tokens/sec | Async TP tokens/sec |  Async TP speedup || " + q},
                "framework": "torchtitan (820504e, 2025-06-13)",
                "hardware": dict(hw_gt, gpus=gpus, nodes=gpus // 8, gpus_per_node=8),
                "model": {"catalog_id": model, "parameters": n},
                "batch": {"local_batch": local, "micro_batch": local, "grad_accum": 1, "global_batch": local * fsdp, "seq_len": 8192,
                          "global_batch_tokens": local * fsdp * 8192},
                "precision": "bf16 mixed" + (" + float8 linears (tensorwise)" if fp8 else ""), "optimizer": "torch.optim.AdamW",
                "parallel": {"dp": fsdp, "fsdp": f"FSDP2 over {fsdp}", "tp": 8, "pp": 1, "cp": 1, "async_tp": mode == "async-tp"},
                "activation_checkpointing": "full" if ac == "full" else "per-op SAC", "compile": True, "float8": fp8,
                "published": {"tokens_per_s_per_gpu": tps, "text": q.strip()},
                "tokens_per_s_per_gpu": tps, "tokens_per_s_per_gpu_basis": "published (column 'tokens/sec'; per device as torchtitan logs it)",
                "flops_definition": "not reported",
                "setup_fully_known": False, "missing": missing, "assumptions": [f"versions: {gt_versions_atp}"],
            }, cfg, ["gpu: the Grand Teton custom entry (see titan-gt rows)", "inter_node_gbps 50 = 400 Gb/s per GPU as stated"], unm or None, tkey="titan-asynctp-" + tag)

# ---- (5) June 2025 H200 community benchmark (benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md @cbccb38)
c_h2 = "cbccb387871a5e1f522c1e222c51ab88b03c0392"
p_h2 = "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md"
doc = show(TT, c_h2, p_h2)
for i, (nodes, tps) in enumerate([(4, 10938), (8, 10753)], 1):
    q = line_with(doc, f"| {nodes} | {tps} |")
    gpus = nodes * 8
    add({
        "id": f"titan-h200-8b-fsdp{gpus}-float8", "source_group": "torchtitan",
        "source": {"title": "torchtitan benchmarks: Llama 3.1 8B on H200 (Trainy on WhiteFiber, June 2025)", "repo": "pytorch/torchtitan",
                   "path": p_h2, "commit": c_h2, "url": TT_URL.format(c=c_h2, p=p_h2), "table": f"results row {i}",
                   "quote": "--training.local_batch_size=2 --training.compile --model.converters=\"quantize.linear.float8\" ... || | NUM_NODES | TPS/GPU | Memory(GiB) | || " + q},
        "framework": "torchtitan (e7c0cae, 2025-06-13)",
        "hardware": {"gpu": "NVIDIA H200 (SXM presumed: 'connected via NVLink')", "gpu_catalog_id": "h200", "gpus": gpus, "nodes": nodes,
                     "gpus_per_node": 8, "interconnect": "8 H200 per host connected via NVLink; backend RDMA fabric 400Gb/s (Mellanox CX-7) per GPU",
                     "interconnect_stated": True, "peak": H100_PEAK | {"source": "NVIDIA H200 datasheet: same dense bf16 as H100 SXM (989)"}},
        "model": {"catalog_id": M8, "parameters": N8},
        "batch": {"local_batch": 2, "micro_batch": 2, "grad_accum": 1, "global_batch": 2 * gpus, "seq_len": 8192, "global_batch_tokens": 2 * gpus * 8192},
        "precision": "bf16 mixed + float8 linears (fsdp float8 all-gather, precomputed scales, force_recompute_fp8_weight_in_bwd)",
        "optimizer": "torch.optim.AdamW", "parallel": {"dp": gpus, "fsdp": f"FSDP2 over {gpus}", "tp": 1, "pp": 1, "cp": 1},
        "activation_checkpointing": "selective op (llama3_8b.toml @e7c0cae)", "compile": True, "float8": True,
        "published": {"tokens_per_s_per_gpu": tps, "text": q.strip()},
        "tokens_per_s_per_gpu": tps, "tokens_per_s_per_gpu_basis": "published TPS/GPU, 'arbitrarily sampled at the 100th iteration'",
        "flops_definition": "not reported",
        "setup_fully_known": False, "missing": ["float8 linears: not a bf16 run"],
        "assumptions": ["seq_len 8192 and selective-op AC: torchtitan/models/llama3/train_configs/llama3_8b.toml @e7c0cae (the command overrides neither)",
                        "versions: torch 2.8.0a0+5228986c39 (NGC 25.05), torchao 0afa4c1, torchtitan e7c0cae"],
    }, {"framework": "torchtitan", "framework_version": "2025-06-13", "model": M8, "seq_len": 8192, "micro_batch": 2, "grad_accum": 1,
        "precision": "bf16-mixed", "optimizer": "adamw", "strategy": "fsdp", "fsdp_version": 2, "gpus": gpus, "gpus_per_node": 8,
        "inter_node_gbps": 50, "gpu": "h200", "checkpointing": "selective-op", "compile": True, "attention": "flash"},
        ["inter_node_gbps 50 = the stated 400 Gb/s per GPU"], ["float8 linears (tensorwise) with float8 all-gather"], tkey="titan-h200")

# ================================================================================================ llm-foundry
LF = "mosaicml+llm-foundry"
c_lf = "5e85bd62d4ec9e13353ca95877477602ab538e5b"
p_lf = "scripts/train/benchmarking/README.md"
doc = show(LF, c_lf, p_lf)
sections = re.split(r"^## ", doc, flags=re.M)
tables = {}
for s in sections:
    title = s.splitlines()[0]
    if title.startswith(("H100", "A100")):
        tables[title] = s
lf_tables = [
    ("H100 80GB BF16 (Large Scale, >= 128 GPUs)", "h100l", "5e85bd62d4ec9e13353ca95877477602ab538e5b (2024-01-06)", None),
    ("H100 80GB BF16", "h100", "b2a43a1477a45f40f4086a1c72f851b0ab42d0ac (2023-10-19)", None),
    ("A100 80GB with 1600 Gbps node-node interconnect (RoCE)", "a100-80", "b2a43a1477a45f40f4086a1c72f851b0ab42d0ac (2023-10-19)", "1600 Gbps node-node interconnect (RoCE)"),
    ("A100 40GB with 1600 Gbps node-node interconnect (RoCE)", "a100-40", "300cc5c58 (2023-05-03, first in this path; unchanged since)", "1600 Gbps node-node interconnect (RoCE)"),
]
mpt = {"7b": dict(d_model=4096, n_heads=32, n_layers=32)}
for title, tag, rows_commit, ic in lf_tables:
    sect = tables[title]
    header = [l for l in sect.splitlines() if l.startswith("|  Model")][0]
    k = 0
    for l in sect.splitlines():
        if not l.startswith("|  7b |"):
            continue
        k += 1
        c = [x.strip() for x in l.strip().strip("|").split("|")]
        (model, seq, gpus, gpu, mfu, hfu, tflop, mbs, ga, gbs, sps, tps, tpsg, gbt, prec, mp, shard, ac, off, nparams) = c
        seq, gpus, mbs, ga, gbs, tpsg, nparams = int(seq), int(gpus), int(mbs), int(ga), int(gbs), int(tpsg), int(nparams)
        ac = ac == "True"
        d = mpt["7b"]
        flops = 6 * nparams + 12 * d["n_layers"] * d["d_model"] * seq
        peak = 989.5e12 if gpu.startswith("h100") else 312e12
        rid = f"foundry-{tag}-mpt7b-s{seq}-g{gpus}-mbs{mbs}"
        catid = {"h100_80gb": "h100-80gb", "a100_80gb": "a100-80gb", "a100_40gb": "a100-40gb"}[gpu]
        assumptions = [
            "MPT-7b: scripts/train/yamls/pretrain/mpt-7b.yaml (d_model 4096, n_heads 32, n_layers 32, expansion_ratio 4, vocab 50368); MPTConfig defaults: learned positional embedding of max_seq_len rows (NumParams grows with SeqLen), biases, tied embeddings, no ALiBi",
            "attention: submit_benchmarks.py default --attn_impl triton (flash attention); norm low_precision_layernorm (set by the script)",
            "no torch.compile (Composer 2023 runs; script image default mosaicml/pytorch:1.13.1_cu117 for the A100 tables)",
            "optimizer decoupled_adamw (fp32 states in the sharded fp32 parameters)",
            "MicroBatchSize and GradAccum as logged (the script lets Composer pick 'auto'); GradAccum = ceil(GlobalBatch / GPUs / MicroBatch)",
        ]
        if ic:
            assumptions.append("8 GPUs per node (not stated); the network is stated per node (1600 Gb/s), i.e. 200 Gb/s = 25 GB/s per GPU with 8 GPUs per node")
        else:
            assumptions.append("network and GPUs per node not stated (MosaicML platform)")
        cfg = {"framework": "llm-foundry", "model": {"hf_config": {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
                                                          "expansion_ratio": 4, "max_seq_len": seq, "vocab_size": 50368,
                                                          "attn_config": {"attn_impl": "triton", "alibi": False}, "no_bias": False,
                                                          "learned_pos_emb": True, "norm_type": "low_precision_layernorm"}},
               "seq_len": seq, "micro_batch": mbs, "grad_accum": ga, "precision": "bf16-mixed",
               "optimizer": "adamw", "optimizer_impl": "single-tensor", "checkpointing": "full" if ac else "none", "attention": "flash",
               "loss": "fused", "strategy": "fsdp", "zero": 3 if shard == "FULL_SHARD" else 2, "fsdp_version": 1, "fsdp_wrap": "layers",
               "gpus": gpus, "gpus_per_node": 8, "gpu": catid, "compile": False}
        if ic:
            cfg["inter_node_gbps"] = 25
        cnotes = ["precision: amp_bf16 + FSDP mixed_precision DEFAULT (bf16 compute on fp32 sharded parameters; DEFAULT reduces gradients in fp32 by Composer's convention, not read in Composer's code at the run's version) -> bf16-mixed" if prec == "amp_bf16"
                  else "precision: Composer 'bf16' + FSDP mixed_precision PURE (param, reduce and buffer dtype all bf16 by Composer's convention, not read in its code; FSDP keeps the sharded fp32 parameters the optimizer steps) -> bf16-mixed; the gradient reduce-scatter is then bf16, not fp32 as under DEFAULT",
                  "loss fused: flash-attn cross-entropy (llm-foundry default loss_fn)"]
        add({
            "id": rid, "source_group": "llm-foundry",
            "source": {"title": f"llm-foundry MPT training benchmarks: {title}", "repo": "mosaicml/llm-foundry", "path": p_lf, "commit": c_lf,
                       "rows_last_changed": rows_commit, "url": f"https://github.com/mosaicml/llm-foundry/blob/{c_lf}/{p_lf}",
                       "table": f"{title}, MPT-7b row {k}", "quote": "## " + title + " || " + header + " || " + l},
            "framework": "llm-foundry / Composer (2023)",
            "hardware": {"gpu": {"h100_80gb": "NVIDIA H100 80GB (SXM per collect_results.py 'h100-sxm')", "a100_80gb": "NVIDIA A100 80GB",
                                 "a100_40gb": "NVIDIA A100 40GB"}[gpu], "gpu_catalog_id": catid, "gpus": gpus, "nodes": None,
                         "gpus_per_node": None, "interconnect": ic, "interconnect_stated": bool(ic),
                         "peak": {"bf16_dense_tflops": peak / 1e12, "source": "Composer speed_monitor GPU_AVAILABLE_FLOPS (h100-sxm amp_bf16 1.979e15/2) for the H100 tables; collect_results.py GPU_AVAILABLE_FLOPS = 312e12 for the A100 40GB table"}},
            "model": {"catalog_id": None, "name": "MPT-7b (llm-foundry yaml)", "parameters": nparams,
                      "architecture": {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 16384, "vocab": 50368, "mlp": "gelu", "norm": "layernorm (low precision)",
                                       "position": "learned", "bias": True, "tied_embeddings": True}},
            "batch": {"micro_batch": mbs, "grad_accum": ga, "global_batch": gbs, "seq_len": seq, "global_batch_tokens": int(gbt)},
            "precision": f"{prec}, FSDP mixed_precision {mp}",
            "optimizer": "Composer DecoupledAdamW",
            "parallel": {"dp": gpus, "fsdp": f"FSDP1 {shard} over {gpus}", "tp": 1, "pp": 1, "cp": 1},
            "activation_checkpointing": "full (per MPTBlock)" if ac else "none", "compile": False,
            "published": {"tokens_per_s_per_gpu": tpsg, "mfu_pct": float(mfu), "hfu_pct": float(hfu), "model_tflops_per_gpu": int(tflop),
                          "samples_per_s": int(sps), "tokens_per_s": int(tps), "text": l.strip()},
            "tokens_per_s_per_gpu": tpsg, "tokens_per_s_per_gpu_basis": "published Throughput (T/s/GPU) (from Composer's throughput/samples_per_sec x SeqLen / GPUs)",
            "flops_definition": "collect_results.py: MFU = (6*NumParams + 12*n_layers*d_model*SeqLen) x tokens/s / GPUs / peak; NumParams includes embeddings and the learned position table; attention not halved; HFU adds one forward (x4/3) when activation checkpointing is on",
            "model_flops_per_token": flops,
            "check": {"mfu_recomputed_pct": round(100 * flops * tpsg / peak, 2)},
            "setup_fully_known": True, "missing": [], "assumptions": assumptions,
        }, cfg, cnotes, tkey="foundry-" + tag)

# ================================================================================================ Megatron-LM
MG = "NVIDIA+Megatron-LM"
c_readme21 = "2e90a342f5"
# (1) Narayanan et al. 2021 Table 1 = README 'cases_april2021.png' + examples/sc21/run_table_1.sh @6985e58
c_sc21 = "6985e58938d40ad91ac07b0fddcfad8132e1447e"
sc21 = show(MG, c_sc21, "examples/sc21/run_table_1.sh")
cfg21 = show(MG, c_sc21, "examples/sc21/CONFIG.sh")
assert "--seq-length 2048" in cfg21 and "--fp16" in cfg21
blocks = {}
# parse simply
cur = None
for l in sc21.splitlines():
    m = re.search(r'MODEL_SIZE\} == "([^"]+)"', l)
    if m:
        cur = m.group(1); blocks[cur] = {}
        continue
    m = re.match(r"\s+([A-Z_]+)=(.*)$", l)
    if cur and m:
        blocks[cur][m.group(1)] = m.group(2).strip().strip('"')
# README image values (images/cases_april2021.png, commit 50a4b5f; shown until f2e5db4)
img21 = [  # size, hidden, layers, params (B), model-parallel size, gpus, batch, TFLOP/s/GPU, % of peak, aggregate PF
    ("1.7B", 2304, 24, 1.7, 1, 32, 512, 137, 44, 4.4), ("3.6B", 3072, 30, 3.6, 2, 64, 512, 138, 44, 8.8),
    ("7.5B", 4096, 36, 7.5, 4, 128, 512, 142, 46, 18.2), ("18B", 6144, 40, 18.4, 8, 256, 1024, 135, 43, 34.6),
    ("39B", 8192, 48, 39.1, 16, 512, 1536, 138, 44, 70.8), ("76B", 10240, 60, 76.1, 32, 1024, 1792, 140, 45, 143.8),
    ("145B", 12288, 80, 145.6, 64, 1536, 2304, 148, 47, 227.1), ("310B", 16384, 96, 310.1, 128, 1920, 2160, 155, 50, 297.4),
    ("530B", 20480, 105, 529.6, 280, 2520, 2520, 163, 52, 410.2), ("1T", 25600, 128, 1008.0, 512, 3072, 3072, 163, 52, 502.0)]
readme21 = show(MG, "f2e5db402c^", "README.md")
rq = line_with(readme21, "All models use a vocabulary size of 51,200 and a sequence length of 2048")
for i, (size, h, L, pb, mp, gpus, gbs, tfl, pct, agg) in enumerate(img21, 1):
    b = blocks[size]
    tp, pp, mbs, nah, nn = int(b["TP"]), int(b["PP"]), int(b["MBS"]), int(b["NAH"]), int(b["NNODES"])
    assert int(b["GBS"]) == gbs and int(b["HS"]) == h and int(b["NLS"]) == L and tp * pp == mp and nn * 8 == gpus, size
    extra = b["MEGATRON_EXTRA_PARAMS"]
    vps = re.search(r"--num-layers-per-virtual-pipeline-stage (\d+)", extra)
    dp = gpus // (tp * pp)
    ga = gbs // (mbs * dp)
    s, V = 2048, 51200
    fpt_recompute = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))  # per token, eq. 3 (x4 passes)
    tokens = tfl * 1e12 / fpt_recompute
    chunks = (L // pp) // int(vps.group(1)) if vps else 1
    cfg = {"model": {"layers": L, "hidden": h, "heads": nah, "ffn": 4 * h, "vocab": V, "mlp": "gelu", "activation": "gelu",
                     "norm": "layernorm", "position": "learned", "bias": True, "tied_embeddings": True, "max_positions": 2048, "family": "gpt2"},
           "seq_len": s, "micro_batch": mbs, "grad_accum": ga, "precision": "16-mixed", "optimizer": "adamw", "strategy": "megatron",
           "tp": tp, "pp": pp, "gpus": gpus, "gpus_per_node": 8, "zero": 0, "checkpointing": "full", "attention": "eager",
           "sequence_parallel": False}
    if pp > 1:
        cfg["pp_schedule"] = "interleaved-1f1b" if vps else "1f1b"
        if vps: cfg["pp_stages_per_rank"] = chunks
    add({
        "id": f"megatron-sc21-t1-{size.lower()}", "source_group": "megatron-lm",
        "source": {"title": "Narayanan et al. 2021 (arXiv:2104.04473) Table 1 weak scaling, as Megatron-LM README 'cases_april2021.png' + examples/sc21/run_table_1.sh",
                   "repo": "NVIDIA/Megatron-LM", "path": "README.md (image images/cases_april2021.png) + examples/sc21/run_table_1.sh + examples/sc21/CONFIG.sh",
                   "commit": f"README {c_readme21} (image added 50a4b5f, 2021-04-08; removed in f2e5db4); scripts {c_sc21}",
                   "url": f"https://github.com/NVIDIA/Megatron-LM/blob/{c_sc21}/examples/sc21/run_table_1.sh",
                   "table": f"row {i} ({size})",
                   "quote": rq + f" || image row: {size} | {h} | {L} | {pb} | {mp} | {gpus} | {gbs} | {tfl} | {pct}% | {agg} || run_table_1.sh: TP={tp} PP={pp} MBS={mbs} GBS={gbs} NLS={L} HS={h} NAH={nah} DDP={b['DDP']} NNODES={nn} MEGATRON_EXTRA_PARAMS=\"{extra}\""},
        "framework": "Megatron-LM (2021; container nvcr.io/nvidia/pytorch:20.12-py3 per SRUN.sh)",
        "hardware": {"gpu": "NVIDIA A100 80GB (DGX A100, Selene)", "gpu_catalog_id": "a100-80gb", "gpus": gpus, "nodes": nn, "gpus_per_node": 8,
                     "interconnect": "Selene DGX A100 nodes ('Each cluster node has 8 NVIDIA 80GB A100 GPUs'); the InfiniBand fabric is not stated in the README",
                     "interconnect_stated": False, "peak": A100_PEAK | {"source": "312 TFLOP/s fp16 tensor dense (NVIDIA A100 datasheet); the README's 'Percentage of theoretical peak FLOPs' = TFLOP/s / 312"}},
        "model": {"catalog_id": None, "name": f"GPT {size}", "parameters_published_billion": pb,
                  "architecture": {"layers": L, "hidden": h, "heads": nah, "ffn": 4 * h, "vocab": V, "seq_len": s, "mlp": "gelu", "norm": "layernorm", "position": "learned", "tied_embeddings": True}},
        "batch": {"micro_batch": mbs, "grad_accum": ga, "global_batch": gbs, "seq_len": s, "global_batch_tokens": gbs * s},
        "precision": "fp16 mixed (--fp16, loss scale 8192), fp32 master weights and Adam states",
        "optimizer": "Adam (Megatron default), not sharded (2021, no distributed optimizer)",
        "parallel": {"dp": dp, "tp": tp, "pp": pp, "cp": 1, "ddp_impl": b["DDP"],
                     "pp_schedule": ("interleaved 1F1B, %s layers per virtual stage (%d chunks per GPU)" % (vps.group(1), chunks)) if vps else ("1F1B" if pp > 1 else None)},
        "activation_checkpointing": "full (--checkpoint-activations, every layer; 'uniform' method in the 2021-08 script)",
        "compile": False, "kernels": "Megatron fused kernels (masked softmax, bias-gelu); no flash attention (2021)",
        "published": {"tflops_per_gpu": tfl, "pct_of_peak": pct, "aggregate_pflops": agg},
        "tokens_per_s_per_gpu": round(tokens, 2),
        "tokens_per_s_per_gpu_basis": "derived: TFLOP/s/GPU x 1e12 / (96*l*h^2*(1 + s/(6h) + V/(16*l*h))) per token, Narayanan et al. eq. 3 with activation recomputation (4 passes); the per-GPU TFLOP/s is rounded to an integer in the image (+-0.4%)",
        "flops_definition": "Narayanan et al. 2021 eq. 3: F = 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) per iteration, counting the recomputed forward (i.e. hardware FLOPs with full recompute, ~8N per token); formula as quoted in microsoft/Megatron-DeepSpeed megatron/utils.py throughput_calculator @0782d75 ('General TFLOPs formula (borrowed from Equation 3 in Section 5.1 of https://arxiv.org/pdf/2104.04473.pdf). The factor of 4 is when used with activation check-pointing')",
        "model_flops_per_token_with_recompute": round(fpt_recompute),
        "setup_fully_known": True, "missing": [],
        "assumptions": ["FFN = 4h, learned positions, GeLU, LayerNorm, tied embeddings: Megatron GPT defaults (not set in CONFIG.sh)",
                        "seq 2048, vocab 51,200 (README), fp16, loss scale 8192 (CONFIG.sh)", "interconnect not stated in the sources read (the paper's hardware section could not be retrieved)"],
    }, cfg, ["attention eager: 2021 Megatron computes softmax(QK^T) explicitly (fused masked softmax), no flash attention",
             "precision 16-mixed: --fp16 with fp32 master weights", "zero 0: no distributed optimizer in 2021"], tkey="megatron-sc21-table1")

# (2) Megatron-LM README 2024 H100 weak-scaling table (images/model_table.png, f2e5db4; still at HEAD)
c_h = "f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4"
readme24 = show(MG, c_h, "README.md")
rq24 = line_with(readme24, "All models use a vocabulary size of 131,072 and a sequence length of 4096")
img24 = [("1.7B", 16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 41, 19.6), ("7.1B", 32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 47, 44.7),
         ("16B", 48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 49, 93.9), ("32B", 56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 46, 176.5),
         ("70B", 64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 42, 322.3), ("119B", 80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 43, 645.9),
         ("177B", 96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 44, 997.2), ("314B", 128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 48, 1457.4),
         ("462B", 144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 47, 2825.6)]
for i, (size, heads, h, L, tp, pp, dp, gpus, gbs, tfl, mfu, agg) in enumerate(img24, 1):
    assert tp * pp * dp == gpus
    s, V = 4096, 131072
    fpt = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))  # Megatron num_floating_point_operations, MHA, ffn 4h, no swiglu
    tokens = tfl * 1e12 / fpt
    cfg = {"model": {"layers": L, "hidden": h, "heads": heads, "ffn": 4 * h, "vocab": V, "mlp": "gelu", "activation": "gelu",
                     "norm": "layernorm", "position": "learned", "bias": True, "tied_embeddings": True, "family": "gpt2", "max_positions": 4096},
           "seq_len": s, "micro_batch": 1, "grad_accum": gbs // dp, "precision": "bf16-mixed", "optimizer": "adamw", "strategy": "megatron",
           "tp": tp, "pp": pp, "gpus": gpus, "gpus_per_node": 8, "zero": 1, "checkpointing": "none", "attention": "flash",
           "sequence_parallel": tp > 1}
    add({
        "id": f"megatron-h100-weak-{size.lower()}", "source_group": "megatron-lm",
        "source": {"title": "Megatron-LM README 'Training Speed and Scalability' H100 model table (image images/model_table.png)", "repo": "NVIDIA/Megatron-LM",
                   "path": "README.md + images/model_table.png (blob f126c2f, unchanged at HEAD d98e8a6)", "commit": c_h,
                   "url": f"https://github.com/NVIDIA/Megatron-LM/blob/{c_h}/README.md", "table": f"row {i} ({size})",
                   "quote": rq24 + f" || image row: {size} | {heads} | {h} | {L} | {tp} | {pp} | {dp} | {gpus} | {gbs} | {tfl} | {mfu}% | {agg}"},
        "framework": "Megatron-Core r0.8.0 (strong-scaling figure legend; weak-scaling runs of the same README section)",
        "hardware": {"gpu": "NVIDIA H100 (SXM presumed; 'up to 6144 H100 GPUs')", "gpu_catalog_id": "h100-80gb", "gpus": gpus, "nodes": None, "gpus_per_node": None,
                     "interconnect": None, "interconnect_stated": False, "peak": H100_PEAK | {"source": "README MFU = TFLOP/s / 989 (checked on every row)"}},
        "model": {"catalog_id": None, "name": f"GPT {size}", "architecture": {"layers": L, "hidden": h, "heads": heads, "vocab": V, "seq_len": s}},
        "batch": {"micro_batch": None, "grad_accum": None, "global_batch": gbs, "seq_len": s, "global_batch_tokens": gbs * s},
        "precision": "not stated (bf16 implied: MFU is TFLOP/s over the 989 bf16 peak)",
        "optimizer": "distributed optimizer implied (--overlap-param-gather, stated, requires --use-distributed-optimizer)",
        "parallel": {"dp": dp, "tp": tp, "pp": pp, "cp": 1, "overlap": "--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap, PP overlap default"},
        "activation_checkpointing": "not stated", "compile": False,
        "published": {"tflops_per_gpu": tfl, "mfu_pct": mfu, "aggregate_pflops": agg},
        "tokens_per_s_per_gpu": round(tokens, 2),
        "tokens_per_s_per_gpu_basis": "derived: TFLOP/s/GPU x 1e12 / (72*L*h^2*(1 + s/(6h) + V/(12*L*h))) per token = Megatron num_floating_point_operations (megatron/training/training.py @f2e5db4) for MHA, FFN 4h, no SwiGLU (FFN and attention variant not stated: assumed)",
        "flops_definition": "Megatron-Core num_floating_point_operations @f2e5db4: 12*B*s*L*h^2*((1 + g/a + s/h)*q/h + ffn/h*[1.5 if swiglu] + V/(2*L*h)), i.e. model FLOPs (3 passes), no recompute counted, attention not halved",
        "model_flops_per_token": round(fpt),
        "setup_fully_known": False,
        "missing": ["micro-batch size", "activation recomputation", "precision (bf16 implied)", "virtual pipeline stages", "FFN size, GQA, SwiGLU (GPT assumed: 4h, MHA, GeLU)", "sequence parallelism", "network"],
        "assumptions": ["read from an image (the table is not text)"],
    }, cfg, ["micro_batch 1, no recompute, sequence_parallel with TP, distributed optimizer (zero 1): assumed, not stated",
             "learned positions / tied embeddings: Megatron GPT defaults assumed"], tkey="megatron-h100-weak")

# (3) examples/llama/README.md FP8 table (bf6e998, 2025-06-14)
c_l = "bf6e99859f"
c_l_full = subprocess.run(["git", "-C", f"{M}/{MG}/repo", "rev-parse", c_l], capture_output=True, text=True).stdout.strip()
doc = show(MG, c_l, "examples/llama/README.md")
hdr = line_with(doc, "| Model | #-GPUs | GBS | MBS | Seq Length | TP | PP | CP | VP | EP | GA | Tokens/sec/GPU | TFLOP/sec/GPU |")
for i, (needle, model, gpus, gbs, tp, pp, cp, vp, ga, tps, tfl) in enumerate([
        ("| LLAMA3-8B |", "meta-llama/Meta-Llama-3-8B", 8, 128, 1, 1, 2, 1, 32, 13812, 800),
        ("| LLAMA3-70B |", "meta-llama/Meta-Llama-3-70B", 64, 128, 4, 8, 1, 5, 64, 1621, 780),
        ("| LLAMA3-405B |", "meta-llama/Llama-3.1-405B", 1024, 512, 8, 8, 2, 8, 64, 315, 834)], 1):
    q = line_with(doc, needle)
    cfg = {"model": model, "seq_len": 8192, "micro_batch": 1, "grad_accum": ga, "precision": "bf16-mixed", "optimizer": "adamw",
           "strategy": "megatron", "tp": tp, "pp": pp, "cp": cp, "gpus": gpus, "gpus_per_node": 8, "zero": 1, "attention": "flash",
           "sequence_parallel": tp > 1, "gpu": "h100-80gb", "checkpointing": "none"}
    if pp > 1:
        cfg["pp_schedule"] = "interleaved-1f1b"; cfg["pp_stages_per_rank"] = vp
    add({
        "id": f"megatron-llama-fp8-{['8b', '70b', '405b'][i - 1]}", "source_group": "megatron-lm",
        "source": {"title": "Megatron-LM examples/llama/README.md 'FP8 Performance'", "repo": "NVIDIA/Megatron-LM", "path": "examples/llama/README.md",
                   "commit": c_l_full, "url": f"https://github.com/NVIDIA/Megatron-LM/blob/{c_l_full}/examples/llama/README.md", "table": f"row {i}",
                   "quote": "This configuration follows those defined in NeMo Framework's performance scripts || " + hdr + " || " + q},
        "framework": "Megatron-Core (core_r0.12.0 checkout in the README), NGC pytorch 25.03",
        "hardware": {"gpu": "not stated (the example script is train_llama3_8b_h100_fp8.sh; H100 presumed)", "gpu_catalog_id": "h100-80gb", "gpus": gpus,
                     "nodes": None, "gpus_per_node": None, "interconnect": None, "interconnect_stated": False, "peak": H100_PEAK},
        "model": {"catalog_id": model},
        "batch": {"micro_batch": 1, "grad_accum": ga, "global_batch": gbs, "seq_len": 8192, "global_batch_tokens": gbs * 8192},
        "precision": "FP8 hybrid (Transformer Engine) with bf16 parameters (--fp8-format hybrid, --fp8-param-gather in the 8B script)",
        "optimizer": "distributed optimizer in the 8B script (--use-distributed-optimizer); not stated for 70B/405B",
        "parallel": {"dp": gpus // (tp * pp * cp), "tp": tp, "pp": pp, "cp": cp, "vp": vp, "ep": 1},
        "activation_checkpointing": "not stated", "compile": False,
        "published": {"tokens_per_s_per_gpu": tps, "tflops_per_gpu": tfl, "text": q.strip()},
        "tokens_per_s_per_gpu": tps, "tokens_per_s_per_gpu_basis": "published",
        "flops_definition": "Megatron num_floating_point_operations (model FLOPs, GQA and SwiGLU aware; 3 passes; no recompute); TFLOP/s/GPU here counts fp8 and bf16 FLOPs alike",
        "setup_fully_known": False,
        "missing": ["GPU model", "recompute settings", "optimizer sharding for 70B/405B", "FP8 (not a bf16 run)", "network"],
        "assumptions": [],
    }, cfg, ["gpu h100-80gb presumed from the script name", "no recompute assumed", "zero 1 (distributed optimizer) as in the 8B script"],
        ["FP8 (Transformer Engine hybrid) GEMMs"], tkey="megatron-llama-fp8")

# ================================================================================================ torchtune
TN = "pytorch+torchtune"
c_tn = "1814feb17a9038e1a8053ce93111bd26774a8db6"
doc = show(TN, c_tn, "README.md")
_b = doc.split("**Baseline:**")[1].split("| Technique")[0].strip().splitlines()
base_line = "**Baseline:** " + " ".join(x.strip() for x in _b if x.strip())
hdr = line_with(doc, "| Technique | Peak Memory Active (GiB) |")
pub_cfg = {json.loads(l)["id"]: json.loads(l) for l in open(os.path.join(REPO, "tests/validation/published/configs.jsonl"))}
pub_rows = {json.loads(l)["id"]: json.loads(l) for l in open(os.path.join(REPO, "tests/validation/published/rows.jsonl"))}
base = dict(pub_cfg["tt-2411-l32-3b-packed"]["config"])
flags = [
    ("baseline", "| Baseline |", 2091, {}, "unpacked alpaca: each batch padded to its longest sample (max 4096); tokens counted exclude padding"),
    ("packed", "[+ Packed Dataset]", 7075, {}, None),
    ("compile", "[+ Compile]", 8998, {"compile": True}, None),
    ("chunkedce", "+ Chunked Cross Entropy", 9174, {"compile": True, "loss": "chunked"}, None),
    ("ac", "+ Activation Checkpointing", 7210, {"compile": True, "loss": "chunked", "checkpointing": "full"}, None),
    ("optinbwd", "+ Fuse optimizer step into backward", 7309, {"compile": True, "loss": "chunked", "checkpointing": "full", "optimizer_in_backward": True}, None),
    ("offload", "+ Activation Offloading", 7301, {"compile": True, "loss": "chunked", "checkpointing": "full", "optimizer_in_backward": True, "activation_offload": True}, None),
    ("adamw8bit", "+ 8-bit AdamW", 6960, {"compile": True, "loss": "chunked", "checkpointing": "full", "optimizer_in_backward": True, "activation_offload": True, "optimizer": "paged-adamw-8bit"}, None),
    ("lora", "| [LoRA]", 8210, {"compile": True, "loss": "chunked", "checkpointing": "full", "activation_offload": True,
                                "finetune": {"method": "lora", "rank": 64, "targets": ["q_proj", "v_proj", "output_proj", "w1", "w2", "w3"], "dropout": 0}}, None),
    ("qlora", "| [QLoRA]", 8035, {"compile": True, "loss": "chunked", "checkpointing": "full", "activation_offload": True,
                                  "finetune": {"method": "qlora", "rank": 64, "targets": ["q_proj", "v_proj", "output_proj", "w1", "w2", "w3"], "dropout": 0, "backend": "torchao"}}, None),
]
for i, (tag, needle, tps, delta, extra_missing) in enumerate(flags, 1):
    q = line_with(doc, needle)
    cells = [c.strip() for c in q.strip().strip("|").split("|")]
    assert int(cells[3]) == tps, (tag, cells)
    pr = pub_rows[f"tt-2411-l32-3b-{tag}"]
    cfg = dict(base); cfg.update(delta)
    missing = ["tokens counted: (labels != ignore_index), so pack padding (and prompt tokens if train_on_input were false) are not counted; the fraction is not stated",
               "AdamW class (torch, fused or foreach) not stated" if tag not in ("lora", "qlora", "adamw8bit") else "LoRA/QLoRA overrides: only the QLoRA reproduce command is given",
               "A100 40 vs 80 GB not stated (80 GB implied by the 60 GiB peak of the packed row)"]
    if extra_missing: missing.insert(0, extra_missing)
    if tag == "baseline": cfg = dict(base)
    unm = []
    if cfg.get("compile"): unm.append("torch.compile")
    add({
        "id": f"torchtune-flags-l32-3b-{tag}", "source_group": "torchtune",
        "source": {"title": "torchtune README 'Optimization flags' (Llama 3.2 3B, cumulative)", "repo": "pytorch/torchtune", "path": "README.md",
                   "commit": c_tn, "url": f"https://github.com/pytorch/torchtune/blob/{c_tn}/README.md", "table": f"row {i}",
                   "quote": base_line + " || " + hdr + " || " + q},
        "framework": "torchtune (git 1814feb, 2024-11-18)",
        "hardware": {"gpu": "NVIDIA A100 (size not stated)", "gpu_catalog_id": "a100-80gb", "gpus": 1, "nodes": 1, "gpus_per_node": 1,
                     "interconnect": None, "interconnect_stated": True, "peak": A100_PEAK},
        "model": {"catalog_id": "meta-llama/Llama-3.2-3B", "parameters": 3212749824},
        "batch": {"micro_batch": 2, "grad_accum": 1, "global_batch": 2, "seq_len": 4096 if tag != "baseline" else "<=4096 (unpacked)"},
        "precision": "bf16 (pure bf16 weights, torchtune dtype bf16)",
        "optimizer": pr["setup"].get("optimizer"),
        "parallel": {"dp": 1, "tp": 1, "pp": 1, "cp": 1},
        "activation_checkpointing": bool(cfg.get("checkpointing") == "full"),
        "compile": bool(cfg.get("compile", False)),
        "setup_from_memory_transcription": {"row": f"tests/validation/published/rows.jsonl id tt-2411-l32-3b-{tag}", "setup": pr["setup"]},
        "published": {"tokens_per_s": tps, "peak_memory_active_gib": float(cells[1]), "text": q.strip()},
        "tokens_per_s_per_gpu": tps, "tokens_per_s_per_gpu_basis": "published 'Tokens Per Second' on one GPU (the recipes log tokens_per_second_per_gpu = (labels != ignore_index).sum() / step time: full_finetune_single_device.py and lora_finetune_single_device.py @1814feb)",
        "flops_definition": "none published",
        "setup_fully_known": False, "missing": missing,
        "assumptions": ["per-row settings are cumulative as the README says; LoRA/QLoRA rows do not use optimizer_in_bwd or 8-bit AdamW (README)"],
    }, cfg, ["configuration as tests/validation/published/configs.jsonl tt-2411-l32-3b-packed plus this row's cumulative flags"], unm or None, tkey="torchtune-flags")

# ------------------------------------------------------------------------------------------------ split rule
# Decided before any time model: within each published table, in the order the rows appear there,
# odd positions (1st, 3rd, ...) -> calibration, even positions -> test.
from collections import OrderedDict
tables_seen = OrderedDict()
for r in rows:
    tables_seen.setdefault(r["_tkey"], []).append(r)
for key, rs in tables_seen.items():
    for j, r in enumerate(rs, 1):
        r["split"] = "calibration" if j % 2 == 1 else "test"
        r["split_key"] = {"table": key, "position": j}
        del r["_tkey"]

with open(os.path.join(OUT, "rows.jsonl"), "w") as f:
    for r in rows:
        r = {k: v for k, v in r.items() if v is not None}
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
with open(os.path.join(OUT, "configs.jsonl"), "w") as f:
    for c in configs:
        f.write(json.dumps(c, ensure_ascii=False) + "\n")
print(len(rows), "rows")
