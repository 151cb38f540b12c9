#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one training step built from torchtune's own code (CPU).

Ground truth for a ``"framework": "torchtune"`` profile in vramcalc.  Each case builds a
tiny llama3-style model with torchtune's component builders (``llama3`` / ``lora_llama3``,
random init, no weights from any hub) the way torchtune's single-device recipes do
(``recipes/full_finetune_single_device.py``, ``recipes/lora_finetune_single_device.py``,
torchtune 0.6.1):

* the model is built under ``training.set_default_dtype(torch.bfloat16)`` ("dtype: bf16"):
  every weight (and the LoRA adapters, and QLoRA's non-quantized weights) is bf16, no autocast;
* activation checkpointing = ``training.set_activation_checkpointing(model,
  auto_wrap_policy={modules.TransformerSelfAttentionLayer})`` (non-reentrant checkpoint_wrapper);
* loss = ``CEWithChunkedOutputLoss`` (8 chunks, ``model.set_num_output_chunks(8)``), or, for
  comparison, ``torch.nn.CrossEntropyLoss`` (the model then returns ``output(h).float()``);
* the step is the recipes' ``train()`` body: ``current_num_tokens = (labels != -100).sum()``,
  ``_loss_step`` (labels shifted with ``ignore_labels_cache``, ``del logits``),
  ``current_loss = loss * current_num_tokens``, ``running_loss += current_loss``,
  ``current_loss.backward()``, then ``training.scale_grads(model, 1 / num_tokens)``,
  ``optimizer.step()``, ``optimizer.zero_grad(set_to_none=True)``;
* optimizer = ``torch.optim.AdamW(lr=3e-4, weight_decay=0.01, foreach=False)`` over
  ``model.parameters()`` (frozen ones get no state); with ``optimizer_in_bwd`` one AdamW per
  parameter stepped (and ``zero_grad``-ed) by ``training.register_optim_in_bwd_hooks``.

    build/venv-torchtune/bin/python tests/validation/stacks/torchtune/measure.py \
        --out tests/validation/stacks/torchtune/measured.jsonl \
        --trace-out tests/validation/stacks/torchtune/traces.txt

Counting is the method of ``tests/validation/measure_hf.py``: the whole run is profiled
with ``torch.profiler.profile(profile_memory=True)``; c10's CPU allocator reports every
allocation and free with its exact size; the running sum over
``kineto_results.experimental_event_tree()`` is the live-bytes curve.  Three steps run and the
3rd is measured.  ``step_start_bytes`` is computed from the tensors (parameters -- NF4
parameters through their inner tensors --, buffers, optimizer states, grads, the batch and
the recipe's ``ignore_labels_cache``) and checked against the profiler's running total;
``peak_allocated_bytes`` = step_start_bytes + the highest rise of the curve inside the step.

The saved-tensor tracer (saved_tensors_hooks whose pack returns a detached alias of the same
storage) always runs: it does not allocate (checked with ``--no-trace``).  Regions: ``embed``,
``layerN``, ``final_norm``, ``output`` (lm_head, per chunk), ``loss``.
"""
import argparse
import contextlib
import copy
import datetime
import gc
import json
import logging
import os
import sys
import time
import warnings
import weakref
from collections import defaultdict, OrderedDict

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
logging.disable(logging.WARNING)

import torch  # noqa: E402
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # for profiler_memory
from profiler_memory import (  # noqa: E402
    live_tensor_bytes as _live_tensor_bytes, count_params, alloc_nodes as _alloc_nodes,
    ancestors as _ancestors, describe as _describe, opname as _opname, fmt_shape as _fmt_shape,
    step_window, step_peaks, live_groups, print_groups)
from torch import nn  # noqa: E402

import torchao  # noqa: E402
import torchtune  # noqa: E402
from torchtune import modules, training  # noqa: E402
from torchtune.models.llama3._component_builders import llama3, lora_llama3  # noqa: E402
from torchtune.modules.loss import CEWithChunkedOutputLoss  # noqa: E402
from torchtune.modules.peft import get_adapter_params, set_trainable_params  # noqa: E402

IGNORE = -100

# --------------------------------------------------------------------------
# Case matrix
# --------------------------------------------------------------------------

# head_dim 64; every linear's numel is a multiple of 64*256 so NF4 (block 64, scaler block 256) works.
MODEL = {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 768, "vocab": 4000,
         "tied_embeddings": False, "max_positions": 512}
ROPE_BASE = 500_000
NORM_EPS = 1e-5
LORA_ALPHA = 16.0
LR = 3e-4
WD = 0.01

BASE = {"framework": "torchtune", "model": MODEL, "seq_len": 256, "micro_batch": 2, "grad_accum": 1,
        "precision": "bf16-true", "optimizer": "adamw", "optimizer_impl": "single-tensor",
        "finetune": "full", "loss": "chunked", "loss_chunks": 8, "optimizer_in_backward": False,
        "checkpointing": "none", "adapter_dtype": "base", "attention": "flash", "strategy": "single",
        "gpus": 1, "gpu": {"name": "cpu", "memory_gib": 1000}, "device": "cpu"}

QV = ["q_proj", "v_proj"]
ALL = ["q_proj", "k_proj", "v_proj", "output_proj", "w1", "w2", "w3"]

CASES = []


def _case(name, **kw):
    cfg = copy.deepcopy(BASE)
    cfg.update(kw)
    if cfg["loss"] != "chunked":
        cfg.pop("loss_chunks", None)
    if cfg["finetune"] == "full":
        cfg.pop("adapter_dtype", None)
    CASES.append({"name": name, "config": cfg})


def _lora(method, targets):
    return {"method": method, "rank": 8, "targets": list(targets)}


_case("full_chunked8")
_case("full_plain_ce", loss="full")
_case("full_chunked8_optim_in_bwd", optimizer_in_backward=True)
_case("full_chunked8_ac", checkpointing="full")
_case("full_chunked8_optim_in_bwd_ac", optimizer_in_backward=True, checkpointing="full")
_case("lora_qv_chunked8", finetune=_lora("lora", QV))
_case("lora_all_chunked8", finetune=_lora("lora", ALL))
_case("lora_all_chunked8_ac", finetune=_lora("lora", ALL), checkpointing="full")
_case("qlora_qv_chunked8", finetune=_lora("qlora", QV))
_case("qlora_all_chunked8", finetune=_lora("qlora", ALL))
_case("qlora_all_chunked8_ac", finetune=_lora("qlora", ALL), checkpointing="full")
# sweeps: per-token terms and the chunk count
_case("full_chunked8_s128", seq_len=128)
_case("full_chunked8_optim_in_bwd_s128", seq_len=128, optimizer_in_backward=True)
_case("full_plain_ce_s128", loss="full", seq_len=128)
_case("full_chunked8_b4_s128", seq_len=128, micro_batch=4)
_case("full_chunked1", loss_chunks=1)
_case("lora_qv_plain_ce", finetune=_lora("lora", QV), loss="full")
# few tokens: the peak moves to the optimizer step, where optimizer_in_bwd removes the gradients
_case("full_chunked8_b1_s32", seq_len=32, micro_batch=1)
_case("full_chunked8_optim_in_bwd_b1_s32", seq_len=32, micro_batch=1, optimizer_in_backward=True)


# --------------------------------------------------------------------------
# Model, loss, optimizer (as the recipes build them)
# --------------------------------------------------------------------------

def build(case):
    cfg = case["config"]
    m = cfg["model"]
    arch = dict(vocab_size=m["vocab"], num_layers=m["layers"], num_heads=m["heads"], num_kv_heads=m["kv_heads"],
                embed_dim=m["hidden"], max_seq_len=m["max_positions"], intermediate_dim=m["ffn"],
                rope_base=ROPE_BASE, norm_eps=NORM_EPS)
    ft = cfg["finetune"]
    torch.manual_seed(0)
    with training.set_default_dtype(torch.bfloat16):
        if ft == "full":
            model = llama3(**arch)
        else:
            attn = [t for t in ft["targets"] if t in ("q_proj", "k_proj", "v_proj", "output_proj")]
            mlp = any(t in ("w1", "w2", "w3") for t in ft["targets"])
            if mlp:
                assert all(t in ft["targets"] for t in ("w1", "w2", "w3")), "apply_lora_to_mlp is all of w1/w2/w3"
            model = lora_llama3(lora_attn_modules=attn, apply_lora_to_mlp=mlp, apply_lora_to_output=False,
                                lora_rank=ft["rank"], lora_alpha=LORA_ALPHA, lora_dropout=0.0,
                                quantize_base=(ft["method"] == "qlora"), **arch)
    if ft != "full":
        adapter_params = get_adapter_params(model)
        set_trainable_params(model, adapter_params)
    if cfg["checkpointing"] == "full":
        training.set_activation_checkpointing(model, auto_wrap_policy={modules.TransformerSelfAttentionLayer})
    if ft == "full":
        training.validate_expected_param_dtype(model.named_parameters(), dtype=torch.bfloat16)
    else:
        training.validate_expected_param_dtype(adapter_params.items(), dtype=torch.bfloat16)
    if cfg["loss"] == "chunked":
        loss_fn = CEWithChunkedOutputLoss(num_output_chunks=cfg["loss_chunks"], ignore_index=IGNORE)
        model.set_num_output_chunks(loss_fn.num_output_chunks)
    else:
        loss_fn = nn.CrossEntropyLoss(ignore_index=IGNORE)
    model.train()
    return model, loss_fn


def make_optimizer(model, cfg):
    mk = lambda ps: torch.optim.AdamW(ps, lr=LR, weight_decay=WD, foreach=False)  # noqa: E731
    if cfg["optimizer_in_backward"]:
        optim_dict = {p: mk([p]) for p in model.parameters()}
        training.register_optim_in_bwd_hooks(model=model, optim_dict=optim_dict)
        return None, list(optim_dict.values())
    opt = mk(model.parameters())
    return opt, [opt]


def make_batch(case):
    cfg = case["config"]
    g = torch.Generator().manual_seed(1)
    b, s = cfg["micro_batch"], cfg["seq_len"]
    tokens = torch.randint(0, cfg["model"]["vocab"], (b, s), generator=g)
    labels = tokens.clone()
    ignore_labels_cache = torch.full((b, 1), IGNORE)  # recipe: torch.full((batch_size, 1), ignore_index)
    return tokens, labels, ignore_labels_cache


# --------------------------------------------------------------------------
# Accounting helpers (measure_hf.py's, extended to tensor subclasses such as NF4Tensor)
# --------------------------------------------------------------------------

def _storages(t):
    """[(ptr, nbytes)] of the storages behind t (inner tensors of a wrapper subclass)."""
    if hasattr(t, "__tensor_flatten__") and type(t) not in (torch.Tensor, nn.Parameter):
        attrs, _ = t.__tensor_flatten__()
        out = []
        for a in attrs:
            out += _storages(getattr(t, a))
        return out
    st = t.untyped_storage()
    return [(st.data_ptr(), st.nbytes())]


def _is_plain(t):
    return not (hasattr(t, "__tensor_flatten__") and type(t) not in (torch.Tensor, nn.Parameter))


def live_tensor_bytes(tensors):
    return _live_tensor_bytes(tensors, _storages)


def persistent_tensors(model, opts, batch):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    for opt in opts:
        for st in opt.state.values():
            ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    return ts + list(batch)


def persistent_ptrs_of(ts):
    out = set()
    for t in ts:
        if isinstance(t, torch.Tensor):
            out |= {p for p, _ in _storages(t)}
    return out


def step_counter_bytes(opts):
    n = 0
    for opt in opts:
        for st in opt.state.values():
            v = st.get("step")
            if isinstance(v, torch.Tensor):
                n += v.numel() * v.element_size()
    return n


def param_bytes(model):
    """bytes of the parameters by kind: trainable, frozen plain, frozen NF4 (inner tensors)."""
    out = defaultdict(int)
    for p in {id(p): p for p in model.parameters()}.values():
        nb = sum(n for _, n in _storages(p))
        kind = "trainable" if p.requires_grad else ("frozen_nf4" if not _is_plain(p) else "frozen")
        out[kind] += nb
    return dict(out)


# --------------------------------------------------------------------------
# Saved-tensor tracer
# --------------------------------------------------------------------------

class SavedTracer:
    """Records every storage saved for backward during the measured forward, by region."""

    def __init__(self, model, checkpointed=False):
        self.region = "embed"
        self.checkpointed = checkpointed
        self.active = False
        self.records = OrderedDict()
        self.dead = []
        self.handles = []
        self.n_layers = len(model.layers)
        self.stop_nodes = set()  # grad_fns of checkpointed layers' outputs: walk() must not read past them
        for i, layer in enumerate(model.layers):
            self.handles.append(layer.register_forward_pre_hook(self._set("layer%d" % i, suspend=True)))
            self.handles.append(layer.register_forward_hook(self._set_after("after_layer", resume=True)))
        self.handles.append(model.norm.register_forward_pre_hook(self._set("final_norm")))
        self.handles.append(model.output.register_forward_pre_hook(self._set("output")))

    # Under activation checkpointing the tracer's hooks are taken off the hook stack while a
    # (checkpointed) layer runs: torch.utils.checkpoint's own hooks must be the only ones there, or
    # the layers get recomputed many times in the backward (seen: 82 recomputations, +550 MB).
    def _set(self, name, suspend=False):
        def f(mod, args):
            self.region = name
            if suspend and self.checkpointed and self.active:
                torch._C._autograd._pop_saved_tensors_default_hooks()
        return f

    def _set_after(self, name, resume=False):
        def f(mod, args, out):
            self.region = name
            if resume and self.checkpointed and self.active:
                torch._C._autograd._push_saved_tensors_default_hooks(self.pack, self.unpack)
                if isinstance(out, torch.Tensor) and out.grad_fn is not None:
                    self.stop_nodes.add(out.grad_fn)
        return f

    @staticmethod
    def unpack(x):
        return x

    def pack(self, t):
        if not _is_plain(t):  # NF4 weight (a parameter): note it, keep the object itself
            for ptr, nb in _storages(t):
                self._note(ptr, nb, t, None)
            return t
        ptr, nb = _storages(t)[0]
        d = t.detach()
        self._note(ptr, nb, t, d)
        return d

    def _note(self, ptr, nb, t, d):
        r = self.records.get(ptr)
        if r is None or not any(w() is not None for w in r["refs"]) and r["refs"]:
            if r is not None:
                self.dead.append(r)
            r = self.records[ptr] = {"shape": tuple(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                                     "nbytes": nb, "producer": t.grad_fn.name() if t.grad_fn is not None else
                                     ("param/leaf" if t.requires_grad else "no-grad"),
                                     "region": self.region, "keepers": [], "refs": [], "sub": type(t).__name__}
            self.records.move_to_end(ptr)
        if d is not None:
            r["refs"].append(weakref.ref(d))

    @contextlib.contextmanager
    def hooks(self):
        torch._C._autograd._push_saved_tensors_default_hooks(self.pack, self.unpack)
        self.active = True
        try:
            yield
        finally:
            self.active = False
            torch._C._autograd._pop_saved_tensors_default_hooks()

    def walk(self, loss):
        for ptr in list(self.records):
            r = self.records[ptr]
            if r["refs"] and not any(w() is not None for w in r["refs"]):
                self.dead.append(self.records.pop(ptr))
        seen, stack = set(), [loss.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            if fn in self.stop_nodes:
                # reading a saved tensor of a checkpointed region unpacks it, which recomputes the
                # layer and keeps the recomputed activations alive until the backward
                continue
            vals = []
            for attr in dir(fn):
                if attr.startswith("_saved_"):
                    try:
                        vals.append((attr[7:], getattr(fn, attr)))
                    except Exception:
                        pass
            if hasattr(fn, "saved_tensors") and not any(a.startswith("_saved_") for a in dir(fn)):
                try:
                    for j, t in enumerate(fn.saved_tensors):
                        vals.append(("saved[%d]" % j, t))
                except Exception:
                    pass
            for attr, v in vals:
                items = v if isinstance(v, (list, tuple)) else [v]
                for t in items:
                    if isinstance(t, torch.Tensor):
                        for ptr, _ in _storages(t):
                            if ptr in self.records:
                                self.records[ptr]["keepers"].append("%s.%s" % (fn.name(), attr))
            for nxt, _ in fn.next_functions:
                if nxt is not None:
                    stack.append(nxt)

    def remove(self):
        for h in self.handles:
            h.remove()


# --------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------

def run_case(case, steps=3, trace=True, out=None):
    from torch.profiler import profile, ProfilerActivity, record_function
    cfg = case["config"]
    tracer = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("setup"):
            model, loss_fn = build(case)
            opt, opts = make_optimizer(model, cfg)
            batch = make_batch(case)
            tokens, labels0, ignore_labels_cache = batch
        torch.manual_seed(2)
        for i in range(steps):
            gc.collect()
            last = i == steps - 1
            if last:
                pers = persistent_tensors(model, opts, batch)
                step_start = live_tensor_bytes(pers)
                persistent_ptrs = persistent_ptrs_of(pers)
                if trace:
                    tracer = SavedTracer(model, checkpointed=cfg["checkpointing"] != "none")
            hooks = tracer.hooks() if (trace and last) else contextlib.nullcontext()
            with record_function("step%d" % i):
                with record_function("phase:forward"):
                    labels = labels0
                    current_num_tokens = (labels != IGNORE).sum()
                    num_tokens = current_num_tokens
                    with hooks:
                        # ---- _loss_step ----
                        logits = model(tokens)  # activations_handling_ctx: nullcontext (no offloading)
                        if tracer is not None:
                            tracer.region = "loss"
                        lab = torch.hstack((labels[..., 1:], ignore_labels_cache[: labels.shape[0]]))
                        if not isinstance(logits, list):
                            lab = lab.reshape(-1)
                            logits = logits.reshape(-1, logits.size(-1))
                        loss = loss_fn(logits, lab)
                        del logits
                        # ---- train() ----
                        current_loss = loss * current_num_tokens
                    del loss, lab
                    running_loss = 0
                    running_loss += current_loss
                if trace and last:
                    tracer.walk(current_loss)
                with record_function("phase:backward"):
                    current_loss.backward()
                with record_function("phase:optimizer"):
                    if opt is not None:
                        training.scale_grads(model, 1 / num_tokens)
                        opt.step()
                        opt.zero_grad(set_to_none=True)
                loss_to_log = running_loss.item() / num_tokens
            if last:
                end_bytes = live_tensor_bytes(persistent_tensors(model, opts, batch) +
                                              [current_loss, running_loss, num_tokens, loss_to_log])
                loss_value = float(loss_to_log)
            del current_loss, running_loss, num_tokens, current_num_tokens, loss_to_log
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    t0, t1 = step_node.start_time_ns, step_node.end_time_ns
    in_step, live0, cum_at_start, cum = step_window(allocs, t0, t1)
    if cum_at_start is None:
        cum_at_start = cum
    cur, peak, peak_i, phase_peak, phase_op, phase_end, _ = step_peaks(in_step, ("forward", "backward", "optimizer"))
    pk = in_step[peak_i]
    # optimizer.step() wherever it runs (inside the backward under optimizer_in_bwd)
    cur2, ostep_peak, ostep_op, n_steps_seen = 0, None, None, 0
    for n in in_step:
        cur2 += n.extra_fields.alloc_size
        if any(a.name.startswith("Optimizer.step#") for a in _ancestors(n)):
            if ostep_peak is None or cur2 > ostep_peak:
                ostep_peak, ostep_op = cur2, n
    tot, tr = count_params(model)
    cfgm = cfg
    b, s = cfgm["micro_batch"], cfgm["seq_len"]
    measured = OrderedDict([
        ("peak_allocated_bytes", step_start + peak),
        ("step_start_bytes", step_start),
        ("forward_peak_bytes", step_start + phase_peak["forward"]),
        ("backward_peak_bytes", step_start + phase_peak["backward"]),
        ("optimizer_peak_bytes", step_start + phase_peak["optimizer"]),
        ("after_forward_bytes", step_start + phase_end.get("forward", 0)),
        ("after_backward_bytes", step_start + phase_end.get("backward", 0)),
        ("optimizer_step_peak_bytes", None if ostep_peak is None else step_start + ostep_peak),
        ("optimizer_step_peak_op", _opname(ostep_op)),
        ("forward_peak_op", _opname(phase_op.get("forward"))),
        ("backward_peak_op", _opname(phase_op.get("backward"))),
        ("optimizer_peak_op", _opname(phase_op.get("optimizer"))),
        ("peak_phase", _describe(pk)[0]),
        ("peak_op", _opname(pk)),
        ("params_total", tot),
        ("params_trainable", tr),
        ("param_bytes", param_bytes(model)),
        ("optimizer_state_bytes", live_tensor_bytes(
            [v for o in opts for st in o.state.values() for k, v in st.items()
             if isinstance(v, torch.Tensor) and k != "step"])),
        ("optimizer_step_counter_bytes", step_counter_bytes(opts)),
        ("buffer_bytes", live_tensor_bytes(list(model.buffers()))),
        ("batch_bytes", live_tensor_bytes(list(batch))),
        ("loss", round(loss_value, 6)),
    ])
    if tracer is not None:
        per_region = defaultdict(int)
        for p, r in tracer.records.items():
            if p not in persistent_ptrs:
                per_region[r["region"]] += r["nbytes"]
        measured["saved_bytes_by_region"] = OrderedDict(
            sorted(per_region.items(), key=lambda kv: _region_key(kv[0])))
        logit_b = per_region.get("output", 0) + per_region.get("loss", 0)
        measured["saved_output_plus_loss_bytes_per_token"] = logit_b / (b * s)
    check = {"profiler_step_start_bytes": cum_at_start, "step_net_bytes": cur,
             "tensor_end_minus_start": end_bytes - step_start}
    extra = [(n.extra_fields.alloc_size, " < ".join(a.name for a in _ancestors(n))[:200])
             for p, n in live0.items() if p not in persistent_ptrs]
    if extra:
        check["unaccounted_at_start"] = extra
    if tracer is not None:
        if out is not None:
            print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out)
        tracer.remove()
    return measured, check


def _region_key(r):
    order = {"embed": (0, 0), "final_norm": (2, 0), "output": (3, 0), "loss": (4, 0), "after_layer": (5, 0)}
    if r.startswith("layer"):
        return (1, int(r[5:]))
    return order.get(r, (9, 0))


TRACE_LEGEND = """\
tests/validation/stacks/torchtune/measure.py   (torch %s, torchtune %s, torchao %s, CPU)
Regenerate: see tests/validation/stacks/torchtune/README.md.
Per case:
  header      peak = step_start + rise, [phase: op (autograd node)] at the peak; phase peaks; after_fwd =
              live bytes when the forward phase ended (logits deleted, current_loss kept).
  live at the peak   every block allocated during the measured step and still alive at the peak, grouped by
              (phase, autograd node that was running, innermost aten op that allocated it): total bytes,
              count, then dtype(shape) when the block is the storage of a tensor saved for backward
              (shape of the saved view), else its size in bytes.
  saved-for-backward every storage saved by autograd during the measured forward (saved_tensors_hooks,
              deduplicated by storage; parameters, buffers -- e.g. the fp32 RoPE cache --, and the batch
              are excluded), per region (embed, layerN, final_norm, output = lm_head over every chunk,
              loss), then the full list for the LAST decoder layer and for the regions outside the layers
              in forward order:
                storage bytes, dtype, shape of the saved view <- grad_fn that produced it ;
                autograd node.attribute(s) that keep it  (saved[i] = custom autograd.Function)
              and, for every other layer, only the lines that differ from the last layer.
              Under activation checkpointing torch.utils.checkpoint's own hooks take over inside each
              layer: nothing is listed there (its saved inputs are kept by the checkpoint frame, and show
              up in the live set).
"""


def print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    rec = tracer.records
    groups = live_groups(in_step, peak_i, rec)
    c = case["config"]
    P("=" * 110)
    P("=== %s  (B=%d S=%d finetune=%s loss=%s%s oib=%s ckpt=%s)  peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], c["micro_batch"], c["seq_len"],
        c["finetune"] if c["finetune"] == "full" else "%s r%d %s" % (c["finetune"]["method"], c["finetune"]["rank"],
                                                                  "/".join(c["finetune"]["targets"])),
        c["loss"], "(%d)" % c["loss_chunks"] if c["loss"] == "chunked" else "", c["optimizer_in_backward"],
        c["checkpointing"], measured["peak_allocated_bytes"], step_start,
        measured["peak_allocated_bytes"] - step_start, measured["peak_phase"], measured["peak_op"]))
    P("  fwd_peak=%d (%s)  after_fwd=%d" % (measured["forward_peak_bytes"], measured["forward_peak_op"],
                                            measured["after_forward_bytes"]))
    P("  bwd_peak=%d (%s)" % (measured["backward_peak_bytes"], measured["backward_peak_op"]))
    P("  after_bwd=%d  opt_phase_peak=%d (%s)" % (measured["after_backward_bytes"], measured["optimizer_peak_bytes"],
                                                 measured["optimizer_peak_op"]))
    P("  optimizer.step() peak (wherever it runs) = %s (%s)" % (measured["optimizer_step_peak_bytes"],
                                                              measured["optimizer_step_peak_op"]))
    P("  params %d (trainable %d), param bytes %s, optimizer states %d B, step counters %d B, buffers %d B, "
      "batch %d B" % (measured["params_total"], measured["params_trainable"], dict(measured["param_bytes"]),
                      measured["optimizer_state_bytes"], measured["optimizer_step_counter_bytes"],
                      measured["buffer_bytes"], measured["batch_bytes"]))
    P("  -- live at the peak (allocated during the step), by phase / autograd node / op:")
    print_groups(P, groups, (9, 40, 30))
    items = [(p, r) for p, r in rec.items() if p not in persistent_ptrs]
    per_region = measured.get("saved_bytes_by_region", {})
    P("  -- saved-for-backward storages (non-persistent, unique storages): total %d B; per region: %s" % (
        sum(per_region.values()), ", ".join("%s=%d" % kv for kv in per_region.items())))
    persist = [r for p, r in rec.items() if p in persistent_ptrs]
    P("     (%d saved storages are parameters/buffers/batch, not counted: %s; %d storages (%d B) were saved by "
      "autograd nodes that died during the forward, not listed)" % (
          len(persist), ", ".join(sorted({"%s %s%s" % (r["sub"], r["dtype"], _fmt_shape(r["shape"]))
                                          for r in persist}))[:400],
          len(tracer.dead), sum(r["nbytes"] for r in tracer.dead)))
    target = "layer%d" % (tracer.n_layers - 1)

    def line(r):
        keep = ",".join(sorted(set(r["keepers"]))) or "?"
        return "%9d %-9s %-20s <- %-28s ; %s" % (r["nbytes"], r["dtype"], _fmt_shape(r["shape"]),
                                                 r["producer"], keep)

    by_region = defaultdict(list)
    for p, r in items:
        by_region[r["region"]].append(line(r))
    titles = [("embedding", "embed"), ("decoder %s (the last)" % target, target), ("the final norm", "final_norm"),
              ("the output projection (all chunks)", "output"), ("the loss", "loss")]
    for title, reg in titles:
        lst = by_region.get(reg, [])
        P("  -- saved by %s: %d B%s" % (title, per_region.get(reg, 0), "" if lst else " (nothing)"))
        # collapse identical lines (chunks)
        cnt = OrderedDict()
        for ln in lst:
            cnt[ln] = cnt.get(ln, 0) + 1
        for ln, k in cnt.items():
            P("     " + ln + ("  x%d" % k if k > 1 else ""))
    ref = defaultdict(int)
    for ln in by_region.get(target, []):
        ref[ln] += 1
    for k in range(tracer.n_layers - 1):
        reg = "layer%d" % k
        cnt = defaultdict(int)
        for ln in by_region.get(reg, []):
            cnt[ln] += 1
        plus = [(ln, cnt[ln] - ref.get(ln, 0)) for ln in cnt if cnt[ln] > ref.get(ln, 0)]
        minus = [(ln, ref[ln] - cnt.get(ln, 0)) for ln in ref if ref[ln] > cnt.get(ln, 0)]
        if not plus and not minus:
            P("  -- %s saves the same as %s" % (reg, target))
            continue
        P("  -- %s differs from %s: + saved only here, - saved only there (xN = N times)" % (reg, target))
        for sign, lst in (("+", plus), ("-", minus)):
            for ln, n in lst:
                P("   %s %s%s" % (sign, ln, "  x%d" % n if n > 1 else ""))


# --------------------------------------------------------------------------

def versions():
    import importlib.metadata as md
    v = OrderedDict()
    for k in ("torch", "torchtune", "torchao", "numpy"):
        try:
            v[k] = md.version(k)
        except Exception:
            v[k] = None
    v["python"] = sys.version.split()[0]
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--trace-out", default=None, help="write the trace here (default: not printed)")
    ap.add_argument("--no-trace", action="store_true", help="run without the saved-tensor hooks (check)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    cases = [c for c in CASES if not args.only or any(o == c["name"] or o in c["name"] for o in args.only)]
    vers = versions()
    tout = open(args.trace_out, "w") if args.trace_out else None
    if tout:
        print(TRACE_LEGEND % (torch.__version__, vers["torchtune"], vers["torchao"]), file=tout)
    records, failures = [], []
    t_all = time.time()
    for c in cases:
        t = time.time()
        try:
            measured, check = run_case(c, steps=args.steps, trace=not args.no_trace, out=tout)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            msg = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            failures.append((c["name"], msg))
            print("%-32s FAILED %s" % (c["name"], msg), flush=True)
            continue
        if check["profiler_step_start_bytes"] != measured["step_start_bytes"] or \
                check["step_net_bytes"] != check["tensor_end_minus_start"]:
            print("WARNING %s: accounting mismatch %r vs step_start %d" %
                  (c["name"], check, measured["step_start_bytes"]), file=sys.stderr)
        rec = OrderedDict([("name", c["name"]), ("config", c["config"]), ("measured", measured),
                           ("torchtune", {"recipe": "lora_finetune_single_device" if c["config"]["finetune"] != "full"
                                          else "full_finetune_single_device",
                                          "builder": "llama3" if c["config"]["finetune"] == "full" else
                                          "lora_llama3(quantize_base=%s)" % (
                                              c["config"]["finetune"]["method"] == "qlora"),
                                          "dtype": "bf16", "rope_base": ROPE_BASE, "norm_eps": NORM_EPS,
                                          "lora_alpha": LORA_ALPHA, "lora_dropout": 0.0,
                                          "loss_fn": "CEWithChunkedOutputLoss" if c["config"]["loss"] == "chunked"
                                          else "torch.nn.CrossEntropyLoss",
                                          "adamw": {"lr": LR, "weight_decay": WD, "foreach": False},
                                          "enable_activation_offloading": False, "compile": False}),
                           ("check", check), ("versions", vers), ("device", "cpu"), ("torch", torch.__version__),
                           ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])
        records.append(rec)
        m = measured
        print("%-32s peak=%10d start=%9d fwd=%10d bwd=%10d opt=%10d %-8s %s (%.1fs)" % (
            c["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m["forward_peak_bytes"],
            m["backward_peak_bytes"], m["optimizer_peak_bytes"], m["peak_phase"], m["peak_op"],
            time.time() - t), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    if tout:
        tout.close()
    print("total %.1fs, %d cases, %d failed" % (time.time() - t_all, len(records), len(failures)),
          file=sys.stderr)
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)


if __name__ == "__main__":
    main()
