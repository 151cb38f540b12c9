#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one training step of LitGPT's own fine-tuning loop (CPU).

Each case builds a tiny ``litgpt.GPT(Config(...))`` or ``litgpt.lora.GPT(Config(...))`` with random
weights (nothing is downloaded), sets it up with a real ``lightning.Fabric`` on the CPU, exactly as
``litgpt/finetune/full.py`` and ``litgpt/finetune/lora.py`` (0.5.13) do, runs their training-loop body for
3 iterations and measures the 3rd.

    build/venv-litgpt/bin/python tests/validation/stacks/litgpt/measure.py \
        --out tests/validation/stacks/litgpt/measured.jsonl \
        --trace-out tests/validation/stacks/litgpt/traces.txt

Counting is the method of tests/validation/measure_hf.py: the whole run (model construction included)
is profiled with ``torch.profiler.profile(profile_memory=True)``; the running sum of c10's CPU
allocation/free events is the exact live-bytes curve. ``peak_allocated_bytes`` = ``step_start_bytes`` +
the highest rise of the curve during the 3rd iteration.

What one iteration is (both scripts, ``train.gradient_accumulation_iters == 1``):

  full.py:   logits = model(input_ids)                                   # NO lm_head chunking
             loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:])   # chunk_size=128 rows
             fabric.backward(loss / 1); optimizer.step(); optimizer.zero_grad()
  lora.py:   logits = model(input_ids, lm_head_chunk_size=128)           # list of (B,128,V) chunks
             logits[-1] = logits[-1][..., :-1, :]
             loss = chunked_cross_entropy(logits, targets[..., 1:])      # chunk_size=128: one CE per chunk
             fabric.backward(loss / 1); optimizer.step(); optimizer.zero_grad()

``logits`` is a local variable of the loop: the previous iteration's logits (the fp32 copies made by
Fabric's ``convert_output``) are alive until the next ``model(...)`` call returns, i.e. during the next
forward. They are part of ``step_start_bytes`` here (``carried_logits_bytes``).
"""
import argparse
import contextlib
import datetime
import gc
import json
import logging
import math
import os
import platform
import sys
import time
import warnings
from collections import OrderedDict

import torch
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # for profiler_memory
from profiler_memory import (  # noqa: E402
    storage as _storage, live_tensor_bytes, count_params, alloc_nodes as _alloc_nodes,
    describe as _describe, opname as _opname, fmt_shape as _fmt_shape,
    step_window, step_peaks, live_groups, print_groups,
    BlockSavedTracer, print_saved_by_block)

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
for _n in ("lightning", "lightning.fabric", "lightning_fabric"):
    logging.getLogger(_n).setLevel(logging.ERROR)

import lightning as L  # noqa: E402
import litgpt  # noqa: E402
import litgpt.lora  # noqa: E402
from litgpt.config import Config  # noqa: E402
from litgpt.lora import Config as LoRAConfig, mark_only_lora_as_trainable  # noqa: E402
from litgpt.utils import chunked_cross_entropy  # noqa: E402


from profiler_memory import package_version as _ver  # noqa: E402


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

LLAMA = dict(name="tiny-llama", block_size=512, n_layer=2, n_embd=128, n_head=4, n_query_groups=2,
             head_size=32, vocab_size=2000, padding_multiple=512, intermediate_size=352,
             norm_class_name="RMSNorm", norm_eps=1e-5, mlp_class_name="LLaMAMLP", bias=False,
             parallel_residual=False, rotary_percentage=1.0, rope_base=10000)
# Pythia-style (GPT-NeoX): LayerNorm with bias, exact GELU MLP (4h), parallel residual with two norms,
# partial rotary (25%), MHA.
PYTHIA = dict(name="tiny-pythia", block_size=512, n_layer=2, n_embd=128, n_head=4, n_query_groups=4,
              vocab_size=2000, padding_multiple=512, intermediate_size=512, norm_class_name="LayerNorm",
              norm_eps=1e-5, mlp_class_name="GptNeoxMLP", gelu_approximate="none", bias=True,
              parallel_residual=True, shared_attention_norm=False, rotary_percentage=0.25, rope_base=10000)

SEQ, BATCH = 256, 2
LORA_DEFAULTS = dict(lora_r=8, lora_alpha=16, lora_dropout=0.05)  # finetune/lora.py defaults

CASES = []


def _case(name, arch, precision="bf16-true", loop="lora", lm_head_chunk=128, ce_chunk=128, lora=None,
          note=""):
    CASES.append(dict(name=name, arch=dict(arch), precision=precision, loop=loop,
                      lm_head_chunk=lm_head_chunk, ce_chunk=ce_chunk, lora=lora, note=note))


# 1. full fine-tune, bf16-true, lm_head chunked at 128 + chunked CE (the lora.py/adapter.py loop body
#    applied to the full model)
_case("llama_full_bf16true_headchunk128", LLAMA, loop="headchunk",
      note="full fine-tune with the lora.py loop body: lm_head_chunk_size=128, chunked_cross_entropy(list)")
# 1a. the same with chunked_cross_entropy(list, chunk_size=0): the chunks are concatenated (torch.cat) and one
#     F.cross_entropy runs over the whole (B*T, V); this is what validate() does with unchunked logits
_case("llama_full_bf16true_headchunk128_ce0", LLAMA, loop="headchunk", ce_chunk=0,
      note="lm_head_chunk_size=128 but chunked_cross_entropy(list, chunk_size=0): torch.cat of the chunks, "
           "then one F.cross_entropy")
# 1b. exactly finetune/full.py: logits not chunked, chunked_cross_entropy(chunk_size=128) over rows
_case("llama_full_bf16true_fullpy", LLAMA, loop="fullpy", lm_head_chunk=0, ce_chunk=128,
      note="exactly finetune/full.py: model(input_ids) then chunked_cross_entropy(logits[..., :-1, :], ...) "
           "with its default chunk_size=128 (chunks of 128 flattened rows)")
# 2. no chunking at all: full logits, plain CE
_case("llama_full_bf16true_plainCE", LLAMA, loop="fullpy", lm_head_chunk=0, ce_chunk=0,
      note="model(input_ids), chunked_cross_entropy(..., chunk_size=0) = one F.cross_entropy on full logits")
# 3. LoRA q+v (finetune/lora.py defaults: r 8, alpha 16, dropout 0.05)
_case("llama_lora_qv_bf16true", LLAMA, loop="headchunk",
      lora=dict(LORA_DEFAULTS, lora_query=True, lora_value=True))
_case("llama_lora_qv_bf16true_dropout0", LLAMA, loop="headchunk",
      lora=dict(LORA_DEFAULTS, lora_dropout=0.0, lora_query=True, lora_value=True),
      note="as llama_lora_qv_bf16true with lora_dropout=0 (LoRALayer then uses an identity lambda)")
# 4. LoRA on everything
_case("llama_lora_all_bf16true", LLAMA, loop="headchunk",
      lora=dict(LORA_DEFAULTS, lora_query=True, lora_key=True, lora_value=True, lora_projection=True,
                lora_mlp=True, lora_head=True))
_case("llama_lora_all_bf16true_dropout0", LLAMA, loop="headchunk",
      lora=dict(LORA_DEFAULTS, lora_dropout=0.0, lora_query=True, lora_key=True, lora_value=True,
                lora_projection=True, lora_mlp=True, lora_head=True))
# 5. fp32
_case("llama_full_32true_headchunk128", LLAMA, precision="32-true", loop="headchunk")
_case("llama_full_32true_fullpy", LLAMA, precision="32-true", loop="fullpy", lm_head_chunk=0, ce_chunk=128)
# 6. Pythia-style
_case("pythia_full_bf16true_headchunk128", PYTHIA, loop="headchunk")
_case("pythia_full_bf16true_fullpy", PYTHIA, loop="fullpy", lm_head_chunk=0, ce_chunk=128)
# 7. LitGPT's own default when --precision is not given: get_default_supported_precision(training=True)
#    returns "bf16-mixed" (torch.autocast; on CPU: torch.autocast("cpu", bfloat16))
_case("llama_full_bf16mixed_fullpy", LLAMA, precision="bf16-mixed", loop="fullpy", lm_head_chunk=0,
      ce_chunk=128, note="LitGPT's default precision for training (get_default_supported_precision)")
_case("llama_lora_qv_bf16mixed", LLAMA, precision="bf16-mixed", loop="headchunk",
      lora=dict(LORA_DEFAULTS, lora_query=True, lora_value=True))
# sequence sweep: the logits path scales with B*T*V
_case("llama_full_bf16true_headchunk128_s512", dict(LLAMA, block_size=1024), loop="headchunk")
_case("llama_full_bf16true_fullpy_s512", dict(LLAMA, block_size=1024), loop="fullpy", lm_head_chunk=0)
for _c in CASES[-2:]:
    _c["seq_len"] = 512


# --------------------------------------------------------------------------
# Model and vramcalc config
# --------------------------------------------------------------------------

def litgpt_config(case):
    kw = dict(case["arch"])
    if case["lora"]:
        return LoRAConfig(**kw, **case["lora"])
    return Config(**kw)


LORA_TARGETS = [("lora_query", "query"), ("lora_key", "key"), ("lora_value", "value"),
                ("lora_projection", "projection"), ("lora_mlp", "mlp"), ("lora_head", "head")]


def vramcalc_config(case, cfg):
    a = case["arch"]
    llama = a["mlp_class_name"] == "LLaMAMLP"
    model = OrderedDict([
        ("layers", cfg.n_layer), ("hidden", cfg.n_embd), ("heads", cfg.n_head), ("kv_heads", cfg.n_query_groups),
        ("head_dim", cfg.head_size), ("ffn", cfg.intermediate_size), ("vocab", cfg.padded_vocab_size),
        ("tied_embeddings", False), ("max_positions", cfg.block_size),
        ("mlp", "swiglu" if llama else "gelu"), ("norm", "rmsnorm" if cfg.norm_class_name == "RMSNorm" else "layernorm"),
        ("activation", "silu" if llama else "gelu"), ("bias", bool(cfg.bias)), ("lm_head_bias", bool(cfg.lm_head_bias)),
        ("position", "rope"), ("parallel_block", bool(cfg.parallel_residual)),
        ("family", "llama" if llama else "gpt_neox")])
    if case["lora"]:
        ft = OrderedDict([("method", "lora"), ("rank", case["lora"]["lora_r"]), ("dropout", case["lora"]["lora_dropout"]),
                          ("targets", [n for k, n in LORA_TARGETS if case["lora"].get(k)])])
    else:
        ft = "full"
    seq = case.get("seq_len", SEQ)
    if case["loop"] == "headchunk" and case["ce_chunk"] > 0:
        n_chunks = math.ceil(seq / case["lm_head_chunk"])
        loss = "chunked"
    elif case["ce_chunk"] > 0:
        n_chunks = math.ceil(BATCH * (seq - 1) / case["ce_chunk"])
        loss = "chunked"
    else:
        n_chunks, loss = 1, "full"
    return OrderedDict([
        ("framework", "litgpt"), ("model", model), ("seq_len", seq), ("micro_batch", BATCH), ("grad_accum", 1),
        ("precision", case["precision"]), ("optimizer", "adamw"), ("optimizer_impl", "single-tensor"),
        ("finetune", ft), ("checkpointing", "none"), ("attention", "flash"), ("strategy", "single"), ("gpus", 1),
        ("loss", loss), ("loss_chunks", n_chunks), ("adapter_dtype", "base"), ("device", "cpu"),
        ("gpu", {"name": "cpu", "memory_gib": 1000}), ("lm_head_chunks", case["lm_head_chunk"] > 0)])


def litgpt_settings(case, cfg):
    """The LitGPT settings behind a case that the vramcalc configuration does not name (kept for the record)."""
    s = OrderedDict([("lm_head_chunk_size", case["lm_head_chunk"]), ("ce_chunk_size", case["ce_chunk"]),
                     ("model.rotary_fraction", cfg.rotary_percentage)])
    if case["lora"]:
        s["finetune.alpha"] = case["lora"]["lora_alpha"]
    return s


# --------------------------------------------------------------------------
# Accounting helpers (as measure_hf.py)
# --------------------------------------------------------------------------

def _flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in _flat(y)]
    return []


def persistent_tensors(model, opt, batch):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    for st in opt.state.values():
        ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    return ts + list(batch)


class SavedTracer(BlockSavedTracer):
    """Every storage saved for backward during the measured forward+loss, by region."""

    def __init__(self, model):
        super().__init__(model.transformer.h)


# --------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------

def make_fabric(precision):
    return L.Fabric(accelerator="cpu", devices=1, strategy="auto", precision=precision)


def run_case(case, steps=3, trace=False, out=sys.stdout):
    from torch.profiler import profile, ProfilerActivity, record_function
    seq = case.get("seq_len", SEQ)
    cfg = litgpt_config(case)
    fabric = make_fabric(case["precision"])
    tracer = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("setup"):
            torch.manual_seed(0)
            # finetune/full.py and finetune/lora.py: `with fabric.init_module(empty_init=False): model = GPT(config)`
            with fabric.init_module(empty_init=False):
                model = litgpt.lora.GPT(cfg) if case["lora"] else litgpt.GPT(cfg)
            if case["lora"]:
                mark_only_lora_as_trainable(model)
                model = fabric.setup_module(model)          # lora.py
            else:
                model = fabric.setup(model)                 # full.py
            # instantiate_torch_optimizer("AdamW", model.parameters()) = torch.optim.AdamW(params) with torch's
            # defaults (lr 1e-3, weight_decay 0.01); foreach is pinned to False (the CPU default anyway)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
            opt = fabric.setup_optimizers(opt)
            # fit(): model.max_seq_length = min(longest_seq_length, ...) < block_size: rebuilds cos/sin (fp32)
            model.max_seq_length = seq
            g = torch.Generator().manual_seed(1)
            input_ids = torch.randint(0, cfg.vocab_size, (BATCH, seq), generator=g)
            targets = input_ids.clone()
            batch = (input_ids, targets)
        torch.manual_seed(2)
        logits = None
        for i in range(steps):
            gc.collect()
            last = i == steps - 1
            if last:
                pers = persistent_tensors(model, opt, batch)
                carried = _flat(logits)
                step_start = live_tensor_bytes(pers + carried)
                carried_bytes = step_start - live_tensor_bytes(pers)
                persistent_ptrs = {_storage(t)[0] for t in pers if isinstance(t, torch.Tensor)}
                del carried  # only `logits` may keep them alive, as in the loop
                if trace:
                    tracer = SavedTracer(model)
            hooks = tracer.hooks() if (trace and last) else contextlib.nullcontext()
            with record_function("step%d" % i):
                with hooks:
                    with record_function("phase:forward"):
                        if case["loop"] == "headchunk":
                            logits = model(input_ids, lm_head_chunk_size=case["lm_head_chunk"])
                        else:
                            logits = model(input_ids)
                    with record_function("phase:loss"):
                        if case["loop"] == "headchunk":
                            logits[-1] = logits[-1][..., :-1, :]
                            loss = chunked_cross_entropy(logits, targets[..., 1:], chunk_size=case["ce_chunk"])
                        else:
                            loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:],
                                                         chunk_size=case["ce_chunk"])
                if trace and last:
                    tracer.walk(loss)
                with record_function("phase:backward"):
                    fabric.backward(loss / 1)
                with record_function("phase:optimizer"):
                    opt.step()
                    opt.zero_grad()
            if last:
                loss_value = float(loss)
                end_pers = persistent_tensors(model, opt, batch)
                end_bytes = live_tensor_bytes(end_pers + _flat(logits) + [loss])
            del loss  # lora.py/full.py rebind `loss` to running_loss.compute().item() (log_interval=1)
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    t0, t1 = step_node.start_time_ns, step_node.end_time_ns
    in_step, _, cum_at_start, cum = step_window(allocs, t0, t1)
    if cum_at_start is None:
        cum_at_start = cum
    cur, peak, peak_i, phase_peak, phase_op, phase_end, phase_i = step_peaks(
        in_step, ("forward", "loss", "backward", "optimizer"), init=None)
    pk = in_step[peak_i]
    tot, tr = count_params(model)
    orig = model.module if hasattr(model, "module") else model
    measured = OrderedDict([
        ("peak_allocated_bytes", step_start + peak),
        ("step_start_bytes", step_start),
        ("carried_logits_bytes", carried_bytes),
        ("forward_peak_bytes", step_start + (phase_peak["forward"] or 0)),
        ("loss_peak_bytes", step_start + (phase_peak["loss"] or 0)),
        ("backward_peak_bytes", step_start + (phase_peak["backward"] or 0)),
        ("optimizer_peak_bytes", step_start + (phase_peak["optimizer"] or 0)),
        ("after_forward_bytes", step_start + phase_end.get("forward", 0)),
        ("after_loss_bytes", step_start + phase_end.get("loss", 0)),
        ("forward_peak_op", _opname(phase_op.get("forward"))),
        ("loss_peak_op", _opname(phase_op.get("loss"))),
        ("backward_peak_op", _opname(phase_op.get("backward"))),
        ("optimizer_peak_op", _opname(phase_op.get("optimizer"))),
        ("peak_phase", _describe(pk)[0]),
        ("peak_op", _opname(pk)),
        ("params_total", tot),
        ("params_trainable", tr),
        ("param_dtype", str(next(orig.parameters()).dtype).replace("torch.", "")),
        ("optimizer_state_dtype", str(next(iter(opt.state.values()))["exp_avg"].dtype).replace("torch.", "")),
        ("rope_cache_dtype", str(orig.cos.dtype).replace("torch.", "")),
        ("rope_cache_shape", list(orig.cos.shape)),
        ("logits_dtype_seen_by_loss", str(_flat(logits)[0].dtype).replace("torch.", "")),
        ("loss", round(loss_value, 6)),
    ])
    check = OrderedDict([("profiler_step_start_bytes", cum_at_start), ("step_net_bytes", cur),
                         ("tensor_end_minus_start", end_bytes - step_start)])
    if trace:
        print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out,
                    opt_i=phase_i.get("optimizer"))
        tracer.remove()
    info = OrderedDict([
        ("litgpt_config", {k: v for k, v in cfg.__dict__.items() if k in case["arch"] or k.startswith("lora_")
                           or k in ("padded_vocab_size", "rope_n_elem", "head_size")}),
        ("fabric", {"accelerator": "cpu", "devices": 1, "strategy": "auto", "precision": case["precision"],
                    "setup": "fabric.setup_module" if case["lora"] else "fabric.setup"}),
        ("loop", {"headchunk": "lora.py: model(ids, lm_head_chunk_size=%d); logits[-1]=logits[-1][..., :-1, :]; "
                               "chunked_cross_entropy(logits, targets[..., 1:], chunk_size=%d)"
                               % (case["lm_head_chunk"], case["ce_chunk"]),
                  "fullpy": "full.py: model(ids); chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:], "
                            "chunk_size=%d)" % case["ce_chunk"]}[case["loop"]]),
        ("optimizer", {"class": "torch.optim.AdamW", "lr": 1e-3, "weight_decay": 0.01, "foreach": False}),
        ("targets", "input_ids.clone() (no ignore_index positions)"),
    ])
    if case["note"]:
        info["note"] = case["note"]
    return measured, check, info


TRACE_LEGEND = """\
measure.py --trace   (torch %s, litgpt %s, lightning %s, CPU; see README.md in this folder)
Per case:
  header      peak = step_start + rise, [phase: op (autograd node)] at the peak; phase peaks; after_fwd /
              after_loss = live bytes when model(...) / chunked_cross_entropy(...) returned.
              step_start includes the previous iteration's logits (carried), which the loop keeps alive.
  live at the peak   every block allocated during the measured step and still alive at the peak, grouped by
              (phase, autograd node that was running, innermost aten op that allocated it): total bytes,
              count, then dtype(shape) when the block is the storage of a tensor saved for backward
              (shape of the saved view), else its size in bytes.
  live at the optimizer-step peak   the same grouping at the highest point of optimizer.step()
              (gradients are the backward-phase blocks; the new logits are forward-phase blocks).
  saved-for-backward every storage saved by autograd during the measured forward and loss (saved_tensors_hooks,
              deduplicated by storage; parameters, buffers and the batch are excluded), per region
              (block index, or "outside" = embedding, ln_f, lm_head, Fabric's output cast, loss), then the full
              list for the LAST block and for "outside" in forward order:
                storage bytes, dtype, shape of the saved view <- grad_fn that produced it ;
                autograd node.attribute(s) that keep it
              and, for every other block, only the lines that differ from the last one.
"""


def print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out, opt_i=None):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    rec = tracer.records
    groups = live_groups(in_step, peak_i, rec, ("forward", "loss"))
    m = measured
    P("=" * 100)
    P("=== %s  (B=%d S=%d %s, %s)  peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], BATCH, case.get("seq_len", SEQ), case["precision"], case["loop"],
        m["peak_allocated_bytes"], step_start, m["peak_allocated_bytes"] - step_start, m["peak_phase"], m["peak_op"]))
    P("  step_start: carried logits of the previous iteration %d B; params %d (%d trainable), %s; AdamW states %s;"
      " rope cos/sin %s %s" % (m["carried_logits_bytes"], m["params_total"], m["params_trainable"], m["param_dtype"],
                               m["optimizer_state_dtype"], m["rope_cache_dtype"], m["rope_cache_shape"]))
    P("  fwd_peak=%d (%s)  after_fwd=%d" % (m["forward_peak_bytes"], m["forward_peak_op"], m["after_forward_bytes"]))
    P("  loss_peak=%d (%s)  after_loss=%d" % (m["loss_peak_bytes"], m["loss_peak_op"], m["after_loss_bytes"]))
    P("  bwd_peak=%d (%s)" % (m["backward_peak_bytes"], m["backward_peak_op"]))
    P("  opt_peak=%d (%s)" % (m["optimizer_peak_bytes"], m["optimizer_peak_op"]))
    P("  -- live at the peak (allocated during the step), by phase / autograd node / op:")
    print_groups(P, groups)
    if opt_i is not None:
        P("  -- live at the optimizer-step peak (allocated during the step; gradients, the new logits, temporaries):")
        print_groups(P, live_groups(in_step, opt_i, rec, ("forward", "loss")))
    print_saved_by_block(P, rec, persistent_ptrs, tracer, "block", "block", "before the backward")


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--trace", action="store_true", help="print the live set at the peak + saved tensors")
    ap.add_argument("--trace-out", default=None, help="write the trace to this file (implies --trace)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    trace = args.trace or bool(args.trace_out)
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    tout = open(args.trace_out, "w") if args.trace_out else sys.stdout
    if trace:
        print(TRACE_LEGEND % (torch.__version__, _ver("litgpt"), _ver("lightning")), file=tout)
    versions = OrderedDict([("torch", torch.__version__), ("litgpt", _ver("litgpt")),
                            ("lightning", _ver("lightning")), ("python", platform.python_version())])
    records, failures = [], []
    t_all = time.time()
    for c in cases:
        t = time.time()
        try:
            measured, check, info = run_case(c, steps=args.steps, trace=trace, out=tout)
        except Exception as e:  # noqa: BLE001
            msg = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            failures.append((c["name"], msg))
            print("%-42s FAILED %s" % (c["name"], msg), flush=True)
            continue
        if check["profiler_step_start_bytes"] != measured["step_start_bytes"] or \
                check["step_net_bytes"] != check["tensor_end_minus_start"]:
            print("WARNING %s: accounting mismatch %r vs step_start %d" %
                  (c["name"], dict(check), measured["step_start_bytes"]), file=sys.stderr)
        lcfg = litgpt_config(c)
        cfg = vramcalc_config(c, lcfg)
        rec = OrderedDict([("name", c["name"]), ("config", cfg), ("measured", measured), ("litgpt", info),
                           ("check", check), ("versions", versions), ("device", "cpu"),
                           ("torch", torch.__version__),
                           ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat()),
                           ("litgpt_settings", litgpt_settings(c, lcfg))])
        records.append(rec)
        m = measured
        print("%-42s peak=%9d start=%8d fwd=%9d loss=%9d bwd=%9d opt=%9d %-8s %s (%.1fs)" % (
            c["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m["forward_peak_bytes"],
            m["loss_peak_bytes"], m["backward_peak_bytes"], m["optimizer_peak_bytes"], m["peak_phase"],
            m["peak_op"], time.time() - t), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    if args.trace_out:
        tout.close()
    print("total %.1fs, %d cases, %d failed" % (time.time() - t_all, len(records), len(failures)),
          file=sys.stderr)
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
