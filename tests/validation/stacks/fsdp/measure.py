#!/usr/bin/env python3
"""Per-rank training-step memory of PyTorch FSDP 1 and FSDP 2 (CPU, gloo, world size 2).

    build/venv/bin/python tests/validation/stacks/fsdp/measure.py \
        [--out tests/validation/stacks/fsdp/measured.jsonl] \
        [--trace-out tests/validation/stacks/fsdp/traces.txt] [--only SUBSTR]... [--list]

The parent launches, per case, two processes of this file (``--worker``) that form a
gloo process group over 127.0.0.1 (world size 2, one thread each).  Every worker uses
the method of ``tests/validation/measure_hf.py``: the whole run (process group, model
construction, FSDP wrapping included) is profiled with
``torch.profiler.profile(profile_memory=True)``; c10's CPU allocator reports every
allocation and free with its exact size, so the running sum is the exact curve of live
tensor bytes of that rank.  Three optimizer steps run; the 3rd is measured:

* ``step_start_bytes``: the profiler's running total when the 3rd step starts (after
  ``zero_grad(set_to_none=True)`` and ``gc.collect()``).  It is cross-checked against
  the unique storages of every tensor FSDP keeps (sharded parameters / flat parameters
  and their ``_local_shard`` / ``_full_param_padded`` / ``_mp_shard``, FSDP2's
  ``_sharded_param_data`` / all-gather outputs / unsharded params, grads, optimizer
  states, buffers, batches): ``check.tensor_step_start_bytes``.
* ``peak_allocated_bytes`` of a rank = step_start + the highest rise of the curve during
  the step (all micro-batches' forward and backward, then ``optimizer.step()``).
* ``check.step_net_bytes`` = the curve's net change over the step; it should equal the
  tensor-computed end - start (the gradients that stay for the next step, if any).

Training step (HF Trainer / accelerate): for each micro-batch ``outputs = model(input_ids,
labels)``, ``loss = outputs.loss / grad_accum``, ``del outputs``, ``loss.backward()``; the
first grad_accum-1 micro-batches run under FSDP1's ``model.no_sync()`` (forward and
backward), or with FSDP2's ``model.set_requires_gradient_sync(False)``; then
``optimizer.step()`` with AdamW(lr 1e-3, weight_decay 0.01, foreach=False) over the
parameters that require grad.  Each rank trains on its own batches (Generator(1 + 100 *
rank)).  bf16 cases also run the forward under ``torch.autocast("cpu", bfloat16)``, as
accelerate does.
"""
import argparse
import contextlib
import copy
import datetime
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # for profiler_memory
from profiler_memory import (  # noqa: E402
    alloc_nodes as _alloc_nodes, ancestor_names, live_blocks, live_tensor_bytes as _live_tensor_bytes, merge_results,
    split_collective_allocations, step_window)

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 2

HF = {"model_type": "llama", "vocab_size": 2000, "hidden_size": 256, "intermediate_size": 704,
      "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
      "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
      "attention_dropout": 0.0, "attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
      "use_cache": False}
LORA = {"method": "lora", "rank": 8, "targets": ["q_proj", "v_proj"]}


def _case(name, fsdp, finetune="full", grad_accum=1, precision="32-true", attention="eager", wrap="layer",
          sync_each=False, framework=None, notes=None):
    cfg = {"model": {"hf_config": copy.deepcopy(HF)}, "seq_len": 128, "micro_batch": 2,
           "grad_accum": grad_accum, "precision": precision, "optimizer": "adamw",
           "optimizer_impl": "single-tensor", "finetune": copy.deepcopy(finetune), "attention": attention,
           "checkpointing": "none", "strategy": "fsdp", "zero": 3, "gpus": WORLD, "fsdp_version": fsdp,
           "gpu": {"name": "cpu", "memory_gib": 1000}, "device": "cpu",
           "fsdp_wrap": "adapters-apart" if wrap == "peft" else "layers"}
    if framework is not None:  # its profile's loss is not what this loop computes: transformers' from labels
        cfg["framework"], cfg["loss"] = framework, "full"
    # sync_each: accumulate with a plain loss.backward() on every micro-batch (no no_sync() /
    # set_requires_gradient_sync(False)): every backward reduce-scatters and only the sharded gradients carry over
    # between micro-batches (Composer's microbatch loop, torchtune, torchtitan)
    c = {"name": name, "config": cfg, "wrap": wrap, "sync_each": sync_each}
    if notes:
        c["notes"] = notes
    return c


SYNC_NOTES = [("plain FSDP 1 driven like Composer's microbatch loop: loss.backward() on every micro-batch, no "
             "no_sync(), so every backward reduce-scatters; not Composer's code (no Composer/llm-foundry model, "
             "loss or trainer). framework llm-foundry only selects vramcalc's per-micro-batch (sharded) FSDP "
             "accumulation profile"),
              ("loss full: the driver computes transformers' cross-entropy from labels inside the FSDP-wrapped "
               "model; the llm-foundry profile's loss runs outside it (loss_in_model false), so FSDP's prefetch of "
               "the last layer before the loss backward (about one bf16 layer here) is not counted")]


CASES = [
    _case("fsdp1_full_fp32", 1),
    _case("fsdp1_lora_fp32", 1, LORA),
    _case("fsdp1_lora_fp32_ga4", 1, LORA, grad_accum=4),
    _case("fsdp1_full_fp32_ga4", 1, grad_accum=4),
    _case("fsdp1_lora_fp32_peftwrap", 1, LORA, wrap="peft"),
    _case("fsdp2_full_fp32", 2),
    _case("fsdp2_lora_fp32", 2, LORA),
    _case("fsdp2_lora_fp32_ga4", 2, LORA, grad_accum=4),
    _case("fsdp2_full_fp32_ga4", 2, grad_accum=4),
    _case("fsdp1_full_bf16", 1, precision="bf16-mixed"),
    _case("fsdp1_lora_bf16", 1, LORA, precision="bf16-mixed"),
    _case("fsdp2_full_bf16", 2, precision="bf16-mixed"),
    _case("fsdp2_lora_bf16", 2, LORA, precision="bf16-mixed"),
    _case("fsdp1_full_fp32_ga4_sync", 1, grad_accum=4, sync_each=True, framework="llm-foundry", notes=SYNC_NOTES),
    _case("fsdp1_full_bf16_ga4_sync", 1, grad_accum=4, precision="bf16-mixed", sync_each=True,
          framework="llm-foundry", notes=SYNC_NOTES),
]


# --------------------------------------------------------------------------
# model, wrapping
# --------------------------------------------------------------------------

def build(case):
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = case["config"]
    config = AutoConfig.for_model(**copy.deepcopy(cfg["model"]["hf_config"]))
    config.use_cache = False
    impl = "sdpa" if cfg["attention"] == "flash" else "eager"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=impl, dtype=torch.float32)
    model.float()
    ft = cfg["finetune"]
    if isinstance(ft, dict):
        from peft import LoraConfig, get_peft_model
        lc = LoraConfig(r=ft["rank"], lora_alpha=16, lora_dropout=0.0, target_modules=list(ft["targets"]),
                        bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(model, lc)
    model.train()
    return model


def layer_class(model):
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    return LlamaDecoderLayer


def decoder_layers(model):
    cls = layer_class(model)
    return [m for m in model.modules() if isinstance(m, cls)]


def wrap_fsdp1(model, case):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, MixedPrecision
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy, lambda_auto_wrap_policy, _or_policy
    import functools
    mp = None
    if case["config"]["precision"] == "bf16-mixed":  # accelerate's bf16 policy for FSDP1
        mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.float32)
    if case["wrap"] == "peft":
        # accelerate / HF Trainer with PEFT: fsdp_auto_wrap_policy() = LoRA leaf modules with trainable
        # weights get their own FSDP unit, plus the decoder layers
        def lambda_fn(m):
            return (len(list(m.named_children())) == 0 and getattr(m, "weight", None) is not None
                    and m.weight.requires_grad)
        policy = functools.partial(_or_policy, policies=[
            functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda_fn),
            ModuleWrapPolicy({layer_class(model)})])
    else:
        policy = ModuleWrapPolicy({layer_class(model)})
    return FSDP(model, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD,
                use_orig_params=True, mixed_precision=mp, device_id=torch.device("cpu"),
                limit_all_gathers=True, forward_prefetch=False)


def wrap_fsdp2(model, case):
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (WORLD,))
    if case["config"]["precision"] == "bf16-mixed":  # accelerate's bf16 policy for FSDP2
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16,
                                  output_dtype=torch.bfloat16)
    else:
        mp = MixedPrecisionPolicy()
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    return model


def make_batches(case, rank):
    g = torch.Generator().manual_seed(1 + 100 * rank)
    c = case["config"]
    out = []
    for _ in range(c["grad_accum"]):
        ids = torch.randint(0, c["model"]["hf_config"]["vocab_size"], (c["micro_batch"], c["seq_len"]), generator=g)
        out.append((ids, ids.clone()))
    return out


# --------------------------------------------------------------------------
# accounting
# --------------------------------------------------------------------------

def _local(t):
    from torch.distributed.tensor import DTensor
    if isinstance(t, DTensor):
        return t._local_tensor
    return t


def _storage(t):
    st = _local(t).untyped_storage()
    return st.data_ptr(), st.nbytes()


def live_tensor_bytes(tensors):
    return _live_tensor_bytes(tensors, lambda t: [_storage(t)])


def fsdp_internal_tensors(model, version):
    ts = []
    if version == 1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        for m in FSDP.fsdp_modules(model):
            h = m._handle
            if h is None:
                continue
            fp = h.flat_param
            ts.append(fp)
            ts.append(fp.grad)
            for a in ("_local_shard", "_full_param_padded", "_mp_shard", "_saved_grad_shard", "_cpu_grad",
                      "_full_prec_full_param_padded"):
                ts.append(getattr(fp, a, None))
    else:
        from torch.distributed.fsdp._fully_shard._fully_shard import FSDPModule
        for m in model.modules():
            if not isinstance(m, FSDPModule):
                continue
            grp = m._get_fsdp_state()._fsdp_param_group
            if grp is None:
                continue
            for p in grp.fsdp_params:
                ts += [p.sharded_param, getattr(p, "_sharded_param_data", None),
                       getattr(p, "_unsharded_param", None), p.unsharded_accumulated_grad,
                       p.sharded_param.grad]
                ts += list(getattr(p, "all_gather_outputs", []) or [])
                ts += list(getattr(p, "_unsharded_inner_tensors", []) or [])
    return ts


def persistent_tensors(model, opt, batches, version):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    ts += fsdp_internal_tensors(model, version)
    for st in opt.state.values():
        ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    for b in batches:
        ts += list(b)
    return [t for t in ts if isinstance(t, torch.Tensor)]


def grad_bytes(model, version):
    """Bytes of gradient storage that stay on this rank (unique storages)."""
    ts = [p.grad for p in model.parameters()]
    if version == 1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        for m in FSDP.fsdp_modules(model):
            if m._handle is not None:
                fp = m._handle.flat_param
                ts += [fp.grad, getattr(fp, "_saved_grad_shard", None)]
    else:
        from torch.distributed.fsdp._fully_shard._fully_shard import FSDPModule
        for m in model.modules():
            if isinstance(m, FSDPModule):
                grp = m._get_fsdp_state()._fsdp_param_group
                if grp is not None:
                    for p in grp.fsdp_params:
                        ts.append(p.unsharded_accumulated_grad)
                        up = getattr(p, "_unsharded_param", None)
                        if up is not None:
                            ts.append(up.grad)
    return live_tensor_bytes([t for t in ts if isinstance(t, torch.Tensor)])


def fsdp1_grad_state(model):
    """Where FSDP1 keeps each unit's gradient after a backward (no tensors made)."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    out = []
    for m in FSDP.fsdp_modules(model):
        if m._handle is None:
            continue
        fp = m._handle.flat_param
        g, sv = fp.grad, getattr(fp, "_saved_grad_shard", None)
        out.append({"unit": type(m.module).__name__,
                    "grad": None if g is None else [int(g.numel()), str(g.dtype).replace("torch.", ""),
                                                    g.untyped_storage().nbytes()],
                    "has_saved_grad_shard": hasattr(fp, "_saved_grad_shard"),
                    "saved_grad_shard": None if sv is None else [int(sv.numel()), str(sv.dtype).replace("torch.", "")],
                    "shard_numel": int(fp._local_shard.numel())})
    return out


def count_params(model, version):
    """(total, trainable) parameters of the unsharded model."""
    tot = tr = 0
    seen = set()
    for n, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        numel = p.numel() if not hasattr(p, "full_tensor") else int(torch.Size(p.shape).numel())
        tot += numel
        tr += numel if p.requires_grad else 0
    return tot, tr


def _describe(n):
    """phase, micro-batch, FSDP region, autograd node, innermost op (with input shapes)."""
    phase = micro = region = node = None
    op = None
    p = n.parent
    while p is not None:
        nm = p.name
        if op is None and not nm.startswith(("phase:", "step", "micro")) and not nm.startswith("aten::empty") \
                and type(p.extra_fields).__name__ == "_ExtraFields_TorchOp":
            shp = []
            for i in p.extra_fields.inputs:
                sz = getattr(i, "sizes", None)
                if sz is not None:
                    shp.append("%s(%s)" % (str(i.dtype).replace("torch.", "").replace("float", "f").
                                           replace("bf16", "bf16"), ",".join(map(str, sz))))
            op = nm + ("[" + " ".join(shp[:3]) + "]" if shp else "")
        if node is None and nm.startswith("autograd::engine::evaluate_function: "):
            node = nm.split(": ", 1)[1]
        if region is None and ("FSDP" in nm or "FullyShardedDataParallel" in nm):
            region = nm.replace("FullyShardedDataParallel.", "FSDP1.")
        if micro is None and nm.startswith("micro"):
            micro = nm
        if phase is None and nm.startswith("phase:"):
            phase = nm.split(":", 1)[1]
        p = p.parent
    if op is None:
        op = n.parent.name if n.parent is not None else "-"
    return phase, micro, region, node, op


def _opname(n):
    if n is None:
        return None
    phase, micro, region, node, op = _describe(n)
    s = op if node is None else "%s (%s)" % (op, node)
    if region:
        s += " in " + region
    return s


# --------------------------------------------------------------------------
# worker
# --------------------------------------------------------------------------

def worker(args):
    import torch.distributed as dist
    from torch.profiler import profile, ProfilerActivity, record_function
    torch.set_num_threads(1)
    case = [c for c in CASES if c["name"] == args.case][0]
    cfg = case["config"]
    version = cfg["fsdp_version"]
    ga = cfg["grad_accum"]
    rank = args.rank
    steps = 3
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        with record_function("setup"):
            dist.init_process_group("gloo", rank=rank, world_size=WORLD,
                                    init_method="tcp://127.0.0.1:%d" % args.port)
            model = build(case)
            tot, tr = count_params(model, 0)
            model = wrap_fsdp1(model, case) if version == 1 else wrap_fsdp2(model, case)
            params = [p for p in model.parameters() if p.requires_grad]
            opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=False)
            batches = make_batches(case, rank)
        autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if cfg["precision"] == "bf16-mixed" \
            else contextlib.nullcontext
        torch.manual_seed(2)
        losses = []
        grad_state = []
        for i in range(steps):
            opt.zero_grad(set_to_none=True)
            gc.collect()
            dist.barrier()
            last = i == steps - 1
            if last:
                pers = persistent_tensors(model, opt, batches, version)
                tensor_start = live_tensor_bytes(pers)
                persistent_ptrs = {_storage(t)[0] for t in pers}
                del pers  # holding them would keep FSDP1's previous-step flat_param.grad alive through the step
            with record_function("step%d" % i):
                for m, (ids, labels) in enumerate(batches):
                    sync = m == ga - 1 or case["sync_each"]
                    if version == 1:
                        ctx = contextlib.nullcontext() if sync else model.no_sync()
                    else:
                        model.set_requires_gradient_sync(sync)
                        ctx = contextlib.nullcontext()
                    with record_function("micro%d" % m), ctx:
                        with record_function("phase:forward"):
                            with autocast():
                                outputs = model(input_ids=ids, labels=labels)
                            loss = outputs.loss
                            del outputs
                            if ga > 1:
                                loss = loss / ga
                        with record_function("phase:backward"):
                            loss.backward()
                        losses.append(float(loss))
                        if last and version == 1 and case["sync_each"]:
                            grad_state.append(fsdp1_grad_state(model))
                        if m < ga - 1:
                            del loss
                if last:
                    mid_grad = grad_bytes(model, version)
                with record_function("phase:optimizer"):
                    opt.step()
            if last:
                end_tensors = persistent_tensors(model, opt, batches, version) + [loss]
                end_bytes = live_tensor_bytes(end_tensors)
                end_grad = grad_bytes(model, version)
                opt_state = live_tensor_bytes([v for st in opt.state.values() for v in st.values()
                                               if isinstance(v, torch.Tensor)])
                shard_param_bytes = live_tensor_bytes(list(model.parameters()))
            del loss
        dist.barrier()
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    t0, t1 = step_node.start_time_ns, step_node.end_time_ns
    # Blocks allocated inside a c10d collective (gloo's internal buffers, allocated under c10d:: ops or gloo:* ops on its worker thread: the flat output of allgather_, the
    # clone of the input of _reduce_scatter_base_) are the communication backend's, not FSDP's; NCCL on CUDA
    # keeps its buffers outside PyTorch's allocator.  They are taken out of the curve (with their frees) and
    # reported separately ("gloo_internal").
    main_allocs, comm_events = split_collective_allocations(allocs)
    raw_cum, raw_start, raw_peak = 0, None, 0
    for n in allocs:
        if raw_start is None and n.start_time_ns >= t0:
            raw_start = raw_cum
        raw_cum += n.extra_fields.alloc_size
        if t0 <= n.start_time_ns <= t1 and raw_start is not None:
            raw_peak = max(raw_peak, raw_cum - raw_start)
    c_cur, c_peak, c_n, c_live_start, c_start = 0, 0, 0, None, None
    for n in comm_events:
        if c_start is None and n.start_time_ns >= t0:
            c_start = c_cur
        c_cur += n.extra_fields.alloc_size
        if t0 <= n.start_time_ns <= t1:
            c_peak = max(c_peak, c_cur)
            c_n += n.extra_fields.alloc_size > 0
    gloo_internal = {"blocks_in_step": c_n, "max_live_bytes_in_step": c_peak,
                     "live_at_step_start_bytes": c_start or 0, "live_at_end_of_run_bytes": c_cur,
                     "raw_step_start_bytes": raw_start, "raw_peak_allocated_bytes": (raw_start or 0) + raw_peak}
    allocs = main_allocs
    in_step, live0, step_start, _ = step_window(allocs, t0, t1)
    cur, peak, peak_i = 0, 0, -1
    phase_peak = {p: 0 for p in ("forward", "backward", "optimizer")}
    phase_op = {}
    micro_peak = defaultdict(int)
    micro_start = {}
    for i, n in enumerate(in_step):
        ph, mi = _describe(n)[:2]
        if mi is not None and mi not in micro_start and n.extra_fields.alloc_size > 0:
            # live bytes before the micro-batch's first allocation (after the frees that precede it: FSDP1 frees the
            # previous step's flat_param.grad in the root's pre-forward of micro-batch 0)
            micro_start[mi] = step_start + cur
        cur += n.extra_fields.alloc_size
        if ph in phase_peak and cur > phase_peak[ph]:
            phase_peak[ph] = cur
            phase_op[ph] = n
        if mi is not None and ph is not None:
            key = "%s_%s" % (mi, ph)
            micro_peak[key] = max(micro_peak[key], cur)
        if cur > peak:
            peak, peak_i = cur, i
    pk = in_step[peak_i]
    measured = {
        "peak_allocated_bytes": step_start + peak,
        "step_start_bytes": step_start,
        "forward_peak_bytes": step_start + phase_peak["forward"],
        "backward_peak_bytes": step_start + phase_peak["backward"],
        "optimizer_peak_bytes": step_start + phase_peak["optimizer"],
        "forward_peak_op": _opname(phase_op.get("forward")),
        "backward_peak_op": _opname(phase_op.get("backward")),
        "optimizer_peak_op": _opname(phase_op.get("optimizer")),
        "peak_phase": _describe(pk)[0],
        "peak_micro": _describe(pk)[1],
        "peak_op": _opname(pk),
        "micro_phase_peaks": {k: step_start + v for k, v in sorted(micro_peak.items())},
        "micro_start_bytes": dict(sorted(micro_start.items())),
        "grad_bytes_before_optimizer": mid_grad,
        "grad_bytes_after_step": end_grad,
        "optimizer_state_bytes": opt_state,
        "sharded_param_bytes": shard_param_bytes,
        "losses": [round(x, 6) for x in losses[-ga:]],
        "gloo_internal": gloo_internal,
    }
    if grad_state:
        measured["fsdp1_grad_state_after_micro"] = grad_state
    check = {"tensor_step_start_bytes": tensor_start, "step_net_bytes": cur,
             "tensor_end_minus_start": end_bytes - tensor_start}
    left = {}
    for n in in_step:
        if n.extra_fields.alloc_size > 0:
            left[n.extra_fields.ptr] = n
        else:
            left.pop(n.extra_fields.ptr, None)
    check["live_at_step_end"] = sorted(((n.extra_fields.alloc_size, _opname(n), n.extra_fields.ptr in [
        _storage(t)[0] for t in end_tensors]) for n in left.values()), reverse=True)[:8]
    check["unmatched_frees_in_step"] = sum(1 for n in in_step if n.extra_fields.alloc_size < 0 and
                                           n.extra_fields.ptr not in set(x.extra_fields.ptr for x in allocs
                                                                         if x.extra_fields.alloc_size > 0))
    extra = sorted(((n.extra_fields.alloc_size, " < ".join(a for a in ancestor_names(n))[:160])
                    for p, n in live0.items() if p not in persistent_ptrs), reverse=True)
    if extra:
        check["unaccounted_at_start"] = {"bytes": sum(e[0] for e in extra), "blocks": len(extra),
                                         "largest": extra[:8]}
    res = {"rank": rank, "measured": measured, "check": check, "params_total": tot, "params_trainable": tr,
           "layout": layout(model, version)}
    if args.trace and rank == 0:
        res["trace"] = trace_text(case, in_step, peak_i, step_start, measured)
    with open(args.result, "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


def layout(model, version):
    """How the parameters are grouped and sharded on this rank."""
    out = []
    if version == 1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        for m in FSDP.fsdp_modules(model):
            h = m._handle
            if h is None:
                continue
            fp = h.flat_param
            ntr = sum(p.numel() for p, info in zip(fp._params, fp._shard_param_infos) if p.requires_grad)
            out.append({"unit": type(m.module).__name__, "flat_requires_grad": fp.requires_grad,
                        "unsharded_numel": int(fp._unpadded_unsharded_size.numel()),
                        "padded_unsharded_numel": int(fp._padded_unsharded_size.numel()),
                        "shard_numel": int(fp._local_shard.numel()),
                        "n_params": len(fp._params),
                        "trainable_numel_unsharded": sum(
                            int(torch.Size(s).numel()) for s, p in zip(fp._shapes, fp._params) if p.requires_grad)})
    else:
        from torch.distributed.fsdp._fully_shard._fully_shard import FSDPModule
        for m in model.modules():
            if isinstance(m, FSDPModule):
                grp = m._get_fsdp_state()._fsdp_param_group
                if grp is None:
                    continue
                out.append({"unit": type(m).__name__.replace("FSDP", ""),
                            "n_params": len(grp.fsdp_params),
                            "unsharded_numel": sum(int(torch.Size(p._orig_size).numel()) for p in grp.fsdp_params),
                            "shard_numel": sum(p._sharded_param_data.numel() for p in grp.fsdp_params),
                            "trainable_unsharded_numel": sum(int(torch.Size(p._orig_size).numel())
                                                             for p in grp.fsdp_params if p.sharded_param.requires_grad)})
    return out


def _groups(in_step, upto):
    groups = defaultdict(lambda: [0, 0, defaultdict(int)])
    for ptr, n in live_blocks(in_step, upto).items():
        ph, mi, region, node, op = _describe(n)
        key = ("%s/%s" % (mi or "-", ph or "-"), region or "-", node or "-", op)
        g = groups[key]
        sz = n.extra_fields.alloc_size
        g[0] += sz
        g[1] += 1
        g[2][sz] += 1
    L = []
    for key, (nb, cnt, sizes) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        sz = ", ".join("%dB x%d" % (k, v) if v > 1 else "%dB" % k for k, v in
                       sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])[:5])
        if len(sizes) > 5:
            sz += ", ..."
        L.append("  %10d x%-3d %-20s | %-40s | %-26s | %s  {%s}" % (nb, cnt, key[0], key[1][:40], key[2][:26],
                                                                  key[3][:90], sz))
    return sum(g[0] for g in groups.values()), L


def trace_text(case, in_step, peak_i, step_start, measured):
    L = []
    L.append("=" * 110)
    L.append("=== %s rank 0: peak=%d = step_start %d + %d  [%s %s: %s]" % (
        case["name"], measured["peak_allocated_bytes"], step_start, measured["peak_allocated_bytes"] - step_start,
        measured["peak_micro"], measured["peak_phase"], measured["peak_op"]))
    L.append("  fwd_peak=%d  bwd_peak=%d  opt_peak=%d  grads kept after backward=%d  optimizer states=%d  "
             "sharded params=%d" % (
                 measured["forward_peak_bytes"], measured["backward_peak_bytes"], measured["optimizer_peak_bytes"],
                 measured["grad_bytes_before_optimizer"], measured["optimizer_state_bytes"],
                 measured["sharded_param_bytes"]))
    tot, G = _groups(in_step, peak_i)
    L.append("  -- [A] at the peak: blocks allocated during the step and still live (%d B), by micro/phase | FSDP "
             "region | autograd node | op[input shapes] {block sizes}:" % tot)
    L += G
    # [B] inside the backward of the last micro-batch, the moment the first decoder layer's post-backward hook
    # starts (the unsharded gradient of that layer, before its reduce-scatter)
    last_micro = "micro%d" % (case["config"]["grad_accum"] - 1)
    k = None
    for idx, n in enumerate(in_step):
        ph, mi, region = _describe(n)[:3]
        if mi == last_micro and ph == "backward" and region and "post_backward" in region:
            k = idx
            break
    if k is not None:
        cur = 0
        for n in in_step[:k + 1]:
            cur += n.extra_fields.alloc_size
        tot, G = _groups(in_step, k)
        L.append("  -- [B] %s backward, first allocation inside a post-backward hook (curve = step_start + %d): "
                 "live blocks allocated during the step (%d B):" % (last_micro, cur, tot))
        L.append("      %s" % _opname(in_step[k]))
        L += G
    return "\n".join(L)


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_case(case, trace):
    tmp = tempfile.mkdtemp(prefix="fsdp_meas_")
    port = free_port()
    procs, files = [], []
    for r in range(WORLD):
        f = os.path.join(tmp, "rank%d.json" % r)
        files.append(f)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--case", case["name"], "--rank", str(r),
               "--port", str(port), "--result", f] + (["--trace"] if trace else [])
        env = dict(os.environ, OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outs = []
    for p in procs:
        try:
            o, _ = p.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _ = p.communicate()
        outs.append(o.decode(errors="replace"))
    if any(p.returncode != 0 for p in procs) or not all(os.path.exists(f) for f in files):
        return None, "\n".join("rank%d rc=%s\n%s" % (i, p.returncode, o[-4000:]) for i, (p, o) in
                               enumerate(zip(procs, outs)))
    res = [json.load(open(f)) for f in files]
    return res, None


def _ver(mod):
    try:
        return __import__(mod).__version__
    except Exception:
        return None


def assemble(case, res):
    per = [r["measured"] for r in res]
    busiest = max(range(WORLD), key=lambda i: per[i]["peak_allocated_bytes"])
    m = dict(per[busiest])
    m["busiest_rank"] = busiest
    m["per_rank"] = per
    m["params_total"] = res[0]["params_total"]
    m["params_trainable"] = res[0]["params_trainable"]
    rec = {"name": case["name"], "config": case["config"], "measured": m,
            "check": [r["check"] for r in res], "layout": [r["layout"] for r in res],
            "fsdp": {"version": case["config"]["fsdp_version"],
                     "wrap": ("each LlamaDecoderLayer, then the root" if case["wrap"] == "layer" else
                              "accelerate's PEFT policy: each LlamaDecoderLayer and each leaf module with a "
                              "trainable weight (lora_A/lora_B), then the root"),
                     "fsdp1": {"sharding_strategy": "FULL_SHARD", "use_orig_params": True,
                               "limit_all_gathers": True, "forward_prefetch": False,
                               "backward_prefetch": "BACKWARD_PRE (default)"}
                     if case["config"]["fsdp_version"] == 1 else None,
                     "fsdp2": {"reshard_after_forward": "True for layers, None (=False) for the root"}
                     if case["config"]["fsdp_version"] == 2 else None,
                     "mixed_precision": ("param_dtype=bf16, reduce_dtype=bf16, buffer_dtype=fp32 (FSDP1) / "
                                         "output_dtype=bf16 (FSDP2), plus torch.autocast(cpu, bf16)")
                     if case["config"]["precision"] == "bf16-mixed" else None,
                     "accumulation": ("plain loss.backward() on every micro-batch, no no_sync(): each backward "
                                      "reduce-scatters (Composer-style microbatch loop)" if case["sync_each"] else
                                      "no_sync() for micro-batches 0..%d" % (case["config"]["grad_accum"] - 2)
                                      if case["config"]["fsdp_version"] == 1 else
                                      "set_requires_gradient_sync(False) for micro-batches 0..%d"
                                      % (case["config"]["grad_accum"] - 2))
                     if case["config"]["grad_accum"] > 1 else None,
                     "process_group": "gloo, world size 2, 127.0.0.1", "threads_per_rank": 1},
            "hf": {"attn_implementation": "eager", "lora": {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0,
                                                              "target_modules": ["q_proj", "v_proj"]}
                   if isinstance(case["config"]["finetune"], dict) else None,
                   "adamw": {"lr": 1e-3, "weight_decay": 0.01, "foreach": False},
                   "loss": "outputs.loss / grad_accum, outputs deleted before backward"},
            "versions": {"torch": torch.__version__, "transformers": _ver("transformers"), "peft": _ver("peft"),
                         "accelerate": _ver("accelerate"), "python": sys.version.split()[0]},
            "torch": torch.__version__, "device": "cpu",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    if case.get("notes"):
        rec["notes"] = case["notes"]
    return rec


SEP = "=" * 110


def table(path):
    print("| case | rank | peak | step_start | fwd peak | bwd peak | opt peak | grads kept | opt states | "
          "sharded params | peak at |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for ln in open(path):
        r = json.loads(ln)
        for i, m in enumerate(r["measured"]["per_rank"]):
            print("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s %s: %s |" % (
                r["name"] if i == 0 else "", i, m["peak_allocated_bytes"], m["step_start_bytes"],
                m["forward_peak_bytes"], m["backward_peak_bytes"], m["optimizer_peak_bytes"],
                m["grad_bytes_before_optimizer"], m["optimizer_state_bytes"], m["sharded_param_bytes"],
                m["peak_micro"], m["peak_phase"], (m["peak_op"] or "").split(" in ")[0][:60]))


def merge(args, lines, traces):
    return merge_results(args.out, args.trace_out, lines, traces, [c["name"] for c in CASES], SEP)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--case")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--port", type=int)
    ap.add_argument("--result")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "measured.jsonl"))
    ap.add_argument("--trace-out", default=os.path.join(HERE, "traces.txt"))
    ap.add_argument("--no-trace", action="store_true")
    ap.add_argument("--only", action="append")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--table", action="store_true", help="print a markdown table of --out and exit")
    ap.add_argument("--merge", action="store_true", help="replace/add only the cases run in the existing --out "
                    "and --trace-out files (in CASES order)")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.table:
        return table(args.out)
    cases = [c for c in CASES if not args.only or any((c["name"] == s[1:]) if s.startswith("=") else (s in c["name"])
                                                      for s in args.only)]
    if args.list:
        for c in cases:
            print(c["name"])
        return
    lines, traces, failed = [], [], []
    for c in cases:
        t = time.time()
        res, err = run_case(c, trace=not args.no_trace)
        if res is None:
            print("FAILED %s\n%s" % (c["name"], err), file=sys.stderr)
            failed.append(c["name"])
            continue
        rec = assemble(c, res)
        lines.append(json.dumps(rec))
        if "trace" in res[0]:
            traces.append(res[0]["trace"])
        print("%-28s peak per rank %s  start %s  (%.0fs)" % (
            c["name"], [r["measured"]["peak_allocated_bytes"] for r in res],
            [r["measured"]["step_start_bytes"] for r in res], time.time() - t), file=sys.stderr)
    if args.merge:
        lines, traces = merge(args, lines, traces)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if traces and not args.no_trace:
        with open(args.trace_out, "w") as f:
            f.write("measure.py traces (rank 0), torch %s; groups: blocks allocated during the measured step and "
                    "live at its peak.\n" % torch.__version__)
            f.write("\n".join(traces) + "\n")
    if failed:
        print("failed: %s" % failed, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
