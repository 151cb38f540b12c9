#!/usr/bin/env python3
"""Per-rank training-step memory of torchtitan's Llama 3 under FSDP2, TP, PP and activation
checkpointing (CPU, gloo, world size 2 or 4).

    build/venv-titan/bin/python tests/validation/stacks/torchtitan/measure.py \
        [--out tests/validation/stacks/torchtitan/measured.jsonl] \
        [--trace-out tests/validation/stacks/torchtitan/traces.txt] [--only SUBSTR]... [--list] [--merge]

The real code runs: torchtitan 0.2.2's ``Transformer`` (torchtitan/models/llama3/model/model.py),
its ``parallelize_llama`` (models/llama3/infra/parallelize.py: apply_tp, apply_ac, apply_fsdp),
``pipeline_llm`` (distributed/pipeline_parallel.py), ``build_optimizers``
(components/optimizer.py), ``cross_entropy_loss`` (components/loss.py), ``clip_grad_norm_``,
``get_train_context`` / ``maybe_enable_amp`` (distributed/utils.py) and ``ParallelDims``, all
driven by a ``JobConfig`` as torchtitan's ``Trainer.train_step`` / ``forward_backward_step``
(train.py) drive them.  The process group is gloo over 127.0.0.1, one thread per rank.

Method (that of ../fsdp/measure.py and tests/validation/profiler_memory.py): the whole run
is profiled with ``torch.profiler.profile(profile_memory=True)``; the 3rd of 3 optimizer steps
is measured.  ``step_start_bytes`` = the profiler's running total when it starts,
``peak_allocated_bytes`` = step_start + the highest rise of the curve during the step.  Blocks
allocated under ``c10d::*`` / ``gloo:*`` ops (gloo's own buffers) are taken out of the curve
and reported as ``gloo_internal``, as in the fsdp folder.

Patches (in this process only, no file of torchtitan is changed):
* ``torchtitan.distributed.parallel_dims.device_type = "cpu"``: torchtitan's
  ``tools/utils.get_device_info`` falls back to "cuda" when no accelerator is present, and
  ``ParallelDims.build_mesh`` would then build a CUDA mesh.
* cases with ``sdpa_cpu_saved``: ``aten._scaled_dot_product_flash_attention_for_cpu`` is added
  to ``parallelize._op_sac_save_list`` so that op-level SAC saves the CPU SDPA output as it
  saves the CUDA flash / efficient / cuDNN SDPA outputs (on CUDA those ops are in the list).
* FSDP cases: ``set_force_sum_reduction_for_comms(True)`` on every FSDP module, since gloo lacks the
  ``ReduceOp.PREMUL_SUM(1/1.0)`` that FSDP2 chooses after torchtitan's ``set_gradient_divide_factor(1.0)``;
  with the factor 1.0 the SUM path divides by nothing (same bytes, in place).
* PP cases: torchtitan's ``pipeline_module_split`` builds ``PipelineStage(..., device)``
  with the device we pass (cpu).
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
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # profiler_memory
import profiler_memory as pm  # noqa: E402
from profiler_memory import (  # noqa: E402
    alloc_nodes as _alloc_nodes, ancestor_names, live_blocks, merge_results, split_collective_allocations, step_window)

HERE = os.path.dirname(os.path.abspath(__file__))

SEQ, MB = 128, 2
DIM, LAYERS, HEADS, KV, VOCAB, MULTIPLE_OF = 256, 4, 4, 2, 2000, 64  # ffn: 64 * ceil(int(2*4*256/3) / 64) = 704
HF = {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": DIM, "intermediate_size": 704,
      "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV,
      "max_position_embeddings": SEQ, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
      "tie_word_embeddings": False, "attention_dropout": 0.0, "attention_bias": False, "mlp_bias": False,
      "hidden_act": "silu", "use_cache": False}


def _case(name, dp=1, tp=1, pp=1, ac="none", sdpa_patch=True, n_micro=1, schedule="1F1B",
          loss_parallel=True, impl="fused", grad_accum=1):
    world = dp * tp * pp
    assert grad_accum == 1 or pp == 1, "gradient accumulation is only driven without PP here"
    fsdp = dp > 1
    # torchtitan: FSDP2 params bf16 / reduce fp32; with TP or PP but without FSDP, maybe_enable_amp
    # disables mixed precision (fp32 training)
    precision = "bf16-mixed" if fsdp else "32-true"
    ckpt = {"none": "none", "full": "full", "op": "selective-op", "2": {"mode": "layers", "every": 2}}[ac]
    cfg = {"framework": "torchtitan", "framework_version": "0.2.2", "model": {"hf_config": copy.deepcopy(HF)}, "seq_len": SEQ,
           "micro_batch": MB,
           "grad_accum": n_micro if pp > 1 else grad_accum, "precision": precision, "optimizer": "adamw",
           "optimizer_impl": "fused" if impl == "fused" else impl, "finetune": "full", "attention": "flash",
           "checkpointing": ckpt, "strategy": "fsdp" if fsdp else "ddp" if world > 1 else "single", "fsdp_version": 2,
           "gpus": world, "tp": tp, "pp": pp, "cp": 1, "loss_parallel": bool(loss_parallel and tp > 1),
           "gpu": {"name": "cpu", "memory_gib": 1000}, "device": "cpu"}
    if fsdp:
        cfg["zero"] = 3
    if pp > 1:
        cfg["pp_schedule"] = {"1F1B": "1f1b", "GPipe": "gpipe"}[schedule]
    notes = []
    if fsdp:
        notes.append("FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), no autocast: the "
                     "compute runs in bf16 on bf16 unsharded params; sharded params, grads and AdamW states fp32")
        notes.append("fully_shard units: tok_embeddings, each TransformerBlock, [norm, output] "
                     "(reshard_after_forward=False), root; gradient_divide_factor=1 (loss is sum / global tokens)")
    else:
        notes.append("no FSDP: torchtitan's maybe_enable_amp disables mixed precision with TP or PP alone (fp32)")
    if ac == "op":
        notes.append("op-level SAC (torchtitan _apply_op_sac): saves outputs of the ops in _op_sac_save_list "
                     "except every 2nd aten.mm; " + (
                         "aten._scaled_dot_product_flash_attention_for_cpu ADDED to the list (mirrors CUDA, "
                         "where the flash/efficient/cudnn SDPA ops are saved)" if sdpa_patch else
                         "list unpatched: the CPU SDPA op is not in it, so attention is recomputed (CUDA saves it)"))
    if ac == "2":
        notes.append("torchtitan layer SAC selective_ac_option='2': a global counter starting at 1 wraps "
                     "layers where count %% 2 == 0, i.e. layers 1 and 3 of 0..3")
    if tp > 1:
        notes.append("torchtitan apply_tp: tok_embeddings RowwiseParallel(output Shard(1)), norms "
                     "SequenceParallel, wq/wk/wv/w1/w3 Colwise, wo/w2 Rowwise(output Shard(1)), output "
                     "Colwise(input Shard(1), output Shard(-1)) with loss_parallel; sequence parallel always on")
    if pp > 1:
        notes.append("pipeline_llm: %d stages (one per pp rank), schedule %s, %d microbatches of %d; "
                     "FSDP2 reshard_after_forward=False for every unit under PP (torchtitan default)"
                     % (pp, schedule, n_micro, MB))
    if grad_accum > 1:
        notes.append("gradient accumulation %d (Trainer.train_step: global_batch_size = local_batch_size x dp x %d): "
                     "all %d micro-batches of %d are drawn first and their valid tokens summed (one dist_sum), then "
                     "forward_backward_step per micro-batch with plain loss.backward(); gradient sync is never "
                     "disabled, so every micro-batch's backward reduce-scatters and only the sharded fp32 "
                     "gradients carry over to the next micro-batch" % (grad_accum, grad_accum, grad_accum, MB))
    notes.append("loss: cross_entropy(pred.flatten(0,1).float(), reduction='sum') / global valid tokens; "
                 "clip_grad_norm_(max_norm=1.0, foreach=True) before the optimizer step")
    return {"name": name, "config": cfg, "dp": dp, "tp": tp, "pp": pp, "ac": ac, "sdpa_patch": sdpa_patch,
            "n_micro": n_micro, "schedule": schedule, "loss_parallel": loss_parallel and tp > 1,
            "impl": impl, "world": world, "grad_accum": grad_accum, "notes": notes}


CASES = [
    _case("fsdp2_ac_none", dp=2),
    _case("fsdp2_ac_full", dp=2, ac="full"),
    _case("fsdp2_ac_selop", dp=2, ac="op"),
    _case("fsdp2_ac_selop_nopatch", dp=2, ac="op", sdpa_patch=False),
    _case("fsdp2_ac_layer2", dp=2, ac="2"),
    _case("fsdp2_ga2_ac_none", dp=2, grad_accum=2),
    _case("fsdp2_ga4_ac_none", dp=2, grad_accum=4),
    _case("fsdp2_ga2_ac_full", dp=2, ac="full", grad_accum=2),
    _case("fsdp2_tp2_ac_none", dp=2, tp=2),
    _case("fsdp2_tp2_ac_selop", dp=2, tp=2, ac="op"),
    _case("fsdp2_tp2_ac_full", dp=2, tp=2, ac="full"),
    _case("tp2_ac_none", tp=2),
    _case("tp2_ac_selop", tp=2, ac="op"),
    _case("pp2_fsdp2_1f1b_m2_ac_full", dp=2, pp=2, ac="full", n_micro=2),
    _case("pp2_fsdp2_1f1b_m4_ac_full", dp=2, pp=2, ac="full", n_micro=4),
]


# --------------------------------------------------------------------------
# torchtitan objects
# --------------------------------------------------------------------------

def job_config(case):
    from torchtitan.config import JobConfig
    jc = JobConfig()
    jc.training.seq_len = SEQ
    jc.training.local_batch_size = MB * (case["n_micro"] if case["pp"] > 1 else 1)
    # Trainer.__init__: gradient_accumulation_steps = global_batch_size // (local_batch_size * dp degree)
    jc.training.global_batch_size = jc.training.local_batch_size * case["dp"] * case["grad_accum"]
    jc.training.mixed_precision_param = "bfloat16"
    jc.training.mixed_precision_reduce = "float32"
    jc.training.max_norm = 1.0
    jc.parallelism.data_parallel_replicate_degree = 1
    jc.parallelism.data_parallel_shard_degree = case["dp"]
    jc.parallelism.tensor_parallel_degree = case["tp"]
    jc.parallelism.pipeline_parallel_degree = case["pp"]
    jc.parallelism.pipeline_parallel_schedule = case["schedule"]
    jc.parallelism.pipeline_parallel_microbatch_size = MB
    jc.parallelism.disable_loss_parallel = not case["loss_parallel"]
    ac = case["ac"]
    jc.activation_checkpoint.mode = {"none": "none", "full": "full"}.get(ac, "selective")
    if ac in ("op", "2"):
        jc.activation_checkpoint.selective_ac_option = ac
    jc.optimizer.name = "AdamW"
    jc.optimizer.implementation = case["impl"]
    jc.compile.enable = False
    return jc


def model_args():
    from torchtitan.models.llama3.model.args import TransformerModelArgs
    return TransformerModelArgs(dim=DIM, n_layers=LAYERS, n_heads=HEADS, n_kv_heads=KV, vocab_size=VOCAB,
                                multiple_of=MULTIPLE_OF, ffn_dim_multiplier=None, norm_eps=1e-5,
                                rope_theta=10000, max_seq_len=SEQ, depth_init=True, attn_type="sdpa")


def _local(t):
    from torch.distributed.tensor import DTensor
    return t._local_tensor if isinstance(t, DTensor) else t


def _storage(t):
    t = _local(t)
    if hasattr(t, "elem") and isinstance(getattr(t, "elem"), torch.Tensor):  # AsyncCollectiveTensor
        t = _local(t.elem)
    try:
        st = t.untyped_storage()
        return st.data_ptr(), st.nbytes()
    except RuntimeError:  # a wrapper without storage: not counted
        return 0, 0


pm.storage = _storage  # the saved-tensor tracer sees the local shard of a DTensor


def live_tensor_bytes(tensors):
    return pm.live_tensor_bytes(tensors, lambda t: [_storage(t)])


def fsdp_internal_tensors(parts):
    from torch.distributed.fsdp._fully_shard._fully_shard import FSDPModule
    ts = []
    for model in parts:
        for m in model.modules():
            if not isinstance(m, FSDPModule):
                continue
            grp = m._get_fsdp_state()._fsdp_param_group
            if grp is None:
                continue
            for p in grp.fsdp_params:
                ts += [p.sharded_param, getattr(p, "_sharded_param_data", None),
                       getattr(p, "_unsharded_param", None), p.unsharded_accumulated_grad, p.sharded_param.grad]
                ts += list(getattr(p, "all_gather_outputs", []) or [])
                ts += list(getattr(p, "_unsharded_inner_tensors", []) or [])
    return ts


def persistent_tensors(parts, opts, batches):
    ts = []
    for model in parts:
        ts += list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    ts += fsdp_internal_tensors(parts)
    for o in opts.optimizers:
        for st in o.state.values():
            ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    for b in batches:
        ts += list(b)
    return [t for t in ts if isinstance(t, torch.Tensor)]


def grad_bytes(parts):
    ts = []
    for model in parts:
        ts += [p.grad for p in model.parameters()]
    return live_tensor_bytes([t for t in ts if isinstance(t, torch.Tensor)])


# --------------------------------------------------------------------------
# profiler attribution
# --------------------------------------------------------------------------

def _describe(n):
    """phase, micro-batch, layer region, autograd node, innermost op (with input shapes), FSDP region."""
    phase = micro = layer = node = fsdp = None
    op = None
    p = n.parent
    while p is not None:
        nm = p.name
        if op is None and not nm.startswith(("phase:", "step", "micro", "layer:")) \
                and not nm.startswith("aten::empty") and type(p.extra_fields).__name__ == "_ExtraFields_TorchOp":
            shp = []
            for i in p.extra_fields.inputs:
                sz = getattr(i, "sizes", None)
                if sz is not None:
                    shp.append("%s(%s)" % (str(i.dtype).replace("torch.", "").replace("float", "f"),
                                           ",".join(map(str, sz))))
            op = nm + ("[" + " ".join(shp[:3]) + "]" if shp else "")
        if node is None and nm.startswith("autograd::engine::evaluate_function: "):
            node = nm.split(": ", 1)[1]
        if fsdp is None and "FSDP" in nm:
            fsdp = nm
        if layer is None and nm.startswith("layer:"):
            layer = nm.split(":", 1)[1]
        if micro is None and nm.startswith("micro"):
            micro = nm
        if phase is None and nm.startswith("phase:"):
            phase = nm.split(":", 1)[1]
        p = p.parent
    if op is None:
        op = n.parent.name if n.parent is not None else "-"
    return phase, micro, layer, node, op, fsdp


def _opname(n):
    if n is None:
        return None
    phase, micro, layer, node, op, fsdp = _describe(n)
    s = op if node is None else "%s (%s)" % (op, node)
    if layer:
        s += " in layer %s" % layer
    if fsdp:
        s += " in " + fsdp
    return s


class _Free:
    """A free event the profiler missed, put back at the moment the rank that saw it freed the block."""

    def __init__(self, ptr, size, t, parent):
        from types import SimpleNamespace
        self.extra_fields = SimpleNamespace(ptr=ptr, alloc_size=-size)
        self.start_time_ns = t
        self.id = 1 << 62
        self.parent = parent
        self.children = []
        self.name = "[free not seen by the profiler]"


def _ghost_frees(allocs, tree):
    """FSDP2's flat all-gather output is referenced by gloo's Work object too; when gloo's worker thread
    drops the last reference, the free happens on a thread the profiler does not record, and the block
    looks live for the rest of the run (one rank in some runs, the other in others).  Every block allocated
    under an ``FSDP::all_gather`` region that is never freed in the curve gets its free put back at the end
    of the next ``FSDP::all_gather_copy_out`` (where FSDP drops its own reference, and where the ranks that
    see the free see it).  Returns (events, [(bytes, time)] of the frees put back)."""
    live, extra = {}, []
    for n in allocs:
        ef = n.extra_fields
        if ef.alloc_size > 0:
            old = live.get(ef.ptr)
            if old is not None:
                # the address is handed out again without a free in between: the free was missed (gloo's
                # thread dropped the last reference, e.g. to a TP functional collective's output). The CPU
                # allocator reuses a freed address at once, so the free is put just before the reuse.
                extra.append(_Free(ef.ptr, old.extra_fields.alloc_size, n.start_time_ns - 1, n.parent))
            live[ef.ptr] = n
        else:
            live.pop(ef.ptr, None)
    copy_outs = []
    stack = list(tree)
    while stack:
        e = stack.pop()
        if e.name.startswith("FSDP::all_gather_copy_out"):
            copy_outs.append(e)
        stack.extend(e.children)
    copy_outs.sort(key=lambda e: e.start_time_ns)
    for ptr, n in live.items():
        if not any(a.startswith("FSDP::all_gather ") or a == "FSDP::all_gather" for a in ancestor_names(n)):
            continue
        nxt = [e for e in copy_outs if e.start_time_ns >= n.start_time_ns]
        if not nxt:
            continue
        extra.append(_Free(ptr, n.extra_fields.alloc_size, nxt[0].end_time_ns, nxt[0]))
    out = sorted(list(allocs) + extra, key=lambda n: (n.start_time_ns, n.id))
    return out, [(-e.extra_fields.alloc_size, e.start_time_ns, e.parent.name if e.parent is not None else None)
                 for e in extra]


def _groups(in_step, upto, with_layer=True):
    groups = defaultdict(lambda: [0, 0, defaultdict(int)])
    for ptr, n in live_blocks(in_step, upto).items():
        ph, mi, layer, node, op, fsdp = _describe(n)
        key = ("%s/%s" % (mi or "-", ph or "-"), ("L" + layer) if (layer and with_layer) else "-",
               node or "-", op + (" in " + fsdp if fsdp else ""))
        g = groups[key]
        sz = n.extra_fields.alloc_size
        g[0] += sz
        g[1] += 1
        g[2][sz] += 1
    L = []
    for key, (nb, cnt, sizes) in sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0])):
        sz = ", ".join("%dB x%d" % (k, v) if v > 1 else "%dB" % k for k, v in
                       sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])[:5])
        L.append("  %10d x%-3d %-16s | %-3s | %-26s | %s  {%s}" % (nb, cnt, key[0], key[1], key[2][:26],
                                                                 key[3][:110], sz))
    return sum(g[0] for g in groups.values()), L


def forward_residue(in_step, micro):
    """Blocks allocated in the forward of `micro` and still live when its backward starts: what the
    forward left for the backward (saved activations, SAC caches, checkpoint inputs, the loss, unsharded
    root params), per layer region and op."""
    k = None
    for i, n in enumerate(in_step):
        ph, mi = _describe(n)[:2]
        if mi == micro and ph == "backward":
            k = i - 1
            break
    if k is None:
        return None
    per_layer = defaultdict(int)
    items = defaultdict(lambda: [0, 0])
    for ptr, n in live_blocks(in_step, k).items():
        ph, mi, layer, node, op, fsdp = _describe(n)
        if mi != micro or ph != "forward":
            continue
        reg = ("layer" + layer) if layer else "outside"
        per_layer[reg] += n.extra_fields.alloc_size
        it = items[(reg, op + (" in " + fsdp if fsdp else ""), n.extra_fields.alloc_size)]
        it[0] += n.extra_fields.alloc_size
        it[1] += 1
    last = "layer%d" % (LAYERS - 1)
    present = sorted({r for r in per_layer if r.startswith("layer")}, key=lambda s: int(s[5:]))
    if present:
        last = present[-1]
    detail = {}
    for reg in sorted(set(r for r, _, _ in items)):
        detail[reg] = ["%d B = %d x %d B  %s" % (v[0], v[1], sz, op) for (r, op, sz), v in
                       sorted(items.items(), key=lambda kv: -kv[1][0]) if r == reg]
    return {"per_region_bytes": dict(sorted(per_layer.items())), "detail": detail, "last_layer": last}


# --------------------------------------------------------------------------
# worker
# --------------------------------------------------------------------------

def _layer_regions(model):
    from torch.autograd.profiler import record_function
    hs = []
    layers = getattr(model, "layers", None)
    if layers is None:
        return hs
    for name, layer in layers.items():
        box = {}

        def pre(mod, args, kwargs=None, name=name, box=box):
            r = record_function("layer:%s" % name)
            r.__enter__()
            box.setdefault("stack", []).append(r)

        def post(mod, args, out, name=name, box=box):
            box["stack"].pop().__exit__(None, None, None)

        hs.append(layer.register_forward_pre_hook(pre))
        hs.append(layer.register_forward_hook(post))
    return hs


def worker(args):
    import torch.distributed as dist
    from torch.profiler import profile, ProfilerActivity, record_function
    torch.set_num_threads(1)
    case = [c for c in CASES if c["name"] == args.case][0]
    W, rank = case["world"], args.rank
    import torchtitan.distributed.parallel_dims as tt_pd
    tt_pd.device_type = "cpu"  # patch: torchtitan's get_device_info() says "cuda" on a CPU-only machine
    from torchtitan.distributed import ParallelDims, utils as dist_utils
    from torchtitan.models.llama3.model.model import Transformer
    from torchtitan.models.llama3.infra import parallelize as tt_par
    from torchtitan.components.optimizer import build_optimizers
    from torchtitan.components.loss import cross_entropy_loss, IGNORE_INDEX
    if case["sdpa_patch"]:
        tt_par._op_sac_save_list.add(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default)
    steps = 3
    jc = job_config(case)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        with record_function("setup"):
            dist.init_process_group("gloo", rank=rank, world_size=W,
                                    init_method="tcp://127.0.0.1:%d" % args.port)
            pd = ParallelDims(dp_replicate=1, dp_shard=case["dp"], cp=1, tp=case["tp"], pp=case["pp"], ep=1,
                              etp=1, world_size=W)
            pd.build_mesh()
            margs = model_args()
            torch.manual_seed(0)
            # torchtitan builds on "meta" and calls to_empty() + init_weights() after parallelizing;
            # under profile_memory=True to_empty() cannot swap FSDP's DTensor parameters (the profiler holds
            # weak references), so the model is built and initialised on the CPU first (same modules,
            # parameters, buffers and init functions; only setup differs).
            model = Transformer(margs)
            with torch.no_grad():
                model.init_weights(buffer_device=torch.device("cpu"))
            loss_fn = cross_entropy_loss
            if pd.pp_enabled:
                from torchtitan.distributed.pipeline_parallel import pipeline_llm
                pp_schedule, parts, has_first, has_last = pipeline_llm(
                    model, pd, jc, torch.device("cpu"), margs, tt_par.parallelize_llama, loss_fn)
                # the whole model was only the template that pipeline_module_split deep-copies per stage
                # (torchtitan's is on "meta"); drop it so it is not counted
                del model
                gc.collect()
                for m in parts:
                    m.train()
            else:
                model = tt_par.parallelize_llama(model, pd, jc)
                model.train()
                parts = [model]
                has_first = has_last = True
            # gloo has no ReduceOp.PREMUL_SUM, which FSDP2 picks for torchtitan's gradient_divide_factor=1.0
            # (disable_fsdp_gradient_division); with force-sum it reduces with SUM and divides by the
            # factor 1.0, i.e. not at all: the same bytes, in place, as NCCL's PREMUL_SUM(1.0).
            from torch.distributed.fsdp import FSDPModule
            for m in parts:
                for sub in m.modules():
                    if isinstance(sub, FSDPModule):
                        sub.set_force_sum_reduction_for_comms(True)
            opts = build_optimizers(parts, jc.optimizer, pd)
            train_context = dist_utils.get_train_context(  # as Trainer.__init__ (train.py)
                pd.tp_enabled and not jc.parallelism.disable_loss_parallel)
            amp = dist_utils.maybe_enable_amp(pd, jc.training.mixed_precision_param, "cpu")
            # batches: one per data-parallel rank ("batch" mesh); TP / PP ranks of a group share it
            dp_rank = pd.get_mesh("batch").get_local_rank() if pd.dp_enabled else 0
            g = torch.Generator().manual_seed(1 + 100 * dp_rank)
            nb = case["n_micro"] if case["pp"] > 1 else 1
            # gradient accumulation: Trainer.train_step draws gradient_accumulation_steps micro-batches of
            # local_batch_size (all of them before the first forward) and runs forward_backward_step on each
            ga = jc.training.global_batch_size // (jc.training.local_batch_size * (pd.dp_shard * pd.dp_replicate))
            assert ga == case["grad_accum"]
            batches = []
            for _ in range(ga):
                ids = torch.randint(0, VOCAB, (MB * nb, SEQ + 1), generator=g)
                batches.append((ids[:, :-1].contiguous(), ids[:, 1:].contiguous()))
        hooks = []
        for m in parts:
            hooks += _layer_regions(m)
        torch.manual_seed(2)
        losses = []
        tracer = None
        micro_start_grad = []  # tensor-computed gradient bytes when each micro-batch of the measured step starts
        for i in range(steps):
            opts.zero_grad()
            gc.collect()
            dist.barrier()
            last = i == steps - 1
            if last:
                pers = persistent_tensors(parts, opts, batches)
                tensor_start = live_tensor_bytes(pers)
                persistent_ptrs = {_storage(t)[0] for t in pers}
                del pers
                if not pd.pp_enabled and case["ac"] == "none":
                    # not under AC: walking the graph reads the nodes' _saved_* attributes, and inside a
                    # checkpointed region each read runs checkpoint's unpack hook, i.e. a recomputation
                    tracer = pm.BlockSavedTracer(list(parts[0].layers.values()))
            with record_function("step%d" % i):
                local_valid = torch.tensor(0, dtype=torch.int64)
                for inputs, labels in batches:
                    local_valid += (labels != IGNORE_INDEX).sum()
                if pd.dp_enabled:
                    gvt = dist_utils.dist_sum(local_valid, pd.get_mesh("batch"))
                else:
                    gvt = local_valid.float()
                accumulated_losses = []  # train_step keeps every micro-batch's loss.detach() until the end
                for m, (inputs, labels) in enumerate(batches):
                    if last:
                        micro_start_grad.append(grad_bytes(parts))
                    with record_function("micro%d" % m):
                        if pd.pp_enabled:
                            with train_context():
                                targets, pl = (labels, []) if has_last else (None, None)
                                with record_function("phase:pipeline"):
                                    if has_first:
                                        pp_schedule.step(inputs, target=targets, losses=pl, return_outputs=False)
                                    else:
                                        pp_schedule.step(target=targets, losses=pl, return_outputs=False)
                            loss = (torch.sum(torch.stack(pl)) / gvt) if has_last else torch.tensor([-1.0])
                        else:
                            with train_context():
                                with record_function("phase:forward"):
                                    ctx = tracer.hooks() if (last and tracer and m == 0) else contextlib.nullcontext()
                                    with amp, ctx:
                                        pred = model(inputs)
                                        loss_sum = loss_fn(pred, labels)
                                        loss = loss_sum / gvt
                                    del pred, loss_sum
                                if last and tracer and m == 0:
                                    tracer.walk(loss)
                                with record_function("phase:backward"):
                                    loss.backward()
                        accumulated_losses.append(loss.detach())
                        losses.append(float(loss.detach().full_tensor() if hasattr(loss, "full_tensor")
                                            else loss.detach().sum()))
                with record_function("phase:clip"):
                    grad_norm = dist_utils.clip_grad_norm_([p for m in parts for p in m.parameters()],
                                                           jc.training.max_norm, foreach=True,
                                                           pp_mesh=pd.get_optional_mesh("pp"), ep_enabled=False)
                if last:
                    mid_grad = grad_bytes(parts)
                with record_function("phase:optimizer"):
                    opts.step()
            if last:
                end_tensors = persistent_tensors(parts, opts, batches)
                end_bytes = live_tensor_bytes(end_tensors)
                opt_state = live_tensor_bytes([v for o in opts.optimizers for st in o.state.values()
                                               for v in st.values() if isinstance(v, torch.Tensor)])
                shard_param_bytes = live_tensor_bytes([p for m in parts for p in m.parameters()])
                gn = float(grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm)
            del loss, grad_norm, accumulated_losses
        dist.barrier()
    for h in hooks:
        h.remove()
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    t0, t1 = step_node.start_time_ns, step_node.end_time_ns
    main_allocs, comm_events = split_collective_allocations(allocs)
    main_allocs, ghosts = _ghost_frees(main_allocs, tree)
    raw_cum, raw_start, raw_peak = 0, None, 0
    for n in allocs:
        if raw_start is None and n.start_time_ns >= t0:
            raw_start = raw_cum
        raw_cum += n.extra_fields.alloc_size
        if t0 <= n.start_time_ns <= t1 and raw_start is not None:
            raw_peak = max(raw_peak, raw_cum - raw_start)
    c_cur, c_peak, c_n, c_start = 0, 0, 0, None
    for n in comm_events:
        if c_start is None and n.start_time_ns >= t0:
            c_start = c_cur
        c_cur += n.extra_fields.alloc_size
        if t0 <= n.start_time_ns <= t1:
            c_peak = max(c_peak, c_cur)
            c_n += n.extra_fields.alloc_size > 0
    gloo_internal = {"blocks_in_step": c_n, "max_live_bytes_in_step": c_peak,
                     "live_at_step_start_bytes": c_start or 0, "raw_step_start_bytes": raw_start,
                     "raw_peak_allocated_bytes": (raw_start or 0) + raw_peak}
    in_step, live0, step_start, _ = step_window(main_allocs, t0, t1)
    phases = ("forward", "backward", "pipeline", "clip", "optimizer")
    cur, peak, peak_i = 0, 0, -1
    phase_peak = {p: 0 for p in phases}
    phase_op = {}
    micro_peak = defaultdict(int)
    micro_fwd_start = {}  # curve value just before the first block of each micro-batch's forward
    for i, n in enumerate(in_step):
        ph, mi = _describe(n)[:2]
        if mi is not None and ph == "forward" and mi not in micro_fwd_start:
            micro_fwd_start[mi] = step_start + cur
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
        "peak_phase": _describe(pk)[0],
        "peak_micro": _describe(pk)[1],
        "peak_op": _opname(pk),
        "grad_bytes_before_optimizer": mid_grad,
        "grad_accum": case["grad_accum"] if not pd.pp_enabled else None,
        "micro_forward_start_bytes": [micro_fwd_start[k] for k in sorted(micro_fwd_start, key=lambda s: int(s[5:]))],
        "grad_bytes_at_micro_start": micro_start_grad,
        "optimizer_state_bytes": opt_state,
        "sharded_param_bytes": shard_param_bytes,
        "losses": [round(x, 6) for x in losses[-len(batches):]],
        "grad_norm": round(gn, 6),
        "gloo_internal": gloo_internal,
    }
    for p in phases:
        if p in phase_op or p in ("forward", "backward", "clip", "optimizer"):
            if p == "pipeline" and not pd.pp_enabled:
                continue
            if p in ("forward", "backward") and pd.pp_enabled:
                continue
            measured["%s_peak_bytes" % p] = step_start + phase_peak[p]
            measured["%s_peak_op" % p] = _opname(phase_op.get(p))
    measured["micro_phase_peaks"] = {k: step_start + v for k, v in sorted(micro_peak.items())}
    if not pd.pp_enabled:
        fr = forward_residue(in_step, "micro0")
        measured["forward_residue_bytes"] = fr["per_region_bytes"] if fr else None
    check = {"ghost_frees": ghosts, "tensor_step_start_bytes": tensor_start, "step_net_bytes": cur,
             "tensor_end_minus_start": end_bytes - tensor_start}
    extra = sorted(((n.extra_fields.alloc_size, " < ".join(a for a in ancestor_names(n))[:160])
                    for p, n in live0.items() if p not in persistent_ptrs), reverse=True)
    if extra:
        check["unaccounted_at_start"] = {"bytes": sum(e[0] for e in extra), "blocks": len(extra),
                                         "largest": extra[:6]}
    res = {"rank": rank, "measured": measured, "check": check,
           "params_total": sum(int(torch.Size(p.shape).numel()) for m in parts for p in m.parameters())}
    if args.trace and rank == 0:
        res["trace"] = trace_text(case, in_step, peak_i, step_start, measured, tracer, persistent_ptrs,
                                  fr if not pd.pp_enabled else None)
    if tracer is not None and not pd.pp_enabled:
        rec = {p: r for p, r in tracer.records.items() if p not in persistent_ptrs}
        per_region = defaultdict(int)
        for r in rec.values():
            per_region[str(r["region"])] += r["nbytes"]
        lastl = [r for r in rec.values() if r["region"] == LAYERS - 1]
        res["saved_for_backward"] = {
            "per_region_bytes": dict(per_region),
            "last_layer": ["%d B %s%s <- %s ; %s" % (r["nbytes"], r["dtype"], pm.fmt_shape(r["shape"]),
                                                     r["producer"], ",".join(sorted(set(r["keepers"]))))
                           for r in lastl]}
    if not pd.pp_enabled and fr:
        res["forward_residue_last_layer"] = fr["detail"].get(fr["last_layer"])
        res["forward_residue_layer0"] = fr["detail"].get("layer0")
        res["forward_residue_outside"] = fr["detail"].get("outside")
    with open(args.result, "w") as f:
        json.dump(res, f)
    dist.destroy_process_group()


def trace_text(case, in_step, peak_i, step_start, measured, tracer, persistent_ptrs, fr):
    L = ["=" * 110]
    L.append("=== %s rank 0: peak=%d = step_start %d + %d  [%s %s: %s]" % (
        case["name"], measured["peak_allocated_bytes"], step_start, measured["peak_allocated_bytes"] - step_start,
        measured["peak_micro"], measured["peak_phase"], measured["peak_op"]))
    L.append("  " + "  ".join("%s=%s" % (k, v) for k, v in measured.items() if k.endswith("_peak_bytes")) +
             "  grads kept=%d  optimizer states=%d  sharded params=%d" % (
                 measured["grad_bytes_before_optimizer"], measured["optimizer_state_bytes"],
                 measured["sharded_param_bytes"]))
    tot, G = _groups(in_step, peak_i)
    L.append("  -- [A] at the peak: blocks allocated during the step and still live (%d B), by micro/phase | "
             "layer | autograd node | op[input shapes] {block sizes}:" % tot)
    L += G
    if fr:
        L.append("  -- [B] forward residue of micro0 (allocated in its forward, live when its backward starts), "
                 "bytes per region: %s" % json.dumps(fr["per_region_bytes"]))
        for reg in (fr["last_layer"], "outside"):
            L.append("     %s:" % reg)
            for ln in fr["detail"].get(reg, []):
                L.append("       " + ln)
    if tracer is not None:
        L.append("  -- [C] saved-tensor walk (profiler_memory.BlockSavedTracer; under AC/SAC it sees only what is "
                 "saved outside the checkpoint: the block inputs; SAC's cached op outputs are in [B])")
        pm.print_saved_by_block(L.append, tracer.records, persistent_ptrs, tracer, "layer", "decoder layer",
                                "during the forward")
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
    tmp = tempfile.mkdtemp(prefix="titan_meas_")
    port = free_port()
    procs, files = [], []
    for r in range(case["world"]):
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
        return None, "\n".join("rank%d rc=%s\n%s" % (i, p.returncode, o[-5000:]) for i, (p, o) in
                               enumerate(zip(procs, outs)))
    return [json.load(open(f)) for f in files], None


from profiler_memory import package_version as _ver  # noqa: E402


def assemble(case, res):
    per = [r["measured"] for r in res]
    # Ranks of one pipeline stage differ only by frees gloo makes on its own thread, which the profiler misses
    # (check.ghost_frees): their live tensors agree, so each stage's lowest peak is kept, then the busiest stage
    # (the mesh puts pp outermost: rank r is on stage r // (world / pp)).
    per_stage = len(per) // case["pp"]
    stage_low = [min(range(s * per_stage, (s + 1) * per_stage), key=lambda i: per[i]["peak_allocated_bytes"])
                 for s in range(case["pp"])]
    chosen = max(stage_low, key=lambda i: per[i]["peak_allocated_bytes"])
    m = dict(per[chosen])
    m["reported_rank"] = chosen
    m["per_rank"] = per
    m["params_local_rank0"] = res[0]["params_total"]
    cfg = copy.deepcopy(case["config"])
    out = {"name": case["name"], "config": cfg, "notes": case["notes"], "measured": m,
           "saved_for_backward_rank0": res[0].get("saved_for_backward"),
           "forward_residue_rank0_last_layer": res[0].get("forward_residue_last_layer"),
           "forward_residue_rank0_layer0": res[0].get("forward_residue_layer0"),
           "forward_residue_rank0_outside": res[0].get("forward_residue_outside"),
           "check": [r["check"] for r in res],
           "torchtitan": {"version": _ver("torchtitan"), "parallel": {"dp_shard": case["dp"], "tp": case["tp"],
                                                                      "pp": case["pp"]},
                          "activation_checkpoint": case["ac"],
                          "op_sac_cpu_sdpa_added": bool(case["sdpa_patch"] and case["ac"] == "op"),
                          "optimizer": {"name": "AdamW", "implementation": case["impl"], "lr": 8e-4,
                                        "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1},
                          "pp_schedule": case["schedule"] if case["pp"] > 1 else None,
                          "n_microbatches": case["n_micro"] if case["pp"] > 1 else None,
                          "process_group": "gloo, world size %d, 127.0.0.1" % case["world"],
                          "threads_per_rank": 1},
           "versions": {"torch": torch.__version__, "torchtitan": _ver("torchtitan"), "python": sys.version.split()[0]},
           "torch": "2.13.0", "device": "cpu",
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    return out


SEP = "=" * 110


def table(path):
    print("| case | ranks | peak per rank | step_start per rank | peak at (rank 0) |")
    print("|---|---|---|---|---|")
    for ln in open(path):
        r = json.loads(ln)
        pr = r["measured"]["per_rank"]
        peaks = sorted(set(m["peak_allocated_bytes"] for m in pr))
        print("| %s | %d | %s | %s | %s %s: %s |" % (
            r["name"], len(pr), " / ".join(str(m["peak_allocated_bytes"]) for m in pr),
            " / ".join(str(m["step_start_bytes"]) for m in pr), pr[0]["peak_micro"], pr[0]["peak_phase"],
            (pr[0]["peak_op"] or "")[:70]))


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
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--merge", action="store_true")
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
        lines.append(json.dumps(assemble(c, res)))
        if "trace" in res[0]:
            traces.append(res[0]["trace"])
        print("%-28s peak per rank %s  start %s  (%.0fs)" % (
            c["name"], [r["measured"]["peak_allocated_bytes"] for r in res],
            [r["measured"]["step_start_bytes"] for r in res], time.time() - t), file=sys.stderr, flush=True)
        if args.merge:  # write as we go
            ls, ts = merge(args, lines, traces)
            _write(args, ls, ts)
    if args.merge:
        lines, traces = merge(args, lines, traces)
    _write(args, lines, traces)
    if failed:
        print("failed: %s" % failed, file=sys.stderr)
        sys.exit(1)


def _write(args, lines, traces):
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if traces and not args.no_trace:
        with open(args.trace_out, "w") as f:
            f.write("measure.py traces (rank 0), torch %s; [A] groups: blocks allocated during the measured step "
                    "and live at its peak.\n" % torch.__version__)
            f.write("\n".join(traces) + "\n")


if __name__ == "__main__":
    main()
